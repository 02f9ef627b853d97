/* test_threads.c - the ops layer gives the same bits on any number of
 * threads, whatever kernels run underneath: every product the models run
 * (f32, f16 and bf16 weights row-major, panel-major halves, int8, the bf16
 * mode's rounded products, with GELU and residual epilogues, convolution
 * windows) and the attention kernels, on shapes from one row to the
 * encoder's 1500 x 1536, on 2, 3, 4, 5, 7 and 16 threads against 1 thread
 * (the sanitizers' pass: 2, 3 and 16), bit for bit, on every kernel set this
 * CPU has.
 *
 * BLIS picks its own kernels by the CPU, and some of them change with the
 * shape of a call (Zen 3's configuration sums matrices under 512 rows with
 * other kernels, in another order): slices that followed the thread count
 * gave other tokens on 3 threads than on 1 there, and nowhere else. So the
 * test runs itself once per BLIS configuration this CPU can run
 * (k_blas_configs: haswell, zen, zen2, zen3 and skx on x86-64), forced by
 * BLIS_ARCH_TYPE (the products BLIS runs, on 2, 3 and 16 threads), and once
 * as BLIS chooses (everything): one machine covers what the others run
 * (the forced ones in the release pass only: BLIS is not instrumented). (The same run-time choices of our own kernels are forced by
 * the kernel-set limit; AVX-VNNI and the like by k_feat_mask, test_isa.)
 *
 * Control: an op that slices by the thread count (rows of x split evenly,
 * a BLIS call each) must fail the same comparison under a configuration
 * where BLIS's kernels depend on the shape, when one of those runs here.
 */
#include "check.h"

#include "base/isa.h"
#include "base/pool.h"
#include "core/ops.h"
#include "kern/attn_h.h"
#include "kern/gemm.h"
#include "kern/kern.h"
#include "kern/matmul_hp.h"
#include "kern/q8.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const int g_threads[] = {2, 3, 16, 4, 5, 7};
#define N_THREADS ((int)(sizeof g_threads / sizeof g_threads[0]))
static int g_n_threads = N_THREADS;   /* the first this many of g_threads */

static unsigned long g_seed = 77;
static float frand(void) {
    g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((g_seed >> 33) % 2000000) / 1000000.0f - 1.0f;
}

static void *xalloc(size_t bytes) {
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) abort();
    return p;
}

static float *rand_floats(size_t n, float scale) {
    float *x = xalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = frand() * scale;
    return x;
}

static ed_pool *g_pools[N_THREADS + 1];   /* [0]: 1 thread, then g_threads */
static int g_blas_only;   /* a forced BLIS configuration: the products BLIS can run only */

/* The op under test: computes y on pool p (the same inputs every call). */
typedef void (*op_fn)(ed_pool *p, float *y, const void *ctx);

/* y of fn on 1 thread against each thread count, bit for bit. */
static int same_bits(const char *what, op_fn fn, const void *ctx, size_t n_out) {
    float *want = xalloc(n_out * sizeof(float)), *got = xalloc(n_out * sizeof(float));
    memset(want, 0, n_out * sizeof(float));
    fn(g_pools[0], want, ctx);
    int ok = 1;
    for (int t = 0; t < g_n_threads; t++) {
        memset(got, 0, n_out * sizeof(float));
        fn(g_pools[t + 1], got, ctx);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n_out; i++)
            if (memcmp(&got[i], &want[i], sizeof(float))) first = bad++ ? first : i;
        if (bad) {
            fprintf(stderr, "  %s: %zu of %zu values differ on %d threads from 1 (first at %zu: "
                    "%.9g, %.9g)\n", what, bad, n_out, g_threads[t], first, got[first], want[first]);
            ok = 0;
        }
    }
    free(want), free(got);
    return ok;
}

/* ---- products ---- */

typedef struct {
    const float *x, *b;
    k_w w;
    int M, N, K, ldx, epi;
    float *tmp;   /* [M, N] for K_GEMM_ACC */
    const float *y0;   /* y's values before an accumulating product */
} mm_case;

