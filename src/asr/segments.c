/* segments.c - a window's tokens to segments (see asr_internal.h). */
#include "asr/asr_internal.h"

#define TIME_PRECISION 0.02   /* seconds per timestamp step (30 s / 1500) */
#define FRAME_SECONDS 0.01    /* seconds per mel frame */
#define INPUT_STRIDE 2        /* mel frames per timestamp step */

int asr_split_segments(const int *tok, int n, int ts_begin, int seg_frames, int whole,
                       asr_split *out, int *advance, int *single_end) {
#define IS_TS(i) (tok[i] >= ts_begin)
    *single_end = n >= 2 && !IS_TS(n - 2) && IS_TS(n - 1);
    int n_seg = 0, last = 0;
    for (int i = 1; i < n; i++) {
        if (!(IS_TS(i - 1) && IS_TS(i))) continue;   /* a pair ends a segment at i */
        out[n_seg++] = (asr_split){last, i - last, (tok[last] - ts_begin) * TIME_PRECISION,
                                   (tok[i - 1] - ts_begin) * TIME_PRECISION};
        last = i;
    }
    if (n_seg > 0) {
        if (whole && !*single_end && last < n) {   /* the unfinished rest: to the content's end */
            out[n_seg++] = (asr_split){last, n - last, (tok[last] - ts_begin) * TIME_PRECISION,
                                       seg_frames * (double)MEL_HOP / MEL_SAMPLE_RATE};
            *advance = seg_frames;
        } else if (*single_end) {
            out[n_seg++] = (asr_split){last, n - last, (tok[last] - ts_begin) * TIME_PRECISION,
                                       (tok[n - 1] - ts_begin) * TIME_PRECISION};
            *advance = seg_frames;
        } else {   /* the rest is unfinished: the next window starts at the last pair */
            *advance = (tok[last - 1] - ts_begin) * INPUT_STRIDE;
        }
        return n_seg;
    }
    /* no pair: one segment for the window, up to its last timestamp if any */
    double duration = seg_frames * (double)(MEL_HOP) / MEL_SAMPLE_RATE;
    for (int i = n - 1; i >= 0; i--)
        if (IS_TS(i)) {
            if (tok[i] != ts_begin) duration = (tok[i] - ts_begin) * TIME_PRECISION;
            break;
        }
    out[0] = (asr_split){0, n, 0.0, duration};
    *advance = seg_frames;
    return 1;
#undef IS_TS
}

int asr_clamp_segments(asr_wseg *segs, int n, double limit) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        asr_wseg g = segs[i];
        if (g.start >= limit) continue;
        if (g.end > limit) g.end = limit;
        for (int k = 0; k < g.n_words; k++) {
            if (g.words[k].start > limit) g.words[k].start = limit;
            if (g.words[k].end > limit) g.words[k].end = limit;
        }
        segs[kept++] = g;
    }
    return kept;
}
