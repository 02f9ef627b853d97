/* attn_amx_bench.c - the Whisper encoder's self attention in the bf16
 * compute mode, one head on one thread: the fused k_attention_bf16 (AMX
 * tiles, AVX512_BF16's vdpbf16ps, or its portable C version) against the path it replaces
 * (core/ops.c's attn_gemm_head: K pre-scaled and V^T copied to f32, then
 * per 256 query rows k_gemm in K_GEMM_BF16 mode for the scores, k_softmax,
 * k_gemm for P . V), and for reference the rate of k_gemm (bf16 mode: AMX
 * where available) computing the scores alone as one product
 * ([Mq, dh] . [Tk, dh]^T into an [Mq, Tk] f32 matrix).
 *
 *   build/bench/attn_amx_bench [-r REPEATS] [--isa 0|2|3] [-s MQ,TK ...]
 *
 * Shapes (Mq = Tk, dh 64): 1500 (Whisper's 30 s window) and 448 by default.
 * The input is a fused [T, 3 H dh] QKV matrix with H = 6 heads (Whisper
 * tiny's 384 columns per projection), so q, k, v are strided column slices;
 * a timed round runs all H heads one after the other (what one thread of
 * the encoder does) and the time per head is reported: the median over
 * REPEATS rounds (default 21), rounds of the variants interleaved in 3
 * passes so that a busy machine slows them alike. FLOPs: 4 Mq Tk dh per
 * head (the two products; the softmax is not counted).
 * Before timing: k_attention_bf16 against k_attention_bf16_ref on the first
 * 64 rows (max |diff| < 2e-3: one bf16 unit of a weight, see
 * tests/test_attn_amx.c), and both paths against k_attention_ref (f32) on
 * the same rows (< 0.02, bf16 level).
 */
#include "stats.h"
#include "kern/attn_amx.h"
#include "kern/gemm.h"
#include "kern/kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H 6
#define DH 64
#define OLD_ROWS 256   /* ops.c's ATTN_GEMM_ROWS */

typedef struct {
    int Mq, Tk, ld;          /* rows, keys; row stride of qkv (3 H dh) and o (H dh) */
    float scale;
    const float *qkv;        /* [T, 3 H dh] */
    float *o;                /* [Mq, H dh] */
    void *scratch;           /* k_attention_bf16's */
    float *kc, *vt, *s;      /* old path: K * scale [Tk, dh], V^T [dh, Tk], scores [256, Tk] */
    void *gs;                /* old path: k_gemm's scratch */
    float *y;                /* reference GEMM: [Mq, Tk] */
    void *gy;                /* its k_gemm scratch */
} bench_ctx;

static const float *hq(const bench_ctx *c, int h) { return c->qkv + h * DH; }
static const float *hk(const bench_ctx *c, int h) { return c->qkv + (H + h) * DH; }
static const float *hv(const bench_ctx *c, int h) { return c->qkv + (2 * H + h) * DH; }

static int run_new(bench_ctx *c, int h, int isa, int Mq) {
    return k_attention_bf16_isa(isa, c->o + h * DH, H * DH, hq(c, h), c->ld, hk(c, h), c->ld,
                                hv(c, h), c->ld, Mq, c->Tk, DH, c->scale, c->scratch);
}

/* ops.c's attn_gemm_head, for one head. */
static void run_old(bench_ctx *c, int h, int Mq) {
    const float *k = hk(c, h), *v = hv(c, h);
    for (int t = 0; t < c->Tk; t++)
        for (int j = 0; j < DH; j++) {
            c->kc[(size_t)t * DH + j] = c->scale * k[(size_t)t * c->ld + j];
            c->vt[(size_t)j * c->Tk + t] = v[(size_t)t * c->ld + j];
        }
    k_w wk = {c->kc, K_F32, 0}, wv = {c->vt, K_F32, 0};
    for (int r0 = 0; r0 < Mq; r0 += OLD_ROWS) {
        int m = Mq - r0 < OLD_ROWS ? Mq - r0 : OLD_ROWS;
        k_gemm(c->s, c->Tk, hq(c, h) + (size_t)r0 * c->ld, c->ld, wk, NULL, m, c->Tk, DH,
               K_GEMM_BF16, 0, c->gs);
        for (int i = 0; i < m; i++) k_softmax(c->s + (size_t)i * c->Tk, c->Tk);
        k_gemm(c->o + (size_t)r0 * H * DH + h * DH, H * DH, c->s, c->Tk, wv, NULL, m, DH, c->Tk,
               K_GEMM_BF16, 0, c->gs);
    }
}

