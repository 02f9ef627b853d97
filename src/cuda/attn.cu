/* attn.cu - attention: one block per (query row, head), the row's scores in
 * shared memory, an exact softmax (max, exp, sum), then the weighted sum of
 * values with the threads over the head's columns; and for the encoder's
 * passes a tiled kernel (below) that reads K and V once per 16 query rows.
 * A decode step's cross attention splits the frames among blocks
 * (flash-decoding, below). Each is checked against its CPU twin
 * (tests/cuda/test_cuda.c). */
#include "cuda/dev.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define ATT_THREADS 128

__device__ static float ld_elem(const void *p, int t, size_t i) {
    if (t == CU_F32) return ((const float *)p)[i];
    if (t == CU_F16) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

/* The softmax of s[0, n) in place (unnormalised exps); returns their sum. */
__device__ static float softmax_shared(float *s, int n, float *red) {
    float mx = -INFINITY;
    for (int t = threadIdx.x; t < n; t += blockDim.x) mx = fmaxf(mx, s[t]);
    mx = cu_block_max(mx, red);
    float sum = 0.0f;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        float e = s[t] == -INFINITY ? 0.0f : expf(s[t] - mx);
        s[t] = e;
        sum += e;
    }
    sum = cu_block_sum(sum, red);   /* its barriers also publish s[] */
    return sum;
}

__global__ void k_attention(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                            const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                            int causal) {
    CU_SHARED_DYN(float, sm);
    __shared__ float red[32];
    int i = blockIdx.x, h = blockIdx.y;
    float *qs = sm, *s = sm + dh;
    for (int j = threadIdx.x; j < dh; j += blockDim.x) qs[j] = q[(size_t)i * ldq + h * dh + j];
    __syncthreads();
    int n = causal ? Tk - Mq + i + 1 : Tk;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float *kr = k + (size_t)t * ldk + h * dh;
        float dot = 0.0f;
        for (int j = 0; j < dh; j++) dot += qs[j] * kr[j];
        s[t] = dot * scale;
    }
    float inv = 1.0f / softmax_shared(s, n, red);
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < n; t++) acc += s[t] * v[(size_t)t * ldv + h * dh + j];
        o[(size_t)i * ldo + h * dh + j] = acc * inv;
    }
}

static int keys_fit(cu_dev *g, int n, const char *what) {
    if (n <= CU_ATT_MAX_KEYS) return 1;
    cu_note(g, what, cudaErrorInvalidConfiguration);   /* over the plain kernel's shared memory */
    return 0;
}

/* ---- the tiled kernel (flash-style): a block holds T_BQ query rows of one
 * head and walks the keys in tiles of T_BK through shared memory, each row
 * keeping its running maximum and sum (the softmax online), so K and V are
 * read once per T_BQ rows, not once per row, and any number of keys fits.
 * Thread t works on row t / 8 of the tile: its scores of keys t % 8 + 8j
 * and its outputs at columns t % 8 + 8j; a row's 8 threads are lanes of
 * one warp, which reduce its max and sum by shuffles. Heads up to T_DH wide
 * (Whisper's, T5's and the BART family's are 64). ---- */
#define T_BQ 16
#define T_BK 64
#define T_DH 64
#define T_THREADS (T_BQ * 8)
static_assert(CU_ATT_TILED(T_BQ, T_DH) && !CU_ATT_TILED(T_BQ - 1, T_DH) && !CU_ATT_TILED(T_BQ, T_DH + 1),
              "cuda.h's CU_ATT_TILED names this kernel's shapes");

