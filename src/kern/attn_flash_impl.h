/* attn_flash_impl.h - fused attention for long non-causal sequences (the
 * Whisper encoder's 1500 x 1500 per head), written once over vec_impl.h's
 * lane operations and instantiated with them (vec_avx2.c, vec_neon.c; and
 * attn_flash_avx512.c: 16 lanes, 32 registers, so tiles of AF_MR = 12
 * rows); declared in vec.h, dispatched by k_attention_flash (kern.c).
 *
 * Per head: K is packed once, pre-scaled, as panels of AF_NR keys
 * ([d][AF_NR], zero past Tk). Query rows go in groups of AF_RG (their
 * partial outputs O, running maxima m and sums l stay in L2), and for each
 * block of AF_BK keys (the block's K panels and V rows stay in L2) each
 * tile of AF_MR rows:
 *   S = Q . K^T          AF_MR x AF_NR register tiles (2 vector loads,
 *                        AF_MR broadcasts, 2 AF_MR FMAs per d), to L1
 *   m' = max(m, max S), alpha = exp(m - m'), P = exp(S - m'),
 *   l = alpha l + sum P  (online softmax, exp as vec_impl.h's vexp)
 *   O = alpha O + P . V  the same register tiles over AF_NR value columns
 * and at the group's end o = O / l. The score matrix never leaves L1; both
 * products run at the FMA units' rate, where BLAS on a [64, Tk] block of
 * scores ran at about half of it. Sums are f32 in a different order from
 * k_attention's: results agree with k_attention_ref within 1e-5. */

#ifndef AF_MR
#define AF_MR 6              /* query rows per register tile (2 AF_MR accumulators) */
#endif
#define AF_NR (2 * VF_N)     /* keys (first product) or value columns (second) per tile */
#define AF_BK 256            /* keys per block (a multiple of AF_NR) */
#define AF_RG 192            /* query rows per group (a multiple of AF_MR) */

/* n floats rounded up to whole 64-byte lines */
static inline size_t af_up(size_t n) { return (n + 15) & ~(size_t)15; }

size_t K_VEC(k_attention_flash_scratch)(int Tk, int dh) {
    size_t npan = ((size_t)Tk + AF_NR - 1) / AF_NR;
    return sizeof(float) * (af_up(npan * AF_NR * dh) + 2 * af_up((size_t)AF_RG * dh) +
                            2 * af_up(AF_RG) + af_up((size_t)AF_MR * AF_BK)) + 64;
}

/* s[i][p * AF_NR + j] (rows AF_BK apart) = q[i] . panel p's key j. */
VT static void af_scores(float *s, const float *q, int dh, const float *kp, int npan) {
    for (int p = 0; p < npan; p++) {
        const float *kk = kp + (size_t)p * dh * AF_NR;
        VF a[AF_MR][2];
        for (int i = 0; i < AF_MR; i++) a[i][0] = a[i][1] = vf_set1(0.0f);
        for (int d = 0; d < dh; d++) {
            VF k0 = vf_load(kk + (size_t)d * AF_NR), k1 = vf_load(kk + (size_t)d * AF_NR + VF_N);
            for (int i = 0; i < AF_MR; i++) {
                VF b = vf_set1(q[(size_t)i * dh + d]);
                a[i][0] = vf_fma(b, k0, a[i][0]);
                a[i][1] = vf_fma(b, k1, a[i][1]);
            }
        }
        for (int i = 0; i < AF_MR; i++) {
            vf_store(s + (size_t)i * AF_BK + p * AF_NR, a[i][0]);
            vf_store(s + (size_t)i * AF_BK + p * AF_NR + VF_N, a[i][1]);
        }
    }
}

/* One row of scores s[0, w) (w a multiple of AF_NR; keys past nk are
 * padding) becomes exp(s - m') in place; *m, *l move on; returns alpha. */
VT static float af_softmax_row(float *s, int w, int nk, float *m, float *l) {
    VF m0 = vf_set1(-INFINITY);
    int j = 0;
    for (; j + VF_N <= nk; j += VF_N) m0 = vf_max(m0, vf_load(s + j));
    float mx = vf_hmax(m0);
    for (; j < nk; j++) mx = s[j] > mx ? s[j] : mx;
    float mn = mx > *m ? mx : *m, alpha = exp_poly(*m - mn);
    VF vm = vf_set1(mn), s0 = vf_set1(0.0f);
    for (j = 0; j < w; j += VF_N) vf_store(s + j, vexp(vf_sub(vf_load(s + j), vm)));
    for (j = 0; j + VF_N <= nk; j += VF_N) s0 = vf_add(s0, vf_load(s + j));
    double sum = vf_hsum_d(s0);
    for (; j < nk; j++) sum += s[j];
    *l = *l * alpha + (float)sum;
    *m = mn;
    return alpha;
}