static void run_matmul(ed_pool *p, float *y, const void *ctx) {
    const mm_case *c = ctx;
    if (c->epi) {
        if (c->y0) memcpy(y, c->y0, (size_t)c->M * c->N * sizeof *y);
        op_matmul_w_ex(p, y, c->N, c->x, c->ldx, c->w, c->b, c->M, c->N, c->K, c->epi, c->tmp);
    } else if (c->ldx < c->K) {
        op_matmul_win(p, y, c->N, c->x, c->ldx, c->w, c->b, c->M, c->N, c->K, 0, c->tmp);
    } else {
        op_matmul_w(p, y, c->N, c->x, c->ldx, c->w, c->b, c->M, c->N, c->K);
    }
}

static uint16_t to_half(float v, int bf16) {
    uint16_t h;
    k_f32_to_h(&h, &v, 1, bf16);
    return h;
}

/* Shapes: a decode step, beams, prompts, the packed T5 encoder, the
 * convolution stem and the encoder's products (M x N x K); 12 x 700 x 1024
 * and 9 x 650 x 512: gemm_ws16.c's 10- and 20-row tiles (rows 4 and 2 KB
 * apart), whose column slices end inside a tile. */
static const int g_shapes[][3] = {
    {1, 384, 384},    {5, 1152, 384},  {16, 1536, 384}, {17, 384, 1536}, {40, 512, 512},
    {130, 1024, 512}, {300, 384, 240}, {513, 384, 384}, {1500, 1536, 384}, {1500, 384, 1152},
    {12, 700, 1024},  {9, 650, 512},
};

static void test_products(int isa) {
    int n_shapes = (int)(sizeof g_shapes / sizeof g_shapes[0]);
    for (int s = 0; s < n_shapes; s++) {
        int M = g_shapes[s][0], N = g_shapes[s][1], K = g_shapes[s][2];
        float *x = rand_floats((size_t)M * K + K, 1.0f), *b = rand_floats((size_t)N, 0.1f);
        float *wf = rand_floats((size_t)N * K, 0.05f), *tmp = xalloc((size_t)M * N * sizeof(float));
        float *y0 = rand_floats((size_t)M * N, 1.0f);
        uint16_t *wh = xalloc((size_t)N * K * 2), *wb = xalloc((size_t)N * K * 2);
        for (size_t i = 0; i < (size_t)N * K; i++) wh[i] = to_half(wf[i], 0), wb[i] = to_half(wf[i], 1);
        void *q8 = xalloc(k_q8_bytes(N, K)), *hp = xalloc(k_hp_bytes(N, K) + 64);
        k_w f32 = {wf, K_F32, 0}, f16 = {wh, K_F16, 0}, bf = {wb, K_BF16, 0};
        k_w bf_lowp = {wb, K_BF16, 1}, q = {k_q8_pack(q8, f32, N, K).data, K_Q8, 0};
        k_w f16p = {hp, K_F16P, 0};
        int have_hp = k_hp_fast() && k_hp_pack(hp, f16, N, K) == 0;
        struct {
            const char *name;
            k_w w;
        } ws[] = {{"f32", f32}, {"f16", f16}, {"bf16", bf}, {"bf16 mode", bf_lowp}, {"int8", q},
                  {"f16 panels", f16p}};
        int n_ws = g_blas_only ? 4 : have_hp ? 6 : 5;
        for (int i = 0; i < n_ws; i++) {
            if (i >= 4 && isa == K_ISA_C && M > 513) continue;   /* our scalar C: slow, invariant by make */
            char what[128];
            mm_case c = {x, b, ws[i].w, M, N, K, K, 0, tmp, NULL};
            snprintf(what, sizeof what, "%s: %s product %d x %d x %d", k_isa_name(isa), ws[i].name, M, N, K);
            CHECK(same_bits(what, run_matmul, &c, (size_t)M * N));
            if (i >= 4 || (M > 40 && M < 1500) || (g_blas_only && M >= 1500))
                continue;   /* epilogues: row-major weights (the same BLIS products as above) */
            mm_case g = {x, b, ws[i].w, M, N, K, K, K_GEMM_GELU, tmp, NULL};
            snprintf(what, sizeof what, "%s: %s product + GELU %d x %d x %d", k_isa_name(isa), ws[i].name, M, N, K);
            CHECK(same_bits(what, run_matmul, &g, (size_t)M * N));
            mm_case a = {x, b, ws[i].w, M, N, K, K, K_GEMM_ACC, tmp, y0};
            snprintf(what, sizeof what, "%s: %s product + residual %d x %d x %d", k_isa_name(isa), ws[i].name, M, N, K);
            CHECK(same_bits(what, run_matmul, &a, (size_t)M * N));
        }
        if (K % 3 == 0 && M >= 300) {   /* convolution windows: rows K/3 floats apart, K long */
            mm_case w = {x, b, f16, M, N, K, K / 3, 0, xalloc((size_t)M * K * sizeof(float)), NULL};
            char what[128];
            snprintf(what, sizeof what, "%s: f16 convolution windows %d x %d x %d", k_isa_name(isa), M, N, K);
            CHECK(same_bits(what, run_matmul, &w, (size_t)M * N));
            free(w.tmp);
        }
        free(x), free(b), free(wf), free(tmp), free(y0), free(wh), free(wb), free(q8), free(hp);
    }
}