__global__ void k_attention_tiled(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                                  const float *v, int ldv, int Mq, int Tk, int dh, float scale,
                                  int causal) {
    __shared__ float qs[T_BQ][T_DH];
    __shared__ float ks[T_BK][T_DH + 1];   /* + 1: row t's column c and row t + 1's in other banks */
    __shared__ float vs[T_BK][T_DH];
    __shared__ float ps[T_BQ][T_BK];
    int h = blockIdx.y, i0 = blockIdx.x * T_BQ, tid = threadIdx.x;
    int r = tid / 8, sub = tid % 8, i = i0 + r;
    for (int e = tid; e < T_BQ * dh; e += T_THREADS) {
        int rr = e / dh, c = e % dh;
        qs[rr][c] = i0 + rr < Mq ? q[(size_t)(i0 + rr) * ldq + h * dh + c] : 0.0f;
    }
    /* the keys the block's last row sees (causal: row i sees [0, i + Tk - Mq]) */
    int last = i0 + T_BQ - 1 < Mq ? i0 + T_BQ - 1 : Mq - 1;
    int kend = causal ? last + Tk - Mq + 1 : Tk;
    float m = -INFINITY, l = 0.0f, acc[T_DH / 8];
#pragma unroll
    for (int j = 0; j < T_DH / 8; j++) acc[j] = 0.0f;
    for (int t0 = 0; t0 < kend; t0 += T_BK) {
        int nk = kend - t0 < T_BK ? kend - t0 : T_BK;
        __syncthreads();   /* the last tile's readers are done (and qs is written) */
        for (int e = tid; e < T_BK * dh; e += T_THREADS) {
            int tt = e / dh, c = e % dh;
            ks[tt][c] = tt < nk ? k[(size_t)(t0 + tt) * ldk + h * dh + c] : 0.0f;
            vs[tt][c] = tt < nk ? v[(size_t)(t0 + tt) * ldv + h * dh + c] : 0.0f;
        }
        __syncthreads();
        float sc[T_BK / 8], mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < T_BK / 8; j++) {
            int tt = sub + 8 * j;
            float s = -INFINITY;
            if (tt < nk && i < Mq && (!causal || t0 + tt <= i + Tk - Mq)) {
                float dot = 0.0f;
                for (int c = 0; c < dh; c++) dot += qs[r][c] * ks[tt][c];
                s = dot * scale;
            }
            sc[j] = s;
            mx = fmaxf(mx, s);
        }
        for (int off = 1; off < 8; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        float mn = fmaxf(m, mx);
        float corr = mn == -INFINITY ? 1.0f : expf(m - mn), sum = 0.0f;   /* (m -inf: 0) */
#pragma unroll
        for (int j = 0; j < T_BK / 8; j++) {
            float p = sc[j] == -INFINITY ? 0.0f : expf(sc[j] - mn);
            ps[r][sub + 8 * j] = p;
            sum += p;
        }
        for (int off = 1; off < 8; off <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        l = l * corr + sum;
        m = mn;
        __syncthreads();   /* the row's exps, written by its 8 threads, read by each */
#pragma unroll
        for (int j = 0; j < T_DH / 8; j++) acc[j] *= corr;
        for (int tt = 0; tt < nk; tt++) {
            float p = ps[r][tt];
#pragma unroll
            for (int j = 0; j < T_DH / 8; j++) acc[j] += p * vs[tt][sub + 8 * j];
        }
    }
    if (i >= Mq) return;
#pragma unroll
    for (int j = 0; j < T_DH / 8; j++) {
        int c = sub + 8 * j;
        if (c < dh) o[(size_t)i * ldo + h * dh + c] = acc[j] / l;
    }
}

void cu_attention(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                  const float *v, int ldv, int Mq, int Tk, int n_head, int dh, float scale,
                  int causal) {
    if (Mq <= 0 || n_head <= 0) return;
    if (CU_ATT_TILED(Mq, dh)) {   /* the encoder's passes, long prompts (T_BQ rows, T_DH wide) */
        dim3 grid((Mq + T_BQ - 1) / T_BQ, n_head);
        CU_LAUNCH(grid, T_THREADS, 0, g->stream, k_attention_tiled)(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk,
                                                                    dh, scale, causal);
        CU_LAUNCHED(g, "attention (tiled)");
        return;
    }
    if (!keys_fit(g, Tk, "attention: too many keys")) return;
    dim3 grid(Mq, n_head);
    size_t smem = (size_t)(dh + Tk) * sizeof(float);
    CU_LAUNCH(grid, ATT_THREADS, smem, g->stream, k_attention)(o, ldo, q, ldq, k, ldk, v, ldv, Mq, Tk, dh,
                                                        scale, causal);
    CU_LAUNCHED(g, "attention");
}

/* Row i of the pass belongs to the segment that holds it (a scan: a pass
 * packs a few inputs); rows of none are left as they are. */
__global__ void k_attention_seg(float *o, int ldo, const float *q, int ldq, const float *k, int ldk,
                                const float *v, int ldv, int n_seg, const int *seg_start,
                                const int *seg_len, int dh, float scale, const float *bias,
                                size_t bias_hstride, int bias_center) {
    CU_SHARED_DYN(float, sm);
    __shared__ float red[32];
    int i = blockIdx.x, h = blockIdx.y, s0 = -1, n = 0;
    for (int s = 0; s < n_seg && s0 < 0; s++)
        if (i >= seg_start[s] && i < seg_start[s] + seg_len[s]) {
            s0 = seg_start[s];
            n = seg_len[s];
        }
    if (s0 < 0) return;   /* the whole block alike */
    float *qs = sm, *s = sm + dh;
    for (int j = threadIdx.x; j < dh; j += blockDim.x) qs[j] = q[(size_t)i * ldq + h * dh + j];
    __syncthreads();
    const float *b = bias ? bias + (size_t)h * bias_hstride + bias_center - (i - s0) : NULL;
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float *kr = k + (size_t)(s0 + t) * ldk + h * dh;
        float dot = 0.0f;
        for (int j = 0; j < dh; j++) dot += qs[j] * kr[j];
        s[t] = dot * scale + (b ? b[t] : 0.0f);
    }
    float inv = 1.0f / softmax_shared(s, n, red);
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < n; t++) acc += s[t] * v[(size_t)(s0 + t) * ldv + h * dh + j];
        o[(size_t)i * ldo + h * dh + j] = acc * inv;
    }
}

