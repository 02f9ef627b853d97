/* floor.c - a live stream's noise floor (floor.h says what it promises). */
#include "live/floor.h"

#include <math.h>

#define SMOOTH 5          /* frames averaged: 150 ms */
#define MIN_FRAMES 100    /* 3 s before the floor counts */
#define MARGIN_DB 8.0
#define MAX_DB (-30.0)

void live_floor_feed(live_floor *f, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        f->acc += (double)x[i] * x[i];
        if (++f->fill < LIVE_FLOOR_FRAME) continue;
        f->pw[f->head] = f->acc / LIVE_FLOOR_FRAME;
        f->head = (f->head + 1) % LIVE_FLOOR_FRAMES;
        if (f->n < LIVE_FLOOR_FRAMES) f->n++;
        f->acc = 0;
        f->fill = 0;
    }
}

/* The least mean power of SMOOTH successive frames held. */
static double least(const live_floor *f) {
    int first = (f->head - f->n + LIVE_FLOOR_FRAMES) % LIVE_FLOOR_FRAMES;
    double sum = 0, best = INFINITY;
    for (int i = 0; i < f->n; i++) {
        sum += f->pw[(first + i) % LIVE_FLOOR_FRAMES];
        if (i >= SMOOTH) sum -= f->pw[(first + i - SMOOTH) % LIVE_FLOOR_FRAMES];
        if (i >= SMOOTH - 1 && sum < best) best = sum;
    }
    return best / SMOOTH;
}

double live_floor_threshold(const live_floor *f, double min_db) {
    if (f->n < MIN_FRAMES) return min_db;
    double p = least(f);
    if (!(p > 1e-12)) return min_db;   /* digital silence: the floor is nothing */
    double db = 10.0 * log10(p) + MARGIN_DB;
    if (db > MAX_DB) db = MAX_DB;
    return db > min_db ? db : min_db;
}
