/* mel.c - Whisper's log-mel spectrogram.
 *
 * Per frame: 400 windowed samples -> real FFT (a 200-point complex FFT of the
 * even/odd samples packed as re/im, mixed radix 4*2*5*5, in double) -> power
 * of bins 0..200 -> mel filters (stored sparse: each triangle covers a few
 * bins) -> log10. The filters are built as librosa.filters.mel(sr=16000,
 * n_fft=400, htk=False, norm="slaney") builds them, including its float32
 * rounding steps, so they equal OpenAI's mel_filters.npz.
 */
#include "audio/mel.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>

#define N_BINS (MEL_N_FFT / 2 + 1)   /* 201 */
#define N_HALF (MEL_N_FFT / 2)       /* 200: size of the complex FFT */
#define MAX_FACTORS 8

typedef struct { double re, im; } cplx;

struct mel_ctx {
    int n_mels;
    float *filters;            /* [n_mels, N_BINS], as librosa (float32) */
    double *fw;                /* [n_mels, N_BINS] the same values in double */
    int *lo, *hi;              /* [n_mels] nonzero bins of each filter: [lo, hi) */
    double window[MEL_N_FFT];  /* periodic Hann */
    cplx tw[N_HALF];           /* exp(-2 pi i k / N_HALF) */
    cplx rtw[N_HALF + 1];      /* exp(-2 pi i k / MEL_N_FFT), for the real split */
    int factors[MAX_FACTORS];  /* radices of N_HALF, outermost first */
    int n_factors;
};

/* ---- mel scale (Slaney, as librosa with htk=False) ---------------------- */

static const double F_SP = 200.0 / 3;        /* Hz per mel below 1 kHz */
static const double MIN_LOG_HZ = 1000.0;
static const double MIN_LOG_MEL = 15.0;      /* MIN_LOG_HZ / F_SP */

static double log_step(void) { return log(6.4) / 27.0; }

static double hz_to_mel(double hz) {
    if (hz >= MIN_LOG_HZ) return MIN_LOG_MEL + log(hz / MIN_LOG_HZ) / log_step();
    return hz / F_SP;
}

static double mel_to_hz(double mel) {
    if (mel >= MIN_LOG_MEL) return MIN_LOG_HZ * exp(log_step() * (mel - MIN_LOG_MEL));
    return F_SP * mel;
}

/* Triangles between n_mels + 2 points evenly spaced in mel from 0 to
 * sr / 2, each scaled by 2 / (its width in Hz) (Slaney normalisation).
 * librosa keeps the weights in float32: the triangle is rounded to float
 * before the normalisation, and the product is rounded again. */
static encdec_status mel_build_filters(mel_ctx *m) {
    int n = m->n_mels;
    double *mel_f = ed_alloc((size_t)(n + 2) * sizeof *mel_f, "mel points");
    if (!mel_f) return ENCDEC_ERR_NOMEM;
    double mel_max = hz_to_mel(MEL_SAMPLE_RATE / 2.0);
    double step = mel_max / (n + 1);             /* np.linspace(0, mel_max, n + 2) */
    for (int i = 0; i < n + 2; i++) mel_f[i] = mel_to_hz(i * step);
    mel_f[n + 1] = mel_to_hz(mel_max);
    double bin_hz = 1.0 / (MEL_N_FFT * (1.0 / MEL_SAMPLE_RATE));   /* np.fft.rfftfreq */

    for (int i = 0; i < n; i++) {
        double d_lo = mel_f[i + 1] - mel_f[i], d_hi = mel_f[i + 2] - mel_f[i + 1];
        double enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        m->lo[i] = N_BINS;
        m->hi[i] = 0;
        for (int b = 0; b < N_BINS; b++) {
            double f = b * bin_hz;
            double lower = -(mel_f[i] - f) / d_lo, upper = (mel_f[i + 2] - f) / d_hi;
            double w = fmax(0.0, fmin(lower, upper));
            float v = (float)((double)(float)w * enorm);
            m->filters[(size_t)i * N_BINS + b] = v;
            m->fw[(size_t)i * N_BINS + b] = v;
            if (v != 0.0f) {
                if (b < m->lo[i]) m->lo[i] = b;
                m->hi[i] = b + 1;
            }
        }
        if (m->hi[i] == 0) m->lo[i] = 0;   /* an empty filter: no bins */
    }
    free(mel_f);
    return ENCDEC_OK;
}

