/* fuzz_audio.c - any bytes as an audio file, through the project's own
 * loader on a memory buffer (audio_load_memory_ex: libsndfile's virtual I/O,
 * the checks, the down-mix, libsoxr's resampler, the truncation report):
 * it must accept or refuse, never crash or leak (libvorbis's own leaks on
 * malformed OGG are suppressed by name in lsan.supp); what it accepts must
 * be finite samples in [-1, 1] with a consistent report. The 1-minute cap
 * keeps a header's 1 Hz rate from asking for gigabytes of 16 kHz output, and
 * a FLAC of constant blocks from expanding 64 KB into an hour at 1 MHz (at
 * 10 minutes one such input took 41 s: legal audio, too slow to fuzz). */
#include "audio/audio.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    encdec_audio_params p = {.max_seconds = 60};
    encdec_audio_info info;
    float *pcm = NULL;
    size_t n = 0;
    if (audio_load_memory_ex(data, size, "fuzz", 16000, &p, &pcm, &n, &info) == ENCDEC_OK) {
        if (!pcm || n == 0 || info.sample_rate <= 0 || info.channels <= 0) abort();
        for (size_t i = 0; i < n; i++)
            if (!(pcm[i] >= -1.0f && pcm[i] <= 1.0f)) abort();
        if (info.truncated && !(info.expected_seconds > 0)) abort();
        free(pcm);
    } else if (pcm || n) {
        abort();
    }
    return 0;
}