static double max_diff(const float *a, const float *b, int rows, int ld) {
    double m = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < DH; j++) {
            double d = fabs((double)a[(size_t)i * ld + j] - b[(size_t)i * ld + j]);
            if (!(d <= m)) m = d;
        }
    return m;
}

/* Correctness on head 0's first rows; returns 0 when within the bounds. */
static int check(bench_ctx *c, int isa, int *used) {
    int rows = c->Mq < 64 ? c->Mq : 64, ld = H * DH;
    float *r = malloc(sizeof(float) * (size_t)rows * ld);
    float *r32 = malloc(sizeof(float) * (size_t)rows * ld);
    float *s = malloc(sizeof(float) * (size_t)rows * c->Tk);
    k_attention_bf16_ref(r, ld, hq(c, 0), c->ld, hk(c, 0), c->ld, hv(c, 0), c->ld, rows, c->Tk,
                         DH, c->scale);
    k_attention_ref(r32, ld, hq(c, 0), c->ld, hk(c, 0), c->ld, hv(c, 0), c->ld, rows, c->Tk, DH,
                    c->scale, 0, s);
    *used = run_new(c, 0, isa, rows);
    double d_ref = max_diff(c->o, r, rows, ld), d_new = max_diff(c->o, r32, rows, ld);
    run_old(c, 0, rows);
    double d_old = max_diff(c->o, r32, rows, ld);
    int bad = !(d_ref < 2e-3 && d_new < 0.02 && d_old < 0.02);
    printf("  check (%d rows): k_attention_bf16 - _ref %.2g, - k_attention_ref %.2g; old path - "
           "k_attention_ref %.2g%s\n", rows, d_ref, d_new, d_old, bad ? "  FAILED" : "");
    free(r), free(r32), free(s);
    return bad;
}

enum { V_NEW, V_OLD, V_GEMM, N_VAR };

/* One timed round of variant var: all heads (V_GEMM: H GEMMs y[Mq, Tk] =
 * q[Mq, dh] . kc[Tk, dh]^T, kc head 0's contiguous copy of K). */
static double round_ms(bench_ctx *c, int var, int isa) {
    double t0 = bench_now_ms();
    for (int h = 0; h < H; h++) {
        if (var == V_NEW) run_new(c, h, isa, c->Mq);
        else if (var == V_OLD) run_old(c, h, c->Mq);
        else
            k_gemm(c->y, c->Tk, hq(c, h), c->ld, (k_w){c->kc, K_F32, 0}, NULL, c->Mq, c->Tk, DH,
                   K_GEMM_BF16, 0, c->gy);
    }
    return (bench_now_ms() - t0) / H;
}

static unsigned long long g_seed = 42;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000001) / 1000000.0f - 1.0f;
}