/* o[i][:] (rows dh apart) = al[i] o[i][:] + sum over t < nk of s[i][t] v[t][:]. */
VT static void af_pv(float *o, int dh, const float *s, const float *al, const float *v, int ldv,
                     int nk) {
    for (int c = 0; c < dh; c += AF_NR) {
        VF a[AF_MR][2];
        for (int i = 0; i < AF_MR; i++) {
            VF sc = vf_set1(al[i]);
            a[i][0] = vf_mul(vf_load(o + (size_t)i * dh + c), sc);
            a[i][1] = vf_mul(vf_load(o + (size_t)i * dh + c + VF_N), sc);
        }
        for (int t = 0; t < nk; t++) {
            const float *vr = v + (size_t)t * ldv + c;
            VF v0 = vf_load(vr), v1 = vf_load(vr + VF_N);
            for (int i = 0; i < AF_MR; i++) {
                VF b = vf_set1(s[(size_t)i * AF_BK + t]);
                a[i][0] = vf_fma(b, v0, a[i][0]);
                a[i][1] = vf_fma(b, v1, a[i][1]);
            }
        }
        for (int i = 0; i < AF_MR; i++) {
            vf_store(o + (size_t)i * dh + c, a[i][0]);
            vf_store(o + (size_t)i * dh + c + VF_N, a[i][1]);
        }
    }
}

/* dh a multiple of AF_NR; Mq, Tk >= 1; scratch of
 * K_VEC(k_attention_flash_scratch)(Tk, dh) bytes, any alignment. */
VT void K_VEC(k_attention_flash)(float *o, int ldo, const float *q, int ldq, const float *k,
                                 int ldk, const float *v, int ldv, int Mq, int Tk, int dh,
                                 float scale, void *scratch) {
    int npan = (Tk + AF_NR - 1) / AF_NR;
    float *kp = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *qg = kp + af_up((size_t)npan * AF_NR * dh), *og = qg + af_up((size_t)AF_RG * dh);
    float *m = og + af_up((size_t)AF_RG * dh), *l = m + af_up(AF_RG), *s = l + af_up(AF_RG);
    for (int p = 0; p < npan; p++)
        for (int j = 0; j < AF_NR; j++) {
            int t = p * AF_NR + j;
            float *dst = kp + (size_t)p * dh * AF_NR + j;
            for (int d = 0; d < dh; d++)
                dst[(size_t)d * AF_NR] = t < Tk ? scale * k[(size_t)t * ldk + d] : 0.0f;
        }
    for (int r0 = 0; r0 < Mq; r0 += AF_RG) {
        int rg = Mq - r0 < AF_RG ? Mq - r0 : AF_RG, rgp = (rg + AF_MR - 1) / AF_MR * AF_MR;
        for (int i = 0; i < rgp; i++) {
            for (int d = 0; d < dh; d++)
                qg[(size_t)i * dh + d] = i < rg ? q[(size_t)(r0 + i) * ldq + d] : 0.0f;
            memset(og + (size_t)i * dh, 0, sizeof(float) * (size_t)dh);
            m[i] = -INFINITY;
            l[i] = 0.0f;
        }
        for (int t0 = 0; t0 < Tk; t0 += AF_BK) {
            int nk = Tk - t0 < AF_BK ? Tk - t0 : AF_BK, np = (nk + AF_NR - 1) / AF_NR;
            const float *kb = kp + (size_t)(t0 / AF_NR) * dh * AF_NR, *vb = v + (size_t)t0 * ldv;
            for (int i0 = 0; i0 < rgp; i0 += AF_MR) {
                float al[AF_MR];
                af_scores(s, qg + (size_t)i0 * dh, dh, kb, np);
                for (int i = 0; i < AF_MR; i++)
                    al[i] = af_softmax_row(s + (size_t)i * AF_BK, np * AF_NR, nk, m + i0 + i, l + i0 + i);
                af_pv(og + (size_t)i0 * dh, dh, s, al, vb, ldv, nk);
            }
        }
        for (int i = 0; i < rg; i++) {
            float inv = 1.0f / l[i];
            for (int d = 0; d < dh; d++) o[(size_t)(r0 + i) * ldo + d] = og[(size_t)i * dh + d] * inv;
        }
    }
}

int K_VEC(k_attention_flash_dh)(void) { return AF_NR; }