/* ---- FFT ---------------------------------------------------------------- */

/* Out-of-place decimation in time: out[0, n) = DFT of in[0], in[stride], ...
 * The twiddle table is for N_HALF points; n divides N_HALF. */
static void fft_rec(const mel_ctx *m, cplx *out, const cplx *in, int stride, int n,
                    const int *factors) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int p = factors[0], sub = n / p;
    for (int q = 0; q < p; q++) fft_rec(m, out + q * sub, in + q * stride, stride * p, sub, factors + 1);

    int tstep = N_HALF / n;            /* W_n^j = tw[j * tstep] */
    for (int k = 0; k < sub; k++) {
        cplx t[5];
        t[0] = out[k];
        for (int q = 1; q < p; q++) {  /* twiddled inputs: Y_q[k] * W_n^(q k) */
            cplx y = out[q * sub + k], w = m->tw[q * k * tstep];
            t[q].re = y.re * w.re - y.im * w.im;
            t[q].im = y.re * w.im + y.im * w.re;
        }
        if (p == 2) {
            out[k].re = t[0].re + t[1].re;        out[k].im = t[0].im + t[1].im;
            out[sub + k].re = t[0].re - t[1].re;  out[sub + k].im = t[0].im - t[1].im;
        } else if (p == 4) {
            double a0r = t[0].re + t[2].re, a0i = t[0].im + t[2].im;
            double a1r = t[0].re - t[2].re, a1i = t[0].im - t[2].im;
            double b0r = t[1].re + t[3].re, b0i = t[1].im + t[3].im;
            double b1r = t[1].re - t[3].re, b1i = t[1].im - t[3].im;
            out[k].re = a0r + b0r;            out[k].im = a0i + b0i;
            out[sub + k].re = a1r + b1i;      out[sub + k].im = a1i - b1r;   /* -i */
            out[2 * sub + k].re = a0r - b0r;  out[2 * sub + k].im = a0i - b0i;
            out[3 * sub + k].re = a1r - b1i;  out[3 * sub + k].im = a1i + b1r;
        } else {                              /* radix 5 */
            static const double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;
            static const double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;
            double a1r = t[1].re + t[4].re, a1i = t[1].im + t[4].im;
            double b1r = t[1].re - t[4].re, b1i = t[1].im - t[4].im;
            double a2r = t[2].re + t[3].re, a2i = t[2].im + t[3].im;
            double b2r = t[2].re - t[3].re, b2i = t[2].im - t[3].im;
            /* X1,4 = A1 -+ i B1 and X2,3 = A2 -+ i B2 */
            double A1r = t[0].re + c1 * a1r + c2 * a2r, A1i = t[0].im + c1 * a1i + c2 * a2i;
            double A2r = t[0].re + c2 * a1r + c1 * a2r, A2i = t[0].im + c2 * a1i + c1 * a2i;
            double B1r = s1 * b1r + s2 * b2r, B1i = s1 * b1i + s2 * b2i;
            double B2r = s2 * b1r - s1 * b2r, B2i = s2 * b1i - s1 * b2i;
            out[k].re = t[0].re + a1r + a2r;      out[k].im = t[0].im + a1i + a2i;
            out[sub + k].re = A1r + B1i;          out[sub + k].im = A1i - B1r;
            out[4 * sub + k].re = A1r - B1i;      out[4 * sub + k].im = A1i + B1r;
            out[2 * sub + k].re = A2r + B2i;      out[2 * sub + k].im = A2i - B2r;
            out[3 * sub + k].re = A2r - B2i;      out[3 * sub + k].im = A2i + B2r;
        }
    }
}

