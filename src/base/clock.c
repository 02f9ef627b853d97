/* clock.c - see clock.h. */
#include "base/clock.h"

#include <time.h>

double ed_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
