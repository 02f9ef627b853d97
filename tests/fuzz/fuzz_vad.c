/* fuzz_vad.c - any bytes as the Silero VAD's model.safetensors (beside a
 * valid config.json): the loader must accept or refuse with a status (the
 * names, dtypes and shapes of its 14 tensors, finite values), never crash,
 * leak or read out of bounds; a model it accepts must run a few frames. */
#include "fuzz_common.h"
#include "base/pool.h"
#include "models/vad.h"

#include <string.h>

static const char CONFIG[] = "{\"model_type\": \"silero_vad\", \"version\": 6, \"sampling_rate\": "
                             "16000, \"frame_samples\": 512, \"context_samples\": 64}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[256];
    static ed_pool *pool;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/encdec-fuzz-vad-%d", fuzz_tmp(), (int)getpid());
        mkdir(dir, 0700);
        char p[300];
        snprintf(p, sizeof p, "%s/config.json", dir);
        FILE *f = fopen(p, "wb");
        if (!f) return 0;
        fwrite(CONFIG, 1, sizeof CONFIG - 1, f);
        fclose(f);
        if (ed_pool_new(&pool, 1)) return 0;
    }
    char p[300];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    vad_model *m = NULL;
    if (vad_load(dir, &m) == ENCDEC_OK) {
        vad_state *s = NULL;
        float pcm[2 * VAD_FRAME], probs[2];
        for (int i = 0; i < 2 * VAD_FRAME; i++) pcm[i] = (float)((i * 37) % 200 - 100) / 200.0f;
        if (vad_state_new(m, &s) == ENCDEC_OK) vad_probs(s, pool, pcm, 2, probs);
        vad_state_free(s);
        vad_free(m);
    }
    return 0;
}