/* power[0, N_BINS) = |DFT(x)|^2 for real x[0, MEL_N_FFT). */
static void power_spectrum(const mel_ctx *m, const double *x, double *power) {
    cplx z[N_HALF], Z[N_HALF];
    for (int i = 0; i < N_HALF; i++) {
        z[i].re = x[2 * i];
        z[i].im = x[2 * i + 1];
    }
    fft_rec(m, Z, z, 1, N_HALF, m->factors);
    /* X[k] = E[k] + W_400^k O[k], with E, O the DFTs of the even and odd
     * samples: E[k] = (Z[k] + conj Z[N-k]) / 2, O[k] = (Z[k] - conj Z[N-k]) / 2i. */
    for (int k = 0; k <= N_HALF; k++) {
        cplx a = Z[k % N_HALF], b = Z[(N_HALF - k) % N_HALF];
        double er = 0.5 * (a.re + b.re), ei = 0.5 * (a.im - b.im);
        double or_ = 0.5 * (a.im + b.im), oi = -0.5 * (a.re - b.re);
        cplx w = m->rtw[k];
        double xr = er + or_ * w.re - oi * w.im;
        double xi = ei + or_ * w.im + oi * w.re;
        power[k] = xr * xr + xi * xi;
    }
}

/* ---- public ------------------------------------------------------------- */

mel_ctx *mel_new(int n_mels) {
    if (n_mels != 80 && n_mels != 128) {
        ed_fail(ENCDEC_ERR_ARG, "mel: n_mels is %d; Whisper uses 80 or 128", n_mels);
        return NULL;
    }
    mel_ctx *m = ed_calloc(sizeof *m, "mel context");
    if (!m) return NULL;
    m->n_mels = n_mels;
    size_t nf = (size_t)n_mels * N_BINS;
    m->filters = ed_alloc(nf * sizeof *m->filters, "mel filters");
    m->fw = ed_alloc(nf * sizeof *m->fw, "mel filters");
    m->lo = ed_alloc((size_t)n_mels * sizeof *m->lo, "mel filter ranges");
    m->hi = ed_alloc((size_t)n_mels * sizeof *m->hi, "mel filter ranges");
    if (!m->filters || !m->fw || !m->lo || !m->hi || mel_build_filters(m) != ENCDEC_OK) {
        mel_free(m);
        return NULL;
    }
    const double two_pi = 6.283185307179586476925;
    for (int i = 0; i < MEL_N_FFT; i++) m->window[i] = 0.5 - 0.5 * cos(two_pi * i / MEL_N_FFT);
    for (int k = 0; k < N_HALF; k++) {
        m->tw[k].re = cos(two_pi * k / N_HALF);
        m->tw[k].im = -sin(two_pi * k / N_HALF);
    }
    for (int k = 0; k <= N_HALF; k++) {
        m->rtw[k].re = cos(two_pi * k / MEL_N_FFT);
        m->rtw[k].im = -sin(two_pi * k / MEL_N_FFT);
    }
    static const int radices[] = {4, 2, 5};  /* 200 = 4 * 2 * 5 * 5 */
    int rest = N_HALF;
    for (int r = 0; r < 3; r++)
        while (rest % radices[r] == 0) {
            m->factors[m->n_factors++] = radices[r];
            rest /= radices[r];
        }
    return m;
}

void mel_free(mel_ctx *m) {
    if (!m) return;
    free(m->filters);
    free(m->fw);
    free(m->lo);
    free(m->hi);
    free(m);
}

const float *mel_filters(const mel_ctx *m) { return m ? m->filters : NULL; }

/* The padded signal seen by the STFT: pcm cut or zero-padded to len samples,
 * then reflected (without repeating the edge) beyond both ends. */
static double padded_at(const float *pcm, size_t n, size_t len, long long i) {
    long long period = 2 * ((long long)len - 1);
    if (i < 0 || i >= (long long)len) {
        i %= period;
        if (i < 0) i += period;
        if (i >= (long long)len) i = period - i;
    }
    return (size_t)i < n ? pcm[i] : 0.0;
}