void cu_attention_seg(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *k,
                      int ldk, const float *v, int ldv, int rows, int n_seg, const int *seg_start,
                      const int *seg_len, int max_len, int n_head, int dh, float scale,
                      const float *bias, size_t bias_hstride, int bias_center) {
    if (rows <= 0 || n_seg <= 0 || n_head <= 0 ||
        !keys_fit(g, max_len, "attention within segments: too many keys"))
        return;
    dim3 grid(rows, n_head);
    size_t smem = (size_t)(dh + max_len) * sizeof(float);
    CU_LAUNCH(grid, ATT_THREADS, smem, g->stream, k_attention_seg)(o, ldo, q, ldq, k, ldk, v, ldv, n_seg,
                                                            seg_start, seg_len, dh, scale, bias,
                                                            bias_hstride, bias_center);
    CU_LAUNCHED(g, "attention within segments");
}

__global__ void k_attention_tab(float *o, int ldo, const float *q, int ldq, const float *kc,
                                const float *vc, size_t slot_stride, int ld, const int *pos,
                                const int *tab, const int *tab_row, int tab_ld, int dh, float scale,
                                const float *bias, size_t bias_hstride, int bias_center) {
    CU_SHARED_DYN(float, sm);
    __shared__ float red[32];
    int r = blockIdx.x, h = blockIdx.y, n = pos[r] + 1;
    const int *slots = tab + (size_t)tab_row[r] * tab_ld;
    float *qs = sm, *s = sm + dh;
    for (int j = threadIdx.x; j < dh; j += blockDim.x) qs[j] = q[(size_t)r * ldq + h * dh + j];
    __syncthreads();
    for (int t = threadIdx.x; t < n; t += blockDim.x) {
        const float *kr = kc + (size_t)slots[t] * slot_stride + (size_t)t * ld + h * dh;
        float dot = 0.0f;
        for (int j = 0; j < dh; j++) dot += qs[j] * kr[j];
        s[t] = dot * scale + (bias ? bias[h * bias_hstride + bias_center - pos[r] + t] : 0.0f);
    }
    float inv = 1.0f / softmax_shared(s, n, red);
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        float acc = 0.0f;
        for (int t = 0; t < n; t++)
            acc += s[t] * vc[(size_t)slots[t] * slot_stride + (size_t)t * ld + h * dh + j];
        o[(size_t)r * ldo + h * dh + j] = acc * inv;
    }
}

void cu_attention_tab(cu_dev *g, float *o, int ldo, const float *q, int ldq, const float *kc,
                      const float *vc, size_t slot_stride, int ld, int R, const int *pos,
                      const int *tab, const int *tab_row, int tab_ld, int n_head, int dh,
                      float scale, const float *bias, size_t bias_hstride, int bias_center) {
    /* a row attends to pos + 1 <= tab_ld positions */
    if (R <= 0 || n_head <= 0 || !keys_fit(g, tab_ld, "self-attention: too many positions")) return;
    dim3 grid(R, n_head);
    size_t smem = (size_t)(dh + tab_ld) * sizeof(float);
    CU_LAUNCH(grid, ATT_THREADS, smem, g->stream, k_attention_tab)(o, ldo, q, ldq, kc, vc, slot_stride, ld,
                                                            pos, tab, tab_row, tab_ld, dh, scale,
                                                            bias, bias_hstride, bias_center);
    CU_LAUNCHED(g, "self-attention");
}

/* ---- cross attention of a decode step, split along the frames
 * (flash-decoding): a block per (row, head, XS_FRAMES frames) computes its
 * frames' scores (a warp per frame, its lanes over the head's columns), their
 * maximum m, the sum l of exp(score - m) and the weighted sum of their
 * values; a second kernel joins a row's parts (each scaled by exp(m_s - M),
 * M their maximum). A step of one sequence runs 12 blocks per head over
 * Whisper's 1500 frames instead of one, and a block's reads are whole
 * lines. The number of parts follows the longest cache of the pass, but a
 * part past a row's own frames adds exact zeros: a row's output depends on
 * its own cache only, whatever else the pass holds. ---- */
#define XS_FRAMES 128
#define XS_THREADS 128

