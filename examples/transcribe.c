/* transcribe.c - the smallest complete use of libencdec from another program:
 * load a Whisper model, transcribe an audio file, print each segment with
 * its times as soon as it is final, then the detected language.
 *
 *   cc transcribe.c -o transcribe $(pkg-config --cflags --libs encdec)
 *   ./transcribe ~/.cache/encdec/models/whisper-tiny.en recording.flac
 *
 * Built by CMake with find_package(encdec) (examples/CMakeLists.txt) or by
 * pkg-config as above; tests/install/test_install.sh builds it both ways
 * against an installed tree. */
#include <encdec.h>
#include <stdio.h>

static int print_segment(const encdec_segment *g, void *user) {
    (void)user;
    printf("[%7.2f --> %7.2f]%s\n", g->start, g->end, g->text);
    fflush(stdout);
    return 0;   /* nonzero would stop the transcription */
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL_DIR AUDIO_FILE\n", argv[0]);
        return 2;
    }
    encdec_model *m = NULL;
    encdec_session *s = NULL;
    encdec_result *r = NULL;
    encdec_status st = encdec_model_load(argv[1], &m);
    if (!st) {
        encdec_session_params sp = encdec_session_default_params();
        sp.n_threads = 2;
        st = encdec_session_new(m, &sp, &s);
    }
    if (!st) {
        encdec_transcribe_params tp = encdec_transcribe_default_params();
        tp.on_segment = print_segment;
        st = encdec_transcribe_file(s, argv[2], NULL, &tp, &r, NULL);
    }
    if (st)
        fprintf(stderr, "error: %s: %s\n", encdec_status_str(st), encdec_last_error());
    else
        printf("language: %s, %d segments, %s\n", encdec_result_language(r),
               encdec_result_n_segments(r), ENCDEC_VERSION);
    encdec_result_free(r);
    encdec_session_free(s);
    encdec_model_free(m);
    return st ? 1 : 0;
}