static int bench_shape(int Mq, int Tk, int reps, int isa) {
    int T = Mq > Tk ? Mq : Tk, ld = 3 * H * DH;
    bench_ctx c = {Mq, Tk, ld, 1.0f / sqrtf((float)DH), NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                   NULL, NULL};
    float *qkv = malloc(sizeof(float) * (size_t)T * ld);
    for (size_t i = 0; i < (size_t)T * ld; i++) qkv[i] = 2.0f * frand();   /* peaky-ish scores */
    c.qkv = qkv;
    c.o = malloc(sizeof(float) * (size_t)Mq * H * DH);
    c.scratch = aligned_alloc(64, (k_attention_bf16_scratch_bytes(Mq, Tk, DH) + 63) & ~(size_t)63);
    c.kc = malloc(sizeof(float) * (size_t)Tk * DH), c.vt = malloc(sizeof(float) * (size_t)Tk * DH);
    c.s = malloc(sizeof(float) * (size_t)OLD_ROWS * Tk);
    size_t g1 = k_gemm_scratch_bytes(OLD_ROWS, Tk, DH, K_GEMM_BF16);
    size_t g2 = k_gemm_scratch_bytes(OLD_ROWS, DH, Tk, K_GEMM_BF16);
    c.gs = aligned_alloc(64, ((g1 > g2 ? g1 : g2) + 63) & ~(size_t)63);
    c.y = malloc(sizeof(float) * (size_t)Mq * Tk);
    c.gy = aligned_alloc(64, (k_gemm_scratch_bytes(Mq, Tk, DH, K_GEMM_BF16) + 63) & ~(size_t)63);
    if (!c.o || !c.scratch || !c.kc || !c.vt || !c.s || !c.gs || !c.y || !c.gy || !qkv) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int used, bad;
    printf("\nMq %d, Tk %d, dh %d (%d heads of a fused [%d, %d] QKV):\n", Mq, Tk, DH, H, T, ld);
    bad = check(&c, isa, &used);

    static double t[N_VAR][1000];
    int done[N_VAR] = {0};
    for (int pass = 0; pass < 3; pass++)
        for (int var = 0; var < N_VAR; var++) {
            int n = reps * (pass + 1) / 3 - reps * pass / 3;
            for (int rep = -1; rep < n; rep++) {
                double ms = round_ms(&c, var, isa);
                if (rep >= 0) t[var][done[var]++] = ms;
            }
        }
    double flop = 4.0 * Mq * Tk * DH, md[N_VAR];
    for (int var = 0; var < N_VAR; var++) md[var] = bench_median(t[var], reps);
    printf("  %-40s %8.3f ms/head %8.0f GFLOP/s  (%.2fx the old path)\n",
           used == 3 ? "k_attention_bf16 (AMX, fused)"
           : used == 2 ? "k_attention_bf16 (vdpbf16ps, fused)" : "k_attention_bf16 (portable C)", md[V_NEW],
           flop / md[V_NEW] / 1e6, md[V_OLD] / md[V_NEW]);
    printf("  %-40s %8.3f ms/head %8.0f GFLOP/s\n", "old path (k_gemm bf16 + k_softmax)", md[V_OLD],
           flop / md[V_OLD] / 1e6);
    printf("  %-40s %8.3f ms      %8.0f GFLOP/s  (k_gemm bf16: [%d, %d] . [%d, %d]^T)\n",
           "reference: the scores as one GEMM", md[V_GEMM], 2.0 * Mq * Tk * DH / md[V_GEMM] / 1e6,
           Mq, DH, Tk, DH);
    free(qkv), free(c.o), free(c.scratch), free(c.kc), free(c.vt), free(c.s), free(c.gs);
    free(c.y), free(c.gy);
    return bad;
}

int main(int argc, char **argv) {
    int reps = 21, isa = 3, shapes[8][2] = {{1500, 1500}, {448, 448}}, n_shapes = 2, user = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc && (!user || n_shapes < 8)) {
            if (!user) n_shapes = 0, user = 1;   /* -s replaces the default shapes */
            if (sscanf(argv[++i], "%d,%d", &shapes[n_shapes][0], &shapes[n_shapes][1]) != 2)
                return 2;
            n_shapes++;
        } else {
            fprintf(stderr, "usage: %s [-r REPEATS] [--isa 0|2|3] [-s MQ,TK ...]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 3 || reps > 1000) return 2;
    for (int s = 0; s < n_shapes; s++)
        if (shapes[s][0] < 1 || shapes[s][1] < 1 || shapes[s][0] > 8192 || shapes[s][1] > 8192)
            return 2;
    printf("one head of self attention, bf16 products, 1 thread; fused kernel: %s; old path: k_gemm "
           "bf16 (%s) + k_softmax; median of %d rounds of %d heads\n",
           k_gemm_has_amx() ? "AMX tiles" : k_attention_bf16_has() ? "AVX512_BF16 (vdpbf16ps)"
                                                                  : "portable C",
           k_gemm_has_amx() ? "AMX" : k_gemm_has(K_GEMM_BF16) ? "AVX512_BF16" : "C", reps, H);
    int fail = 0;
    for (int s = 0; s < n_shapes; s++) fail |= bench_shape(shapes[s][0], shapes[s][1], reps, isa);
    return fail;
}
