/* blas.c - what encdec knows of the BLAS under k_matmul (BLIS): its version
 * and kernel configuration, and which configurations BLIS_ARCH_TYPE may
 * name on this CPU (tests run the kernels of other CPUs through it). */
#include "kern/kern.h"

#include <blis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLIS configurations whose kernels use no instruction set above the kernel
 * set named (the others: SSE-era, FMA4, Xeon Phi, SVE, are refused). */
static const struct {
    const char *name;
    int isa;
} g_cfgs[] = {
#if defined(__x86_64__)
    {"haswell", K_ISA_VEC}, {"zen", K_ISA_VEC}, {"zen2", K_ISA_VEC}, {"zen3", K_ISA_VEC},
    {"skx", K_ISA_AVX512},
#elif defined(__aarch64__)
    {"cortexa57", K_ISA_VEC}, {"cortexa53", K_ISA_VEC}, {"thunderx2", K_ISA_VEC},
    {"firestorm", K_ISA_VEC},
#endif
    {"generic", K_ISA_C},
};
#define N_CFGS ((int)(sizeof g_cfgs / sizeof g_cfgs[0]))

int k_blas_config_id(const char *name) {
    for (int i = 0; i < BLIS_NUM_ARCHS; i++)
        if (name && !strcmp(bli_arch_string((arch_t)i), name)) return i;
    return -1;
}

int k_blas_configs(const char **names, int cap) {
    int n = 0;
    for (int i = 0; i < N_CFGS; i++)
        if (g_cfgs[i].isa <= k_isa_cpu() && k_blas_config_id(g_cfgs[i].name) >= 0 && n < cap)
            names[n++] = g_cfgs[i].name;
    return n;
}

int k_blas_env_check(char *why, size_t cap) {
    const char *a = getenv("BLIS_ARCH_TYPE");
    if (!a || !*a) return 0;
    char *end;
    long id = strtol(a, &end, 10);
    const char *name = *end || id < 0 || id >= BLIS_NUM_ARCHS ? NULL : bli_arch_string((arch_t)id);
    const char *cfgs[16];
    int n = k_blas_configs(cfgs, 16);
    for (int i = 0; name && i < n; i++)
        if (!strcmp(cfgs[i], name)) return 0;
    size_t k = (size_t)snprintf(why, cap, "BLIS_ARCH_TYPE=%.40s is %s; BLIS would abort or fault on "
                                "it. Unset it, or name one of this CPU's BLIS configurations by "
                                "number:", a, name ? "a BLIS configuration this CPU cannot run"
                                                   : "not the number of a BLIS configuration");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(why + k, cap - k, " %d (%s)", k_blas_config_id(cfgs[i]), cfgs[i]);
    return -1;
}

static char g_blas_info[160];

static void blas_info_init(void) {
    char why[8];
    if (k_blas_env_check(why, sizeof why)) {   /* querying the kernels would stop the process */
        snprintf(g_blas_info, sizeof g_blas_info, "BLIS %s (unusable: BLIS_ARCH_TYPE is set "
                 "to a configuration it cannot run)", bli_info_get_version_str());
        return;
    }
    bli_init();   /* before the query: BLIS 0.9 looks BLIS_ARCH_TYPE's kernels up in it */
    snprintf(g_blas_info, sizeof g_blas_info, "BLIS %s (%s; kernels: %s)", bli_info_get_version_str(),
             bli_info_get_enable_threading() ? "threaded" : "sequential, reentrant",
             bli_arch_string(bli_arch_query_id()));
}

const char *k_blas_info(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_info_init);
    return g_blas_info;
}
