/* av.h - FFmpeg's libavformat + libavcodec as the second decoder of
 * stream.c: what libsndfile does not read (m4a / mp4 with AAC or ALAC,
 * webm / mka with Opus or Vorbis, AC-3, WMA, ...; what phones and browsers
 * record). Built when the build finds FFmpeg (ENCDEC_HAVE_AV); without it
 * audio_av_open says that this build cannot read the format.
 *
 *   audio_av *a;  audio_av_open(&a, name, path, NULL, 0, NULL);   a file
 *   while ((got = audio_av_read(a, buf, max)) > 0) ...;   interleaved float frames
 *   audio_av_close(a);
 */
#ifndef ED_AUDIO_AV_H
#define ED_AUDIO_AV_H

#include "encdec.h"
#include <stddef.h>
#include <stdio.h>

typedef struct audio_av audio_av;

/* 1 when this build has the FFmpeg decoder. */
int audio_av_available(void);

/* Opens the first audio stream of one source: path (a file), or mem[len]
 * (borrowed; must outlive it), or spool (a FILE read from its start;
 * borrowed). ENCDEC_ERR_AUDIO naming `name` when it is not audio FFmpeg
 * can decode. */
encdec_status audio_av_open(audio_av **out, const char *name, const char *path,
                            const unsigned char *mem, size_t len, FILE *spool);
int audio_av_rate(const audio_av *a);
int audio_av_channels(const audio_av *a);
/* The container's duration in frames (0: unknown): a promise, for the
 * truncation report. */
double audio_av_frames(const audio_av *a);
/* Up to max frames, interleaved float in [-1, 1] as decoded, into dst;
 * 0 at the end, -1 on an error (recorded, naming the file). A packet the
 * decoder refuses in the middle of a file is skipped, as ffmpeg does. */
long audio_av_read(audio_av *a, float *dst, long max);
void audio_av_close(audio_av *a);

#endif
