/* check.h - the test harness: value assertions that count failures.
 *
 *   CHECK(n == 3);  CHECK_EQ_INT(got, want);  CHECK_NEAR(x, 0.5, 1e-6);
 *   CHECK_STATUS(st, ENCDEC_ERR_FORMAT, "offset");   status + message substring
 *   return check_done();       prints "N passed, M failed"; exit code 1 on failure
 *
 * check_skip("why") returns 77 (ctest SKIP_RETURN_CODE).
 * CHECK_PART(part(e, x)); runs a part of a test and prints its wall time
 * ("  [part: 1.2 s]", as the server tests do): where a suite's time goes.
 */
#ifndef ED_CHECK_H
#define ED_CHECK_H

#include "encdec.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int check_pass_, check_fail_;

#define CHECK(cond) do { if (cond) check_pass_++; else { check_fail_++; \
    fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); } } while (0)

#define CHECK_EQ_INT(got, want) do { long long g_ = (long long)(got), w_ = (long long)(want); \
    if (g_ == w_) check_pass_++; else { check_fail_++; \
    fprintf(stderr, "%s:%d: %s = %lld, expected %lld\n", __FILE__, __LINE__, #got, g_, w_); } } while (0)

#define CHECK_NEAR(got, want, tol) do { double g_ = (got), w_ = (want); \
    if (fabs(g_ - w_) <= (tol)) check_pass_++; else { check_fail_++; \
    fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (tol %g)\n", __FILE__, __LINE__, #got, g_, w_, (double)(tol)); } } while (0)

#define CHECK_STR(got, want) do { const char *g_ = (got), *w_ = (want); \
    if (g_ && w_ && strcmp(g_, w_) == 0) check_pass_++; else { check_fail_++; \
    fprintf(stderr, "%s:%d: %s = \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_); } } while (0)

/* The status must equal want and the error message must contain substr. */
#define CHECK_STATUS(st, want, substr) do { encdec_status s_ = (st); const char *m_ = encdec_last_error(); \
    if (s_ == (want) && strstr(m_, (substr))) check_pass_++; else { check_fail_++; \
    fprintf(stderr, "%s:%d: %s -> %s \"%s\", expected %s containing \"%s\"\n", __FILE__, __LINE__, #st, \
            encdec_status_str(s_), m_, encdec_status_str(want), (substr)); } } while (0)

static inline double check_now_(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define CHECK_PART(call) do { double t0_ = check_now_(); call; \
    printf("  [%.*s: %.1f s]\n", (int)strcspn(#call, "("), #call, check_now_() - t0_); \
    fflush(stdout); } while (0)

static inline int check_done(void) {
    printf("%d passed, %d failed\n", check_pass_, check_fail_);
    return check_fail_ ? 1 : 0;
}

static inline int check_skip(const char *why) {
    printf("SKIP: %s\n", why);
    return 77;
}

/* Max |a - b| over n elements; *where gets the index. */
static inline double check_max_abs_diff(const float *a, const float *b, size_t n, size_t *where) {
    double m = 0;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) { m = d; w = i; if (d != d) { m = INFINITY; break; } }
    }
    if (where) *where = w;
    return m;
}

#endif
