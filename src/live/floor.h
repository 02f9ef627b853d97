/* floor.h - a live stream's noise floor, for the level rule that judges
 * silence without a VAD. A room with a fan or a hum sits at -50..-30 dBFS
 * between words; a fixed threshold below that hears speech everywhere,
 * and Whisper, given the noise alone, says "Thank you." or "And so".
 *
 * The floor is the quietest 150 ms (5 frames of 30 ms, their mean power)
 * of the last 10 s fed: any speech has pauses that long within 10 s, so
 * the floor follows the room, not the voice, and rises within 10 s of a
 * noise that starts. Silence is then a frame under the floor + 8 dB (the
 * minimum of a noise's levels lies a few dB under its mean), never more
 * than -30 dBFS (speech that quiet is not told from noise by its level),
 * and never less than the caller's threshold. Pure arithmetic on samples:
 * no model, no engine. */
#ifndef ED_LIVE_FLOOR_H
#define ED_LIVE_FLOOR_H

#include <stddef.h>

#define LIVE_FLOOR_FRAME 480    /* 30 ms at 16 kHz */
#define LIVE_FLOOR_FRAMES 334   /* 10 s of them */

typedef struct {
    double pw[LIVE_FLOOR_FRAMES];   /* mean power of the last frames, a ring */
    int head, n;                    /* the next slot; frames held */
    double acc;                     /* the frame being filled: its sum of squares */
    int fill;                       /* ... and its samples */
} live_floor;

/* Adds n samples (16 kHz) to the frames. */
void live_floor_feed(live_floor *f, const float *x, size_t n);

/* The level under which a 30 ms frame is silence, in dBFS (RMS): the
 * floor + 8 dB, at most -30, and at least min_db; min_db until 3 s are fed. */
double live_floor_threshold(const live_floor *f, double min_db);

#endif
