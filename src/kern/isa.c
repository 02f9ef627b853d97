/* isa.c - which kernel set runs: the CPU's best, under the calling thread's
 * limit (base/isa.h). Detected once (the answer never changes in a process). */
#include "base/isa.h"
#include "kern/kern.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

static int detect(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    /* clang 14 cannot ask for f16c: every AVX2 CPU with FMA has it */
#ifdef __clang__
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return K_ISA_C;
#else
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
          __builtin_cpu_supports("f16c")))
        return K_ISA_C;
#endif
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
        return K_ISA_VEC;
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22)) && (d & (1u << 24)) &&
        __builtin_cpu_supports("avx512bf16"))
        return K_ISA_AMX;  /* AMX-BF16 + AMX-TILE; the tile state is asked for by its kernels */
    return K_ISA_AVX512;
#elif defined(__aarch64__)
    return K_ISA_VEC;      /* NEON is part of every AArch64 CPU */
#else
    return K_ISA_C;
#endif
}

int k_isa_cpu(void) {
    static atomic_int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

static atomic_int peak = -1;   /* k_isa_peak: written only when a higher level first shows */

int k_isa(void) {
    int cpu = k_isa_cpu(), lim = ed_isa_limit(), v = lim < cpu ? lim : cpu;
    int p = atomic_load_explicit(&peak, memory_order_relaxed);
    while (v > p && !atomic_compare_exchange_weak_explicit(&peak, &p, v, memory_order_relaxed,
                                                           memory_order_relaxed)) {
    }
    return v;
}

int k_isa_peak(int reset) {
    return reset ? atomic_exchange_explicit(&peak, -1, memory_order_relaxed)
                 : atomic_load_explicit(&peak, memory_order_relaxed);
}

int k_isa_at(int isa) {
    int now = k_isa();
    return isa < now ? isa : now;
}

const char *k_isa_name(int level) {
    switch (level) {
    case K_ISA_C: return "c";
#if defined(__aarch64__)
    case K_ISA_VEC: return "neon";
#else
    case K_ISA_VEC: return "avx2";
#endif
    case K_ISA_AVX512: return "avx512";
    case K_ISA_AMX: return "amx";
    default: return "?";
    }
}

int k_isa_parse(const char *name) {
    if (!name) return -1;
    for (int l = K_ISA_C; l <= K_ISA_AMX; l++)
        if (!strcmp(name, k_isa_name(l))) return l;
    return -1;
}

static unsigned detect_feat(void) {
    unsigned f = 0;
#if defined(__aarch64__) && defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP);
#ifdef HWCAP_ASIMDDP
    if (hw & HWCAP_ASIMDDP) f |= K_FEAT_DOTPROD;
#endif
#ifdef HWCAP2_BF16
    if (getauxval(AT_HWCAP2) & HWCAP2_BF16) f |= K_FEAT_BF16;
#endif
    (void)hw;
#endif
#if defined(__x86_64__) && defined(__GNUC__)
    /* AVX-VNNI: CPUID leaf 7 sub-leaf 1, EAX bit 4 (clang 14 has no name for
     * it in __builtin_cpu_supports); the OS's ymm state comes with AVX2's */
    unsigned a, b, c, d;
    if (__builtin_cpu_supports("avx2") && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1))
        f |= K_FEAT_AVXVNNI;
#endif
    return f;
}

static atomic_uint g_feat_mask = K_FEAT_ALL;

unsigned k_feat_cpu(void) {
    static atomic_uint cached = ~0u;
    unsigned v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == ~0u) {
        v = detect_feat();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

int k_feat(unsigned f) {
    unsigned have = k_feat_cpu() & atomic_load_explicit(&g_feat_mask, memory_order_relaxed);
    return k_isa() >= K_ISA_VEC && (have & f) == f;
}

unsigned k_feat_mask(unsigned mask) {
    return atomic_exchange_explicit(&g_feat_mask, mask, memory_order_relaxed);
}