__global__ void k_cross_part(float *part, const float *q, int ldq, const void *const *caches,
                             const int *n_valid, int t, const int *row_cache, int l, int H,
                             const int *n_ctx, int dh, float scale) {
    CU_SHARED_DYN(float, sm);   /* qs[dh], then the part's scores */
    __shared__ float red[32];
    int r = blockIdx.x, h = blockIdx.y, sp = blockIdx.z, S = gridDim.z;
    int c = row_cache ? row_cache[r] : 0, n = n_valid[c];
    int f0 = sp * XS_FRAMES, nf = n - f0 < XS_FRAMES ? n - f0 : XS_FRAMES;
    float *out = part + (((size_t)r * H + h) * S + sp) * (size_t)(dh + 2);
    if (nf <= 0) {   /* past this row's frames: nothing (the whole block alike) */
        for (int j = threadIdx.x; j < dh; j += blockDim.x) out[j] = 0.0f;
        if (threadIdx.x == 0) out[dh] = -INFINITY, out[dh + 1] = 0.0f;
        return;
    }
    const void *kv = caches[c];
    size_t nc = (size_t)n_ctx[c];
    size_t kb = ((((size_t)l * 2 + 0) * H + h) * nc + f0) * dh;
    size_t vb = ((((size_t)l * 2 + 1) * H + h) * nc + f0) * dh;
    float *qs = sm, *sc = sm + dh;
    for (int j = threadIdx.x; j < dh; j += blockDim.x) qs[j] = q[(size_t)r * ldq + h * dh + j];
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int i = warp; i < nf; i += nw) {   /* the warp's frames: lanes over the columns */
        float dot = 0.0f;
        for (int j = lane; j < dh; j += 32) dot += qs[j] * ld_elem(kv, t, kb + (size_t)i * dh + j);
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        if (lane == 0) sc[i] = dot * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < nf; i += blockDim.x) mx = fmaxf(mx, sc[i]);
    mx = cu_block_max(mx, red);
    float sum = 0.0f;
    for (int i = threadIdx.x; i < nf; i += blockDim.x) {
        float e = expf(sc[i] - mx);
        sc[i] = e;
        sum += e;
    }
    sum = cu_block_sum(sum, red);   /* its barriers also publish sc[] */
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        float acc = 0.0f;
        for (int i = 0; i < nf; i++) acc += sc[i] * ld_elem(kv, t, vb + (size_t)i * dh + j);
        out[j] = acc;
    }
    if (threadIdx.x == 0) out[dh] = mx, out[dh + 1] = sum;
}

/* o[r, h * dh + j]: a row's S parts joined, in part order. */
__global__ void k_cross_join(float *o, int ldo, const float *part, int H, int S, int dh) {
    int r = blockIdx.x, h = blockIdx.y;
    const float *p = part + ((size_t)r * H + h) * S * (size_t)(dh + 2);
    float M = -INFINITY;
    for (int s = 0; s < S; s++) M = fmaxf(M, p[(size_t)s * (dh + 2) + dh]);
    float L = 0.0f;
    for (int s = 0; s < S; s++) {
        const float *ps = p + (size_t)s * (dh + 2);
        L += ps[dh + 1] * expf(ps[dh] - M);   /* (an empty part: 0 * exp(-inf) = 0) */
    }
    for (int j = threadIdx.x; j < dh; j += blockDim.x) {
        float acc = 0.0f;
        for (int s = 0; s < S; s++) {
            const float *ps = p + (size_t)s * (dh + 2);
            acc += ps[j] * expf(ps[dh] - M);
        }
        o[(size_t)r * ldo + h * dh + j] = acc / L;
    }
}

void cu_attention_cross(cu_dev *g, float *o, int ldo, const float *q, int ldq,
                        const void *const *caches, const int *n_valid, cu_type t,
                        const int *row_cache, int l, int n_head, const int *n_ctx, int dh,
                        int max_valid, int Mq, float scale) {
    if (Mq <= 0 || n_head <= 0 || !keys_fit(g, max_valid, "cross attention: too many frames")) return;
    int S = (max_valid + XS_FRAMES - 1) / XS_FRAMES;
    if (S < 1) S = 1;
    float *part = (float *)cu_workspace(g, (size_t)Mq * n_head * S * (dh + 2) * sizeof(float));
    if (!part) return;
    size_t smem = (size_t)(dh + XS_FRAMES) * sizeof(float);
    CU_LAUNCH(dim3(Mq, n_head, S), XS_THREADS, smem, g->stream, k_cross_part)(part, q, ldq, caches, n_valid, t,
                                                                          row_cache, l, n_head, n_ctx, dh, scale);
    CU_LAUNCHED(g, "cross attention (frames' parts)");
    CU_LAUNCH(dim3(Mq, n_head), 64, 0, g->stream, k_cross_join)(o, ldo, part, n_head, S, dh);
    CU_LAUNCHED(g, "cross attention (joined)");
}