/* ---- attention ---- */

typedef struct {
    const float *q, *k, *v;
    int Mq, Tk, n_head, dh, causal, bf16;
} attn_case;

static void run_attention(ed_pool *p, float *o, const void *ctx) {
    const attn_case *c = ctx;
    int d = c->n_head * c->dh, n = ed_pool_size(p);
    size_t stride = (size_t)OP_ATTN_ROWS * c->Tk;
    float *s = xalloc((size_t)n * stride * sizeof(float));
    op_attention_lp(p, o, d, c->q, d, c->k, d, c->v, d, c->Mq, c->Tk, c->n_head, c->dh,
                    0.125f, c->causal, c->bf16, s, stride);
    free(s);
}

static void test_attention(int isa) {
    static const int shapes[][5] = {   /* Mq, Tk, heads, dh, causal */
        {1500, 1500, 6, 64, 0}, {300, 300, 8, 64, 0}, {100, 100, 6, 64, 0}, {40, 40, 8, 64, 1},
        {1, 448, 6, 64, 1},
    };
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++) {
        int Mq = shapes[i][0], Tk = shapes[i][1], H = shapes[i][2], dh = shapes[i][3];
        if (g_blas_only && Mq >= 1500) continue;   /* BLIS's calls there: 64-row blocks, as at 300 */
        float *q = rand_floats((size_t)Mq * H * dh, 1.0f), *k = rand_floats((size_t)Tk * H * dh, 1.0f);
        float *v = rand_floats((size_t)Tk * H * dh, 1.0f);
        for (int bf16 = 0; bf16 < 2; bf16++) {
            attn_case c = {q, k, v, Mq, Tk, H, dh, shapes[i][4], bf16};
            char what[128];
            snprintf(what, sizeof what, "%s: attention%s %d x %d, %d heads%s", k_isa_name(isa),
                     bf16 ? " (bf16 mode)" : "", Mq, Tk, H, shapes[i][4] ? ", causal" : "");
            CHECK(same_bits(what, run_attention, &c, (size_t)Mq * H * dh));
        }
        free(q), free(k), free(v);
    }
}

/* ---- the control: slices that follow the thread count ---- */

typedef struct {
    const float *x, *w;
    int M, N, K;
} naive_case;

static void naive_task(void *arg, int ith, int nth) {
    const naive_case *c = ((void **)arg)[0];
    float *y = ((void **)arg)[1];
    int lo, hi;
    ed_split(c->M, ith, nth, 4, &lo, &hi);
    if (hi > lo) k_matmul_ex(y + (size_t)lo * c->N, c->N, c->x + (size_t)lo * c->K, c->K, c->w, c->K,
                             NULL, hi - lo, c->N, c->K);
}

static void run_naive(ed_pool *p, float *y, const void *ctx) {
    void *arg[2] = {(void *)ctx, y};
    ed_pool_run(p, naive_task, arg);
}

/* 1 when the control fails as it must (or cannot: BLIS's kernels here do
 * not change with the rows of a call). */
