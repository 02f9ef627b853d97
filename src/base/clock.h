/* clock.h - a monotonic wall clock for the timings results report.
 *
 *   double t0 = ed_now_ms();  ...  report->decode_ms += ed_now_ms() - t0;
 */
#ifndef ED_CLOCK_H
#define ED_CLOCK_H

/* Milliseconds of CLOCK_MONOTONIC (any origin; differences only). */
double ed_now_ms(void);

#endif