/* Frame t's log10 mel energies from its windowed samples x into
 * out[k * ld + col]; returns the largest. */
static double frame_log(const mel_ctx *m, const double *x, float *out, size_t ld, size_t col) {
    double power[N_BINS], mx = -HUGE_VAL;
    power_spectrum(m, x, power);
    for (int k = 0; k < m->n_mels; k++) {
        const double *w = m->fw + (size_t)k * N_BINS;
        double acc = 0;
        for (int b = m->lo[k]; b < m->hi[k]; b++) acc += w[b] * power[b];
        double v = log10(acc > 1e-10 ? acc : 1e-10);
        if (v > mx) mx = v;
        out[(size_t)k * ld + col] = (float)v;
    }
    return mx;
}

/* The clamp to log_max - 8 and the scaling, over rows of cols values. */
static void finish(float *out, int rows, int cols, size_t ld, double log_max) {
    float floor_v = (float)(log_max - 8.0);
    for (int k = 0; k < rows; k++)
        for (int t = 0; t < cols; t++) {
            float *o = out + (size_t)k * ld + t;
            float v = *o > floor_v ? *o : floor_v;
            *o = (v + 4.0f) / 4.0f;
        }
}

encdec_status mel_compute(const mel_ctx *m, const float *pcm, size_t n,
                          float *out, int n_frames) {
    if (!m || !out || (!pcm && n > 0))
        return ed_fail(ENCDEC_ERR_ARG, "mel_compute: NULL argument");
    if (n_frames <= 0 || n_frames > INT32_MAX / MEL_HOP)
        return ed_fail(ENCDEC_ERR_ARG, "mel_compute: n_frames is %d", n_frames);
    size_t len = (size_t)n_frames * MEL_HOP;   /* the window in samples */
    size_t avail = n < len ? n : len;          /* real samples inside it */
    double x[MEL_N_FFT];
    double log_max = -HUGE_VAL;

    for (int t = 0; t < n_frames; t++) {
        long long start = (long long)t * MEL_HOP - MEL_N_FFT / 2;
        if (start >= 0 && (size_t)start + MEL_N_FFT <= avail) {
            const float *s = pcm + start;
            for (int j = 0; j < MEL_N_FFT; j++) x[j] = s[j] * m->window[j];
        } else {
            for (int j = 0; j < MEL_N_FFT; j++)
                x[j] = padded_at(pcm, avail, len, start + j) * m->window[j];
        }
        double v = frame_log(m, x, out, (size_t)n_frames, (size_t)t);
        if (v > log_max) log_max = v;
    }
    finish(out, m->n_mels, n_frames, (size_t)n_frames, log_max);
    return ENCDEC_OK;
}

double mel_frames_log(const mel_ctx *m, const float *x, size_t x0, size_t nx, size_t n_total,
                      long long t0, int nt, float *out, size_t ld) {
    double win[MEL_N_FFT], log_max = -HUGE_VAL;
    for (int c = 0; c < nt; c++) {
        long long start = (t0 + c) * MEL_HOP - MEL_N_FFT / 2;
        if (start >= (long long)x0 && (size_t)start + MEL_N_FFT <= x0 + nx &&
            (size_t)start + MEL_N_FFT <= n_total) {
            const float *s = x + (start - (long long)x0);
            for (int j = 0; j < MEL_N_FFT; j++) win[j] = s[j] * m->window[j];
        } else {
            for (int j = 0; j < MEL_N_FFT; j++) {
                long long i = start + j;
                if (i < 0) i = -i;                       /* the centre padding's reflection */
                double v = (size_t)i < n_total ? x[i - (long long)x0] : 0.0;
                win[j] = v * m->window[j];
            }
        }
        double v = frame_log(m, win, out, ld, (size_t)c);
        if (v > log_max) log_max = v;
    }
    return log_max;
}

void mel_frames_finish(const mel_ctx *m, float *out, int nt, size_t ld, double log_max) {
    finish(out, m->n_mels, nt, ld, log_max);
}