static void control(const char *cfg) {
    int M = 1500, N = 384, K = 240;
    float *x = rand_floats((size_t)M * K, 1.0f), *w = rand_floats((size_t)N * K, 0.05f);
    naive_case c = {x, w, M, N, K};
    /* do BLIS's sums here change with the rows of a call? */
    float *full = xalloc((size_t)M * N * 4), *part = xalloc((size_t)M * N * 4);
    k_matmul_ex(full, N, x, K, w, K, NULL, M, N, K);
    for (int r = 0; r < M; r += 100) k_matmul_ex(part + (size_t)r * N, N, x + (size_t)r * K, K, w, K, NULL, 100, N, K);
    int shape_dependent = memcmp(full, part, (size_t)M * N * 4) != 0;
    printf("BLIS %s: its sums %s with the rows of a call\n", cfg, shape_dependent ? "change" : "do not change");
    if (shape_dependent) {
        fprintf(stderr, "  (the control: the naive slicing must differ below)\n");
        CHECK(!same_bits("control: rows sliced by the thread count", run_naive, &c, (size_t)M * N));
    }
    free(x), free(w), free(full), free(part);
}

static int run_here(const char *cfg) {
    for (int t = 0; t <= N_THREADS; t++)
        if (ed_pool_new(&g_pools[t], t ? g_threads[t - 1] : 1) != ENCDEC_OK) abort();
    printf("%s\n", k_blas_info());
    for (int isa = K_ISA_C; isa <= k_isa_cpu(); isa++) {
        int old = ed_isa_swap(isa);
        for (int t = 0; t <= N_THREADS; t++) ed_pool_set_isa(g_pools[t], isa);
        int before = check_fail_;
        test_products(isa);
        test_attention(isa);
        printf("BLIS %s, kernel set %s: %s\n", cfg, k_isa_name(isa),
               check_fail_ == before ? "the same bits on every thread count" : "DIFFERENT bits");
        ed_isa_swap(old);
    }
    control(cfg);
    for (int t = 0; t <= N_THREADS; t++) ed_pool_free(g_pools[t]);
    return check_done();
}

#if !defined(ED_EMULATED) && !defined(ED_SANITIZED)
/* This program again with BLIS_ARCH_TYPE naming cfg; its exit status. */
static int run_child(const char *self, const char *cfg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char id[16];
        snprintf(id, sizeof id, "%d", k_blas_config_id(cfg));
        setenv("BLIS_ARCH_TYPE", id, 1);
        execl(self, self, cfg, (char *)NULL);
        _exit(126);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    if (WIFSIGNALED(st)) fprintf(stderr, "  BLIS %s: killed by signal %d\n", cfg, WTERMSIG(st));
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

int main(int argc, char **argv) {
    if (argc > 1) {   /* a child: BLIS_ARCH_TYPE set */
        g_blas_only = 1;
        g_n_threads = 3;   /* 2, 3, 16 */
        return run_here(argv[1]);
    }
    if (getenv("BLIS_ARCH_TYPE")) return run_here(getenv("BLIS_ARCH_TYPE"));
#ifdef ED_SANITIZED
    /* the sanitizers' pass: the slicing's memory on 2, 3 and 16 threads (an
     * even, an odd and a many-way split); every count's bits are the release
     * pass's */
    g_n_threads = 3;
#endif
    int failed = run_here("as it chooses");
#if !defined(ED_EMULATED) && !defined(ED_SANITIZED)
    /* qemu: BLIS's own choice only (minutes per configuration there); the
     * sanitizers' pass too (a forced configuration runs BLIS's code, which
     * they do not instrument, over the same paths of ours) */
    const char *cfgs[16];
    int n = k_blas_configs(cfgs, 16);
    for (int i = 0; i < n; i++) {
        if (!strcmp(cfgs[i], "generic")) continue;   /* BLIS's reference C: slow, shape-blind */
        int rc = run_child(argv[0], cfgs[i]);
        printf("BLIS %s forced: %s\n", cfgs[i], rc == 0 ? "passed" : "FAILED");
        failed |= rc != 0;
    }
#endif
    return failed ? 1 : 0;
}
