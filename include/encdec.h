/* encdec.h - the public interface of libencdec, an inference engine for
 * encoder-decoder transformers: Whisper (speech to text), the T5 family
 * (T5, Flan-T5, mT5, umT5) and the BART family (BART, mBART, Marian /
 * OPUS-MT, M2M100 / NLLB, Pegasus: the models; Marian's and BART's
 * tokenizers so far):
 * text to text.
 *
 *   encdec_model *m;   encdec_session *s;   encdec_result *r;
 *   encdec_model_load("models/whisper-tiny.en", &m);  encdec_session_new(m, NULL, &s);
 *   encdec_transcribe(s, pcm, n_samples, NULL, &r);  puts(encdec_result_text(r));
 *
 *   encdec_model_load("models/flan-t5-small", &m);  encdec_session_new(m, NULL, &s);
 *   const char *in[] = {"translate English to German: Hello."};
 *   encdec_generate(s, in, 1, NULL, &r);  puts(encdec_result_text(r));
 *
 * Ownership: every *_new / *_load has a *_free; *_free(NULL) is a no-op.
 * Threads: a model is read-only after loading and may be shared by any number
 * of sessions on any threads. A session is used by one thread at a time; it
 * owns its caches, scratch memory and worker threads.
 * Errors: every function that can fail returns an encdec_status; the detail
 * ("model.bin: tensor encoder/conv1/weight has shape [...], expected [...]")
 * is kept per calling thread and read with encdec_last_error().
 * Parameters: every parameter struct is made by its *_default_params()
 * (or *_default_options()) function and then changed field by field
 * (encdec_model_params, encdec_session_params, encdec_audio_params,
 * encdec_engine_params and encdec_format_options also take all zeros as
 * their defaults). New fields are only ever appended, with a default that
 * keeps the earlier behaviour, so a program that starts from the defaults
 * compiles and runs unchanged against a newer header. The structs' sizes
 * are part of the binary interface: a release that grows one changes the
 * library's SONAME (libencdec.so.0 -> .1), so an old binary never meets a
 * larger struct. ENCDEC_VERSION_MAJOR/MINOR/PATCH name the header's release.
 */
#ifndef ENCDEC_H
#define ENCDEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENCDEC_VERSION "0.1.0"
#define ENCDEC_VERSION_MAJOR 0
#define ENCDEC_VERSION_MINOR 1
#define ENCDEC_VERSION_PATCH 0

/* The library's exported functions (the shared library exports these and
 * nothing else). */
#if defined(_WIN32)
#define ENCDEC_API
#else
#define ENCDEC_API __attribute__((visibility("default")))
#endif

typedef enum {
    ENCDEC_OK = 0,
    ENCDEC_ERR_ARG,         /* an argument is out of range or NULL */
    ENCDEC_ERR_NOMEM,       /* an allocation failed */
    ENCDEC_ERR_IO,          /* a file is missing or cannot be read */
    ENCDEC_ERR_NO_MODEL,    /* a directory holds no model this library reads */
    ENCDEC_ERR_FORMAT,      /* a file is truncated, corrupt or malformed */
    ENCDEC_ERR_DTYPE,       /* a tensor has a dtype that is unknown or not allowed */
    ENCDEC_ERR_SHAPE,       /* a tensor is missing or has the wrong shape */
    ENCDEC_ERR_CONFIG,      /* a configuration value is missing or unusable */
    ENCDEC_ERR_AUDIO,       /* audio is unreadable, empty or too long */
    ENCDEC_ERR_TOKENIZER,   /* tokenizer files are missing or inconsistent */
    ENCDEC_ERR_THREADS,     /* worker threads could not be started */
    ENCDEC_ERR_CANCELLED,   /* a callback asked to stop */
    ENCDEC_ERR_DEVICE,      /* a GPU is missing, or its driver or library failed */
} encdec_status;

/* A static name for a status ("invalid argument", ...). Never NULL. */
ENCDEC_API const char *encdec_status_str(encdec_status st);

/* The detail message of the last failed call on this thread, or "" if the
 * last call succeeded. Valid until the next encdec call on this thread. */
ENCDEC_API const char *encdec_last_error(void);

/* A static description of the build: version, the kernel set this CPU
 * gets by default (ENCDEC_ISA_AUTO) and the BLAS used, e.g. "encdec 0.1.0,
 * kernels avx2 (this CPU: avx2), BLIS 0.9.0 (sequential, reentrant;
 * kernels: zen3)". */
ENCDEC_API const char *encdec_build_info(void);

/* ---- model: read-only, shareable ---------------------------------------- */

typedef struct encdec_model encdec_model;

/* Loads a model from a directory (Hugging Face safetensors layout, or a
 * CTranslate2 / faster-whisper directory for Whisper) or a single
 * .safetensors file whose directory holds config.json and the tokenizer.
 * The family comes from config.json's model_type ("whisper", "t5", "mt5",
 * "umt5"; a CTranslate2 directory is Whisper). Weights are memory-mapped
 * where they can be used as stored, converted once otherwise.
 * On success *out is owned by the caller (encdec_model_free). */
ENCDEC_API encdec_status encdec_model_load(const char *path, encdec_model **out);
ENCDEC_API void encdec_model_free(encdec_model *m);

/* How the weight matrices are held and multiplied (norms, biases,
 * embeddings' positions and the convolution stay f32 in every mode). */
typedef enum {
    ENCDEC_COMPUTE_F32 = 0,  /* as stored (f32, f16 or bf16), f32 arithmetic: the reference */
    ENCDEC_COMPUTE_BF16,     /* matrices converted to bf16 at load; products round their
                                inputs to bf16 and accumulate in f32 (AMX or AVX512_BF16
                                where the CPU has them; without AMX, decode steps keep f32
                                inputs) */
    ENCDEC_COMPUTE_INT8,     /* matrices quantised at load to int8 with one scale per output
                                channel; each product quantises its input rows (one scale
                                per row) and sums in int32 (AVX512_VNNI where available) */
} encdec_compute;

/* The kernel sets (instruction sets) encdec's own kernels may use, lowest
 * to highest; every kernel has a version for each set up to the CPU's (a
 * kernel without one for a set runs the next lower one). The model's
 * sessions run the best version at or below the one asked for; BLAS keeps
 * its own choice. For tests, benchmarks and working around a CPU fault:
 * every set gives the same results within the kernels' stated tolerances. */
typedef enum {
    ENCDEC_ISA_AUTO = 0,  /* the best set this CPU has (default) */
    ENCDEC_ISA_C,         /* portable C only */
    ENCDEC_ISA_AVX2,      /* x86-64: AVX2 + FMA + F16C */
    ENCDEC_ISA_AVX512,    /* x86-64: AVX-512 F/BW/VL/DQ (+ VNNI, BF16 where present) */
    ENCDEC_ISA_AMX,       /* x86-64: AMX-BF16 tiles (bf16 mode), where Linux grants them */
    ENCDEC_ISA_NEON,      /* aarch64: NEON (AVX2's level there) */
} encdec_isa;

/* Where a model's sessions and engines run. */
typedef enum {
    ENCDEC_DEVICE_CPU = 0,   /* this CPU's kernels (default) */
    ENCDEC_DEVICE_CUDA,      /* an NVIDIA GPU (a build with -DENCDEC_CUDA=ON; every family):
                                weights uploaded once at load (f32 mode: f32; bf16 mode: bf16
                                with f32 accumulation; int8 mode: int8 rows with their scales,
                                the CPU's int8 products), every cache and activation in its
                                memory */
} encdec_device;
/* "cpu", "cuda" or "cuda:N" into *dev and *index (0 without ":N"); 0, or
 * -1 for another spelling (then nothing is written). */
ENCDEC_API int encdec_device_parse(const char *name, encdec_device *dev, int *index);
/* How many devices of a kind this build and machine have: 1 for the CPU;
 * CUDA GPUs the driver shows (0 in a build without the CUDA backend, or
 * with no driver). */
ENCDEC_API int encdec_device_count(encdec_device dev);

typedef struct {
    encdec_compute compute;
    encdec_isa isa;       /* kernel-set ceiling; one this CPU lacks is an ENCDEC_ERR_ARG */
    int no_weight_check;  /* 1 skips the load-time check of every weight: a NaN or Inf, or
                             a value over 500 times its tensor's RMS (a flipped exponent
                             bit), is ENCDEC_ERR_FORMAT naming the tensor and element; it
                             reads every weight once at load (+19 ms for tiny.en's 75 MB,
                             +39 ms for base's 145 MB on a 2-core AVX-512 Xeon VM) */
    encdec_device device;   /* ENCDEC_DEVICE_CUDA: every family, in every compute mode
                               (int8: the CPU's int8 products, bit for bit) */
    int device_index;       /* which GPU, 0.. */
    int no_logit_screen;    /* 1: no screened logits. By default a text model (T5 or BART
                               family) in the f32 compute mode on a CPU with AVX2, AVX-512
                               or NEON, whose output projection has 2^20 elements or more,
                               keeps an int8 copy of it (a scale per row: a quarter of an
                               f32 matrix's bytes, whose pages are then mostly not read;
                               half of a matrix stored in f16 or bf16) that
                               greedy steps (a session's of up to 4 sequences, an
                               engine's of any) read instead: the same
                               tokens (the full logits of every token that could win are
                               computed), their log-probs within the screen's bound of
                               the full ones (0.2-0.5 on NLLB- and opus-mt-shaped models,
                               a worst case; 1-2e-4 measured). The environment's
                               ENCDEC_LOGIT_SCREEN_MIN changes the 2^20 (tests: 0) */
} encdec_model_params;
/* f32, auto, checked, on the CPU; the environment's ENCDEC_DEVICE ("cuda",
 * "cuda:1") changes the default device (and so encdec_model_load's). */
ENCDEC_API encdec_model_params encdec_model_default_params(void);

/* "auto", "c", "avx2", "avx512", "amx", "neon"; NULL for another value. */
ENCDEC_API const char *encdec_isa_name(encdec_isa isa);
/* The set of a name (as above), or -1. */
ENCDEC_API int encdec_isa_parse(const char *name);
/* Optional extensions inside a set, which the kernels use where the CPU has
 * them: "avx-vnni" (x86-64, AVX2 set: the int8 product), "dotprod" and
 * "bf16" (aarch64: the int8 and bf16 products). For tests and comparisons
 * (an AVX2 CPU without AVX-VNNI, say): turns off, for the whole process and
 * every model, the extensions in a comma-separated list of these names; ""
 * or NULL turns them all back on. Results stay the same bit for bit. 0, or
 * -1 for an unknown name (then nothing changes). */
ENCDEC_API int encdec_isa_disable_ext(const char *names);

/* encdec_model_load with options; params NULL = defaults (f32). */
ENCDEC_API encdec_status encdec_model_load_ex(const char *path, const encdec_model_params *params,
                                              encdec_model **out);

typedef struct {
    const char *family;       /* "whisper", "t5" or "bart" (the BART family) */
    const char *model_type;   /* config.json's: "whisper", "t5", "mt5", "umt5", "bart", "mbart",
                                 "marian", "m2m_100", "pegasus" */
    const char *format;       /* "safetensors" or "ctranslate2" */
    int n_mels;               /* Whisper: mel bands the encoder expects (text models: 0) */
    int n_audio_ctx;          /* Whisper: encoder positions per 30 s window (1500) */
    int n_text_ctx;           /* Whisper: decoder positions (448); T5, BART: most input tokens */
    int d_model, n_enc_layer, n_dec_layer, n_head;
    int n_vocab;
    int multilingual;         /* 1 for multilingual checkpoints */
    size_t weight_bytes;      /* bytes of weights as used for compute */
    const char *compute;      /* "f32", "bf16" or "int8" (encdec_compute) */
    const char *isa;          /* the kernel set its sessions run: "c", "avx2", "avx512", "amx",
                                 "neon" (the best of the CPU's up to the one asked for) */
    const char *device;       /* "cpu", or the GPU in words ("NVIDIA H200, sm_90, 140 GiB") */
    /* A one-pair translation model's languages as its tokenizer_config.json
     * names them (Marian / OPUS-MT's source_lang and target_lang: "en", "de");
     * NULL when it names none. Models with language codes list them with
     * encdec_model_language. */
    const char *source_language, *target_language;
    /* A CTranslate2 conversion whose config adds <s> before / </s> after
     * a token input (add_source_bos / add_source_eos: ct2-marian-converter
     * and ct2-opus-mt-converter set the second), as CTranslate2's
     * translate_batch does and encdec.Translator does; the ids calls take
     * the input as the model takes it, these included. 0 otherwise. */
    int source_bos, source_eos;
} encdec_model_info;

/* Fills *info; the strings are static or owned by the model. */
ENCDEC_API void encdec_model_get_info(const encdec_model *m, encdec_model_info *info);

/* The code of the model's i-th language, NULL past the end: Whisper's ("en",
 * "zh", ... in the tokenizer's order; English-only models: "en" alone); a
 * translation model's, as its tokenizer spells them (NLLB "fra_Latn",
 * mBART "fr_XX", M2M100 "fr", a multilingual Marian model's >>fr<< as "fr");
 * none for T5, BART and Pegasus. */
ENCDEC_API const char *encdec_model_language(const encdec_model *m, int i);
/* The index of a language among the model's, or -1: Whisper's by code or
 * English name ("de", "German"; case ignored); a translation model's by
 * code or token spelling ("fr", "__fr__"). */
ENCDEC_API int encdec_model_find_language(const encdec_model *m, const char *name);
/* A text model's tokens by their spelling in its tokenizer ("\u2581Hello",
 * "eng_Latn", "</s>"; BART's byte-level "\u0120the"), as CTranslate2's token
 * lists spell them: the id, or -1 (also for Whisper models); and an id's
 * spelling, NULL out of range. Borrowed from the model. */
ENCDEC_API int encdec_model_token_id(const encdec_model *m, const char *token);
ENCDEC_API const char *encdec_model_token(const encdec_model *m, int id);
/* An input token's id: the encoder's vocabulary where it is the model's own
 * (a CTranslate2 directory with source_ and target_vocabulary; the ids
 * calls take such ids as the input, encdec_model_token_id's as the target
 * prefix), else encdec_model_token_id's. -1: none. */
ENCDEC_API int encdec_model_source_token_id(const encdec_model *m, const char *token);
/* The English name, lower case, of a Whisper language given by code or
 * name ("de" -> "german"), or NULL when there is no such language. */
ENCDEC_API const char *encdec_language_name(const char *code);
/* The code of Whisper's i-th language (0: "en", 1: "zh", ... in the
 * tokenizer's order, 100 in all), NULL past the end: the languages any
 * multilingual model knows, for checking an argument before loading one. */
ENCDEC_API const char *encdec_language_code(int i);

/* ---- session: per request ----------------------------------------------- */

typedef enum {
    ENCDEC_KV_FULL = 0,  /* self cache + cross cache computed once per window */
    ENCDEC_KV_SELF,      /* self cache; cross K/V recomputed every step */
    ENCDEC_KV_NONE,      /* no cache: every step recomputes the whole prefix */
} encdec_kv_mode;

/* Element type of the cross-attention cache: the bytes a decode step
 * streams besides the weights. */
typedef enum {
    ENCDEC_KV_F32 = 0,   /* exact */
    ENCDEC_KV_F16,       /* IEEE half: half the bytes */
    ENCDEC_KV_BF16,      /* bfloat16: half the bytes, f32's range */
} encdec_kv_type;

typedef struct {
    int n_threads;            /* worker threads incl. the caller: 1..256; 0 = 1 */
    encdec_kv_type cross_kv;  /* cross-attention cache storage (default f32) */
} encdec_session_params;
ENCDEC_API encdec_session_params encdec_session_default_params(void);   /* 1 thread, f32 cache */

typedef struct encdec_session encdec_session;

/* Creates a session bound to m (borrowed: m must outlive the session). The
 * caches and scratch are allocated here, once, for the model's limits.
 * params may be NULL for defaults. */
ENCDEC_API encdec_status encdec_session_new(const encdec_model *m,
                                            const encdec_session_params *params,
                                            encdec_session **out);
ENCDEC_API void encdec_session_free(encdec_session *s);

/* ---- audio -------------------------------------------------------------- */

/* Reads WAV, FLAC, OGG/Vorbis or MP3 (anything libsndfile reads; and, in a
 * build with FFmpeg, what it decodes: m4a / mp4 AAC, webm Opus, ...), down-mixes
 * to mono and resamples to 16 kHz. max_seconds > 0 rejects longer audio
 * (0 = no limit). On success *pcm (caller frees with encdec_free) holds
 * *n_samples samples in [-1, 1]. */
ENCDEC_API encdec_status encdec_audio_load(const char *path, double max_seconds,
                                           float **pcm, size_t *n_samples);
/* The same from an encoded file held in memory (data[len], e.g. read from
 * a pipe or an upload); messages call it "audio data". */
ENCDEC_API encdec_status encdec_audio_load_memory(const void *data, size_t len, double max_seconds,
                                                  float **pcm, size_t *n_samples);
ENCDEC_API void encdec_free(void *p);

/* Options of encdec_audio_load_ex; zeros are the defaults. */
typedef struct {
    double max_seconds;      /* > 0: longer audio is ENCDEC_ERR_AUDIO (0: no limit) */
    int strict;              /* 1: a file that ends before its header says (a cut download,
                                a recording still being written) is ENCDEC_ERR_AUDIO; 0: it
                                is read up to where it ends and info->truncated says so */
    size_t max_stream_bytes; /* streams (path "-" = standard input, pipes, FIFOs, character
                                devices) are copied whole to an unlinked temporary file
                                (into memory if none can be made), at most this many
                                bytes (0: 2 GiB); more is ENCDEC_ERR_AUDIO */
    double fifo_wait_s;      /* a named FIFO that gives no data for this long (no writer)
                                is ENCDEC_ERR_IO (0: 10 s) */
} encdec_audio_params;
ENCDEC_API encdec_audio_params encdec_audio_default_params(void);   /* all zeros */

/* What encdec_audio_load_ex read. */
typedef struct {
    int sample_rate, channels;   /* the file's */
    double seconds;              /* the audio read */
    int truncated;               /* 1: the file ends before its header says */
    double expected_seconds;     /* truncated: the length the header promised */
    int stream;                  /* 1: read as a stream (standard input, pipe, FIFO, device) */
} encdec_audio_info;

/* encdec_audio_load with options (params NULL = defaults) and a report
 * (info may be NULL). path "-" reads standard input (refused when it is a
 * terminal); a block device, a directory or an empty file is refused with
 * a message that says so. */
ENCDEC_API encdec_status encdec_audio_load_ex(const char *path, const encdec_audio_params *params,
                                              float **pcm, size_t *n_samples,
                                              encdec_audio_info *info);

/* The same audio a piece at a time, without holding all of it (a recording
 * of any length in bounded memory; encdec stream's files): the formats,
 * params and refusals of encdec_audio_load_ex, 16 kHz mono.
 *   encdec_audio_reader *r;  encdec_audio_reader_open(path, NULL, &r);
 *   while (!encdec_audio_reader_read(r, buf, cap, &got) && got) ...;
 *   encdec_audio_reader_close(r);
 * read: up to cap samples into dst, *got 0 at the end; info: what was read
 * so far (seconds, truncated once the end came short of the header's). */
typedef struct encdec_audio_reader encdec_audio_reader;
ENCDEC_API encdec_status encdec_audio_reader_open(const char *path,
                                                  const encdec_audio_params *params,
                                                  encdec_audio_reader **out);
ENCDEC_API encdec_status encdec_audio_reader_read(encdec_audio_reader *r, float *dst, size_t cap,
                                                  size_t *got);
ENCDEC_API void encdec_audio_reader_info(const encdec_audio_reader *r, encdec_audio_info *out);
ENCDEC_API void encdec_audio_reader_close(encdec_audio_reader *r);

/* ---- speech detection (Silero VAD) ----------------------------------------- */

/* Silero VAD v6 (the network faster-whisper runs before Whisper): which
 * stretches of a recording are speech. Loaded once, read-only, shareable
 * by any number of threads; a transcription given one decodes only the
 * speech (encdec_transcribe_params.vad).
 *
 *   encdec_vad *v;  encdec_vad_load("~/.cache/encdec/models/silero-vad-v6", &v);
 *   encdec_span *sp;  int n;
 *   encdec_vad_speech(v, pcm, n_samples, NULL, 2, &sp, &n);   ... encdec_free(sp);
 *   encdec_vad_free(v);
 *
 * The model is installed by scripts/fetch-model.sh vad (converted from the
 * ONNX graph faster-whisper 1.2.1 ships). */
typedef struct encdec_vad encdec_vad;

/* faster-whisper's VadOptions, the same defaults (all zeros is not valid:
 * start from encdec_vad_default_params()). */
typedef struct {
    float threshold;              /* a 32 ms frame at or above is speech (0.5) */
    float neg_threshold;          /* below it silence; NAN (default): threshold - 0.15, >= 0.01 */
    int min_speech_duration_ms;   /* shorter spans are dropped (0) */
    float max_speech_duration_s;  /* longer ones are split at their last pause over 98 ms, else
                                     just before the limit (INFINITY) */
    int min_silence_duration_ms;  /* silence this long ends a span (2000) */
    int speech_pad_ms;            /* added on each side of a span (400) */
} encdec_vad_params;
ENCDEC_API encdec_vad_params encdec_vad_default_params(void);

/* A span of speech: samples [start, end) of 16 kHz audio. */
typedef struct {
    size_t start, end;
} encdec_span;

/* The model directory at path (model.safetensors, config.json). */
ENCDEC_API encdec_status encdec_vad_load(const char *path, encdec_vad **out);
ENCDEC_API void encdec_vad_free(encdec_vad *v);
/* The speech spans of pcm[n_samples] (16 kHz mono) with params (NULL:
 * defaults), faster-whisper's get_speech_timestamps: *out (encdec_free; NULL
 * when none) and *n_out. n_threads (1..256) run the network's products. */
ENCDEC_API encdec_status encdec_vad_speech(const encdec_vad *v, const float *pcm, size_t n_samples,
                                           const encdec_vad_params *params, int n_threads,
                                           encdec_span **out, int *n_out);
/* The same for an audio file (any format and rate encdec_audio_load reads;
 * audio: its limits, may be NULL), read in blocks, never held whole:
 * *n_samples (may be NULL) the recording's length at 16 kHz, which the
 * spans index. */
ENCDEC_API encdec_status encdec_vad_speech_file(const encdec_vad *v, const char *path,
                                                const encdec_audio_params *audio,
                                                const encdec_vad_params *params, int n_threads,
                                                encdec_span **out, int *n_out, size_t *n_samples);
/* The speech probability of every 32 ms frame (512 samples; the last one
 * zero-padded): *probs (encdec_free), *n_frames. */
ENCDEC_API encdec_status encdec_vad_probs(const encdec_vad *v, const float *pcm, size_t n_samples,
                                          int n_threads, float **probs, size_t *n_frames);

/* ---- the language of a text (langdetect, lexilang) --------------------------- */

/* Which language a text is in, as LibreTranslate's detectors say: langdetect's
 * character n-gram profiles (55 languages; its detect_langs() at the seed
 * LibreTranslate fixes, probability for probability) and lexilang's word
 * lists (46 languages; LibreTranslate asks it first for texts under 20
 * characters). Loaded once, read-only, shareable by any number of threads.
 *
 *   encdec_langid *l;  encdec_langid_load("~/.cache/encdec/models/langdetect", &l);
 *   encdec_text_language g[3];  int n;
 *   encdec_langid_detect(l, "Ceci est une phrase.", g, 3, &n);   g[0]: "fr", 0.99...
 *   encdec_langid_free(l);
 *
 * Installed by scripts/fetch-model.sh langid (langdetect 1.0.9's profiles,
 * lexilang 1.0.7's words, from PyPI). */
typedef struct encdec_langid encdec_langid;

typedef struct {
    const char *language;   /* the detector's code ("en", "zh-cn"); the model's storage */
    double probability;     /* 0..1 */
} encdec_text_language;

/* The directory scripts/fetch-model.sh langid installs (profiles/,
 * messages.properties, words.tsv, weights.tsv). */
ENCDEC_API encdec_status encdec_langid_load(const char *dir, encdec_langid **out);
ENCDEC_API void encdec_langid_free(encdec_langid *l);
/* langdetect's detect_langs(text) (UTF-8): the languages whose probability
 * is above 0.1, most likely first, at most n_max of them into out, their
 * number *n_out; 0 when no n-gram of the text is known (langdetect's "No
 * features in text"). Not UTF-8 is ENCDEC_ERR_ARG. */
ENCDEC_API encdec_status encdec_langid_detect(const encdec_langid *l, const char *text,
                                              encdec_text_language *out, int n_max, int *n_out);
/* lexilang's detect(text, languages): the language most of the text's words
 * belong to (ties: the most spoken), among allow[0..n_allow) (NULL: all);
 * *found 0 when the lists know no word of it. out->probability is 0.9, over
 * the number of languages tied. */
ENCDEC_API encdec_status encdec_langid_words(const encdec_langid *l, const char *text,
                                             const char *const *allow, int n_allow,
                                             encdec_text_language *out, int *found);

/* ---- transcription (Whisper) -------------------------------------------- */

typedef struct encdec_result encdec_result;

typedef struct {
    int id;              /* token id */
    float logprob;       /* log-probability under the filtered distribution */
    const char *text;    /* the token's text (may be a partial UTF-8 sequence) */
    int window;          /* index of the 30 s window it belongs to */
} encdec_token;

/* A word of a segment (word_timestamps). */
typedef struct {
    const char *word;    /* UTF-8, its leading space and attached punctuation included */
    double start, end;   /* seconds of the recording */
    float probability;   /* mean probability of its tokens */
} encdec_word;

/* A stretch of speech between two timestamps (openai-whisper's segment). */
typedef struct {
    int id;                       /* 0, 1, ... in time order */
    int seek;                     /* first mel frame (10 ms) of the window that produced it */
    double start, end;            /* seconds of the recording */
    const char *text;             /* UTF-8, usually with a leading space */
    int n_tokens;
    const encdec_token *tokens;   /* [n_tokens] timestamp tokens included */
    float temperature;            /* of the decode that produced it (> 0: after fallback) */
    float avg_logprob;            /* of its window's decode: sum of log-probs / (tokens + 1) */
    float compression_ratio;      /* of its window's text (zlib) */
    float no_speech_prob;         /* probability of <|nospeech|> at its window's start */
    int n_words;
    const encdec_word *words;     /* [n_words] with word_timestamps, else NULL */
    int all_failed;               /* every temperature failed its window's thresholds: this
                                     decode is the one kept (fallback_keep_last), its
                                     temperature the one it was decoded at */
} encdec_segment;

/* Called with each segment as soon as it is final (pointers valid during
 * the call only); nonzero stops the transcription (ENCDEC_ERR_CANCELLED). */
typedef int (*encdec_segment_fn)(const encdec_segment *segment, void *user);
/* Called after each window: how far into the audio the transcription is. */
typedef void (*encdec_progress_fn)(double done_seconds, double total_seconds, void *user);
/* Called once, before the first segment, when the language is known: its
 * code ("en", ...) and probability (detected: the detection's; given, or an
 * English-only model: 1). The code is static. */
typedef void (*encdec_language_fn)(const char *code, float probability, void *user);

typedef struct {
    encdec_kv_mode kv_mode;
    const char *language;  /* code ("de") or English name ("German"); NULL: detected from the
                              first 30 s on multilingual models, "en" on English-only ones */
    int translate;         /* 1 = task translate (multilingual models only) */
    int max_tokens;        /* generated tokens per 30 s window, 1..448; 0 = 224 */
    int beam_size;         /* 0 or 1 = greedy; 2..16 = beam search at temperature 0
                              (openai-whisper's rules, with patience) */
    int timestamps;        /* 1 (default): timestamp tokens, segments, and each window starting
                              where the last complete segment ended; 0: <|notimestamps|>,
                              one segment per window, consecutive 30 s windows (with
                              word_timestamps the next window starts at the last word's end,
                              openai-whisper's rule, unless whole_windows) */
    float patience;        /* beam search: > 0; 1 (default) = plain beam search */
    int best_of;           /* candidates sampled at temperature > 0, 1..16 (default 5) */
    float temperature;     /* the first temperature, 0..1 (default 0) */
    float temperature_increment;  /* added after each failed decode, up to 1.0 (default 0.2);
                                     0 = no fallback */
    float compression_ratio_threshold;  /* a decode whose text compresses better than this failed
                                           (default 2.4); NAN = never */
    float logprob_threshold;      /* one whose average log-probability is lower failed (-1);
                                     NAN = never */
    float no_speech_threshold;    /* a window whose <|nospeech|> probability is higher, with a
                                     failed log-probability, is silence and skipped (0.6);
                                     NAN = never */
    int condition_on_previous_text;  /* 1 (default): the text so far is the next window's prompt
                                        (reset after a decode above temperature 0.5) */
    const char *initial_prompt;   /* UTF-8 text before the first window (vocabulary, style) */
    const char *prefix;           /* UTF-8 text the transcript starts with (first window; after
                                     <|0.00|> with timestamps, as faster-whisper places it) */
    const double *clip_timestamps;  /* [n_clip_timestamps] seconds: start, end, start, ...;
                                       an odd count ends at the end of the audio */
    int n_clip_timestamps;
    int word_timestamps;          /* 1: each segment's words with their times */
    const char *prepend_punctuations;  /* NULL: "\"'“¿([{-" join the next word */
    const char *append_punctuations;   /* NULL: "\"'.。,，!！?？:：”)]}、" join the previous one */
    int loop_detection;           /* 1 (default): a decode that starts repeating itself stops
                                     where that cannot change what is transcribed or skipped
                                     (it fails as the whole decode would); 0: every decode runs
                                     to its end. The same output either way, faster with it */
    float silence_threshold_db;   /* a window quieter than this (RMS in dBFS; default -60)
                                     whose <|nospeech|> probability is above no_speech_threshold
                                     is skipped after the first step, without decoding (or
                                     hallucinating on) it; NAN = never (openai-whisper's rule
                                     alone). Windows of digital silence are always skipped */
    uint64_t seed;                /* sampling at temperature > 0 */
    encdec_segment_fn on_segment; /* may be NULL */
    encdec_progress_fn on_progress;   /* may be NULL */
    void *user;                   /* passed to the callbacks */
    encdec_language_fn on_language;   /* may be NULL */
    int fallback_keep_last;       /* when every temperature fails a window: 0 (default) keeps
                                     the attempt with the highest average log-probability
                                     among those under the compression threshold, else among
                                     all (faster-whisper); 1 keeps the last (openai-whisper) */
    const encdec_vad *vad;        /* not NULL: only the speech this VAD finds is decoded
                                     (faster-whisper's vad_filter): its spans are put end to
                                     end, transcribed, and every time mapped back to the
                                     recording's; ignored when clip_timestamps are given.
                                     Borrowed for the call (the engine: until the request
                                     ends). A file is read in blocks as without it (the
                                     VAD's pass, then the speech through its spans) */
    encdec_vad_params vad_params; /* the VAD's options (default: faster-whisper's) */
    const encdec_span *speech;    /* not NULL: the speech spans to decode, as vad's would be
                                     (from encdec_vad_speech, or the caller's own: samples,
                                     increasing, not overlapping); vad is then not run */
    int n_speech;                 /* their count (0 with speech set: nothing is speech) */
    const char *hotwords;         /* faster-whisper's hotwords: UTF-8 text put in every window's
                                     prompt after <|startofprev|>, before the previous text
                                     (its first 223 tokens), except in a window that has a
                                     prefix */
    float repetition_penalty;     /* 1 (default): off; > 0: faster-whisper's (CTranslate2's):
                                     the logit of every token a decode has generated is
                                     divided by it when positive, multiplied when negative */
    int no_repeat_ngram_size;     /* 0 (default): off; n > 0: a decode never repeats an n-gram
                                     of its own tokens */
    float hallucination_silence_threshold;  /* NAN (default): off; seconds, with
                                     word_timestamps: a segment whose words look made up
                                     (improbable, too short or too long) with more silence
                                     than this around it ends its window, which resumes
                                     after it (openai-whisper's and faster-whisper's rule) */
    float chunk_length;           /* seconds of audio per window, 1..30; 0 (default): 30.
                                     The window's log-mel is padded to 30 s (faster-whisper's
                                     chunk_length) */
    int language_detection_segments;  /* windows language detection may read (default 1) */
    float language_detection_threshold;   /* a window whose most likely language is above this
                                     decides at once; else the language most windows put first
                                     (default 0.5; faster-whisper's rule) */
    int multilingual;             /* 1: every window detects its own language (code-switching
                                     speech; multilingual models) */
    int detect_language_only;     /* 1: stop once the language is known: the result has the
                                     language and its probabilities, and no segments */
    const int *initial_prompt_tokens;  /* [n_initial_prompt_tokens] token ids before the
                                     first window, as they are (faster-whisper's initial_prompt
                                     as ids); with initial_prompt set, an error */
    int n_initial_prompt_tokens;
    int whole_windows;            /* 1: every window moves on by its whole length, its
                                     unfinished last segment kept (ending where its audio
                                     ends): no window starts inside another. For audio of one
                                     window or less (a live session's buffer) that is one
                                     decode, where openai-whisper's rule (0, the default:
                                     the next window starts at the last complete segment, or
                                     with word times at the last word's end) decodes the
                                     audio after the last word again in a second window.
                                     hallucination_silence_threshold's cut still resumes
                                     after the segment it drops */
    float min_text_rate;          /* without timestamps: a window of 5 s or more whose decode
                                     has fewer text tokens than this per second of its audio
                                     stopped early (Whisper can end its text at a pause and
                                     drop the speech after it) and is decoded again with
                                     timestamps, the rest of its audio in the windows after
                                     it (timestamps mode's rule; the segments have times).
                                     0 (the default): off, as openai-whisper; the CLI and the
                                     Python BatchedInferencePipeline use 1 when batching */
} encdec_transcribe_params;

/* Defaults: openai-whisper's transcribe(): full caches, language detected
 * (multilingual) or English, timestamps, greedy at temperature 0 with
 * fallback to 0.2 ... 1.0 (best of 5 samples), thresholds 2.4 / -1 / 0.6,
 * conditioning on previous text, no word times; loop detection on; a
 * window whose every temperature fails keeps faster-whisper's choice. */
ENCDEC_API encdec_transcribe_params encdec_transcribe_default_params(void);

typedef struct {
    double mel_ms, encoder_ms, decode_ms;  /* wall time spent in each stage */
    int n_windows;       /* 30 s windows processed (text models: 0) */
    int n_tokens;        /* generated tokens (prompt excluded, end-of-text included) */
    int n_steps;         /* decoder passes (one per generated position, for all sequences) */
    double align_ms;     /* word alignment */
    int n_encodes;       /* encoder passes: one per window (and one for language detection
                            when its window differs), whatever the re-decodes */
    int n_decodes;       /* window decodes, fallback re-decodes included */
    int n_fallbacks;     /* windows decoded more than once */
    int n_loops;         /* decodes stopped by the loop detector */
    double audio_seconds;  /* length of the audio transcribed */
    int n_input_tokens;    /* generation: tokens of the inputs (</s> included) */
    double speech_seconds; /* with a VAD: the speech it kept (what was decoded); else 0 */
    double vad_ms;         /* with a VAD: its time */
} encdec_timings;

/* One output sequence: a transcript, or one generation for one input. */
typedef struct {
    int input;                    /* index of the input it answers (0 for a transcript) */
    int rank;                     /* 0 = best (beam search and several returns) */
    const char *text;             /* UTF-8, special tokens left out */
    float score;                  /* greedy / sampling: sum of token log-probs;
                                     beam search: the length-normalised beam score */
    int n_tokens;
    const encdec_token *tokens;   /* [n_tokens] */
} encdec_sequence;

/* Transcribes 16 kHz mono PCM in [-1, 1] (n_samples > 0): the whole
 * recording, window after window (openai-whisper's long-form algorithm).
 * The result holds the segments, one sequence with the whole text and
 * every token, the language, and timings. params may be NULL.
 * On success *out is owned by the caller (encdec_result_free). Errors:
 * ENCDEC_ERR_ARG naming a bad parameter (an unknown language lists the
 * codes), ENCDEC_ERR_AUDIO, ENCDEC_ERR_CANCELLED when on_segment stopped it. */
ENCDEC_API encdec_status encdec_transcribe(encdec_session *s, const float *pcm, size_t n_samples,
                                           const encdec_transcribe_params *params,
                                           encdec_result **out);

/* Transcribes the audio file at path (read as encdec_audio_load_ex reads it:
 * any format, "-" for standard input, streams, the truncation report)
 * without ever holding the recording: it is decoded twice, block by block
 * (a first pass finds its length and the log-mel's normalisation, the
 * second feeds the windows), so memory is bounded by the 30 s window
 * whatever the length (streams and standard input: their encoded bytes are
 * held). The same result as encdec_audio_load + encdec_transcribe. audio
 * and params may be NULL; info (may be NULL) gets what was read. */
ENCDEC_API encdec_status encdec_transcribe_file(encdec_session *s, const char *path,
                                                const encdec_audio_params *audio,
                                                const encdec_transcribe_params *params,
                                                encdec_result **out,
                                                encdec_audio_info *info);

/* ---- the engine: many requests, one model, shared decode steps ---------- */

/* An engine serves many transcriptions of one Whisper model at once: each
 * request runs the long-form algorithm of encdec_transcribe (windows,
 * fallback, word times) on a thread of its own, and every decoder step of
 * all the requests being decoded is ONE pass of the model (their sequences
 * as rows, each reading its own audio's cross cache); a new request's
 * encoder runs between two steps of the others. A request's result is the
 * same, token for token, whatever else the engine is running, and the
 * same as a session's (encdec_transcribe) for the same parameters.
 *
 *   encdec_engine *e;  encdec_engine_new(model, NULL, &e);
 *   encdec_request *q;  encdec_engine_transcribe_file(e, "a.wav", NULL, &tp, &q);   returns at once
 *   ...  encdec_request_wait(q, &result);  encdec_request_free(q);
 *   encdec_engine_free(e);
 *
 * Submitting, waiting, polling and cancelling are thread-safe: any thread
 * may submit into one engine. tp's callbacks (on_segment, on_progress) run
 * on the request's own thread. */
typedef struct encdec_engine encdec_engine;
typedef struct encdec_request encdec_request;

typedef struct {
    int n_threads;            /* the one pool every pass runs on: 1..256 (0: 1) */
    int max_active;           /* requests decoding at once, 1..256 (0: 8); later ones wait
                                 their turn in order */
    encdec_kv_type cross_kv;  /* the cross caches' element type (one per active request) */
    int max_new_tokens;       /* text models: the most tokens a request may generate, 1..4096
                                 (0: 512); the BART family: at most max_position_embeddings - 1
                                 (0: 512 or that) */
} encdec_engine_params;
/* 1 thread, 8 active requests, f32 cross caches, max_new_tokens 0 (512, or
 * the model's positions where fewer) */
ENCDEC_API encdec_engine_params encdec_engine_default_params(void);

typedef struct {
    long long steps;          /* merged decoder steps run */
    long long rows;           /* sequences stepped in them (rows / steps: the mean batch) */
    long long passes;         /* prompt and word-alignment passes */
    long long encodes;        /* encoder passes */
    int active;               /* requests holding a place now */
    int waiting;              /* requests waiting for one */
    int decoding;             /* requests in a decode step now */
    int last_rows;            /* sequences in the last step */
    long long batch_hist[9];  /* steps of <= 1, 2, 4, 8, 16, 32, 64, 128 sequences, more */
    int requests;             /* requests submitted and not done: reading or preparing
                                 their input, waiting for a place, or holding one */
} encdec_engine_stats;

/* The engine of a model (Whisper: transcriptions; text models:
 * generations). params may be NULL. The model must outlive the engine. */
ENCDEC_API encdec_status encdec_engine_new(const encdec_model *m,
                                           const encdec_engine_params *params,
                                           encdec_engine **out);
/* Cancels the requests not yet done, waits for their threads, frees. The
 * requests' handles stay valid until encdec_request_free. */
ENCDEC_API void encdec_engine_free(encdec_engine *e);
/* Submits the transcription of pcm[n_samples] (copied; encdec_transcribe's
 * input), of the audio file at path (encdec_transcribe_file's), or of an
 * encoded file held in memory, data[len] (copied: an upload; any format
 * encdec_audio_load_memory reads). Files and encoded bytes are read on the
 * request's thread once it holds its place (cancellable while it waits and
 * while it reads), errors reported by encdec_request_wait. Checks the
 * parameters at once (ENCDEC_ERR_ARG); kv_mode must be ENCDEC_KV_FULL. */
ENCDEC_API encdec_status encdec_engine_transcribe(encdec_engine *e, const float *pcm,
                                                  size_t n_samples,
                                                  const encdec_transcribe_params *params,
                                                  encdec_request **out);
ENCDEC_API encdec_status encdec_engine_transcribe_file(encdec_engine *e, const char *path,
                                                       const encdec_audio_params *audio,
                                                       const encdec_transcribe_params *params,
                                                       encdec_request **out);
ENCDEC_API encdec_status encdec_engine_transcribe_memory(encdec_engine *e, const void *data,
                                                         size_t len,
                                                         const encdec_audio_params *audio,
                                                         const encdec_transcribe_params *params,
                                                         encdec_request **out);
/* 1 when the request has finished (its result or error is ready), else 0. */
ENCDEC_API int encdec_request_done(const encdec_request *q);
/* Waits for the request; *out: its result (the caller's, encdec_result_free)
 * or NULL with its error (the message in encdec_last_error() of the calling
 * thread). May be called once. */
ENCDEC_API encdec_status encdec_request_wait(encdec_request *q, encdec_result **out);
/* A file request's audio, as encdec_transcribe_file's info (zeros until the
 * request is done, and for memory input). */
ENCDEC_API void encdec_request_audio_info(const encdec_request *q, encdec_audio_info *out);
/* A text request's input tokens as encoded (0 until the request is done,
 * for a request that failed before encoding, and for audio): its
 * result's timings.n_input_tokens, known too when it was cancelled. */
ENCDEC_API int encdec_request_input_tokens(const encdec_request *q);
/* Asks the request to stop: it ends with ENCDEC_ERR_CANCELLED at its next
 * step (its caches are freed then); a finished request is not changed. */
ENCDEC_API void encdec_request_cancel(encdec_request *q);
/* Cancels the request if it is running, waits for it, frees the handle. */
ENCDEC_API void encdec_request_free(encdec_request *q);
ENCDEC_API void encdec_engine_get_stats(encdec_engine *e, encdec_engine_stats *out);

/* ---- batched long-form: the chunks of one recording decoded together ---- */

/* The speech of a recording cut into chunks of at most chunk_length
 * seconds (faster-whisper's BatchedInferencePipeline): the speech spans
 * (params->clip_timestamps, each clip a chunk of its own; else
 * params->speech; else params->vad's, its max_speech_duration_s at most
 * chunk_length; without any, a recording no longer than chunk_length is
 * one chunk), consecutive spans joined while they fit. Every chunk is a
 * request of the engine, up to batch_size decoding at once (one that ends
 * lets the next chunk in at once, whichever it was), so their decoder steps
 * are shared passes: each is transcribed as it would be alone
 * (encdec_transcribe of its samples with params: temperature fallback,
 * no-speech skips, loop detection, word times; conditioning on previous
 * text within a chunk only: chunks are independent, as the peers'; without
 * timestamps with whole_windows set: a chunk is one decode, as the peer's,
 * and min_text_rate's redo has timestamps mode's rule). Its
 * segments come back in order, times in the recording's (mapped through
 * the chunk's spans), on the calling thread (params->on_segment,
 * on_progress after each chunk, on_language once). A file is read in
 * blocks (the VAD's pass, then the chunks through the spans): memory is
 * bounded by the batch, whatever the length. */
typedef struct {
    int batch_size;          /* chunks decoding at once, 1..256 (0: 8); the engine's max_active
                                bounds it too. Results are taken in order: up to 4 x batch_size
                                chunks are held, those done by their result alone */
    float chunk_length;      /* the longest chunk in seconds, 1..30 (0: 30); longer given
                                spans or clips are cut into equal parts */
    int language_per_chunk;  /* multilingual model, no language given: 0 (default) the first
                                chunk's detected language for all; 1 each chunk detects its
                                own (faster-whisper's multilingual=True) */
    const volatile int *cancel;  /* may be NULL; set nonzero from any thread to stop: the call
                                    returns ENCDEC_ERR_CANCELLED within milliseconds, its
                                    chunks cancelled */
} encdec_batch_params;
ENCDEC_API encdec_batch_params encdec_batch_default_params(void);

/* Synchronous: returns when every chunk is done (or the first error; the
 * others are cancelled). pcm[n_samples]: 16 kHz mono. Errors as
 * encdec_transcribe's, and ENCDEC_ERR_ARG for a recording longer than
 * chunk_length with no spans to cut it (give a VAD). */
ENCDEC_API encdec_status encdec_engine_transcribe_batched(encdec_engine *e, const float *pcm,
                                                          size_t n_samples,
                                                          const encdec_transcribe_params *params,
                                                          const encdec_batch_params *batch,
                                                          encdec_result **out);
ENCDEC_API encdec_status encdec_engine_transcribe_batched_file(encdec_engine *e, const char *path,
                                                               const encdec_audio_params *audio,
                                                               const encdec_transcribe_params *params,
                                                               const encdec_batch_params *batch,
                                                               encdec_result **out,
                                                               encdec_audio_info *info);

/* ---- live transcription: audio still being spoken -------------------------- */

/* A live session turns audio that arrives as it is spoken into text within
 * a second or two, on an engine: each of its decodes is a request among
 * the engine's others (their steps shared). It keeps at most max_buffer_s
 * of audio and decodes that buffer again after every step_s of new audio,
 * with the final text before it as the prompt. Text becomes final by two
 * rules: the words `agreement` successive decodes agree on (LocalAgreement-n,
 * whisper_streaming's policy; words compared without case or punctuation),
 * and, when speech is followed by min_silence_s of silence (the VAD's
 * verdict when one is given, else the level's), the whole utterance: once
 * the decodes agree on all of it, or after 3 times that silence. Final
 * text never changes; partial text is the rest of the last decode and may.
 * The buffer is cut where final text ends (at a segment's end when it can
 * be), and audio that is silence is not decoded: memory and work do not
 * grow with the stream's length.
 *
 *   encdec_live *l;  encdec_live_new(engine, NULL, &l);
 *   as audio comes:  encdec_live_feed(l, pcm, n);  while (encdec_live_next(l, &ev, 0)) show(&ev);
 *   at its end:      encdec_live_finish(l);  while (encdec_live_next(l, &ev, -1)) show(&ev);
 *   encdec_live_free(l);
 *
 * Events come in this order for each decode: PARTIAL (its words not yet
 * final), then, when some became final, FINAL (those words: a prefix of
 * that PARTIAL's text) and PARTIAL (the rest); DONE last. One thread drives
 * a session (feed, next, finish, free); sessions are independent. */
typedef struct encdec_live encdec_live;

typedef struct {
    int sample_rate;              /* of the audio fed (default 16000; others resampled) */
    double step_s;                /* new audio that calls for another decode (1.0; 0.1..10) */
    double idle_step_s;           /* ... while the engine runs no other request (0.5; 0: always
                                     step_s; else 0.1..10; above step_s it changes nothing;
                                     encdec_engine_stats.requests == 0): a session alone
                                     on its engine decodes as often as its cores allow (a
                                     word's final text sooner), one among others every
                                     step_s */
    double max_step_s;            /* the most new audio one decode takes (3.0; 0..10, taken
                                     as step_s below it and as half of max_buffer_s above
                                     that): a session whose decodes run slower than its
                                     audio comes (a busy machine) decodes longer steps
                                     instead of falling behind */
    int agreement;                /* decodes that must agree on a word (2; 2..5) */
    double min_silence_s;         /* silence after speech that ends an utterance (0.6;
                                     0: never, only agreement) */
    const encdec_vad *vad;        /* judges silence when set (borrowed); else the level */
    float silence_db;             /* without a VAD: 30 ms frames quieter than this (RMS,
                                     dBFS) are silence (-45), or than the stream's noise
                                     floor + 8 dB where that is higher (its quietest
                                     150 ms of the last 10 s; at most -30 dBFS): a room's
                                     fan or hum is silence too */
    double max_buffer_s;          /* audio kept at most (30; 5..30) */
    encdec_transcribe_params tp;  /* each decode's (language, task, beams, thresholds...):
                                     word_timestamps is always on, initial_prompt is the
                                     final text's tail, callbacks, clips and VAD are not
                                     used. Default: encdec_transcribe_default_params()
                                     without temperature fallback (latency) */
    double catch_up_s;            /* the most new audio one decode takes when the session
                                     is behind and its audio comes at the wall clock's pace
                                     (fed no more than max_step_s ahead of the time since
                                     its first sample: a microphone, a call, a client
                                     sending as it hears) (4.5; 0: max_step_s always; else
                                     max_step_s..10, half of max_buffer_s at most): it
                                     catches up in fewer decodes. A source faster than that
                                     (a file sent whole) keeps max_step_s: the pauses
                                     between its utterances still end decodes. */
} encdec_live_params;
ENCDEC_API encdec_live_params encdec_live_default_params(void);

typedef enum {
    ENCDEC_LIVE_PARTIAL,          /* text: the words not yet final (replaces the last partial;
                                     may be empty) */
    ENCDEC_LIVE_FINAL,            /* text: words final now, after the earlier final text */
    ENCDEC_LIVE_DONE              /* the stream is transcribed (status: why it ended) */
} encdec_live_kind;

typedef struct {
    encdec_live_kind kind;
    const char *text;             /* UTF-8, its words' leading spaces kept ("" for DONE);
                                     valid until the next call on the session */
    double start, end;            /* seconds of the stream: the text's first and last word */
    int utterance_end;            /* FINAL: silence followed it, or the stream ended */
    encdec_status status;         /* DONE: ENCDEC_OK, or the error that stopped the session */
} encdec_live_event;

typedef struct {
    double fed_s;                 /* audio fed, seconds (at 16 kHz) */
    double buffered_s;            /* audio held now */
    double max_buffered_s;        /* the most it ever held */
    int decodes;                  /* decodes run */
    int skipped;                  /* steps not decoded: the new audio was silence */
    int failed;                   /* decodes that failed the thresholds (a loop, improbable
                                     text): not hypotheses */
    int finals;                   /* FINAL events */
} encdec_live_stats;

/* A live session on engine e (a Whisper model's; it must outlive the
 * session). params may be NULL. ENCDEC_ERR_ARG for values out of range. */
ENCDEC_API encdec_status encdec_live_new(encdec_engine *e, const encdec_live_params *params,
                                         encdec_live **out);
/* Appends pcm[n_samples] (mono, params' rate; copied) and starts a decode
 * when one is due and none runs. Never waits for a decode. After
 * encdec_live_finish: ENCDEC_ERR_ARG. */
ENCDEC_API encdec_status encdec_live_feed(encdec_live *l, const float *pcm, size_t n_samples);
/* No more audio: what remains is decoded and made final, then DONE. */
ENCDEC_API encdec_status encdec_live_finish(encdec_live *l);
/* The next event into *ev: 1, or 0 when none is ready within wait_ms
 * (0: do not wait; -1: as long as one may still come: after finish, until
 * DONE; before it, while a decode runs). After DONE, always 0. */
ENCDEC_API int encdec_live_next(encdec_live *l, encdec_live_event *ev, int wait_ms);
ENCDEC_API void encdec_live_get_stats(const encdec_live *l, encdec_live_stats *out);
/* Seconds of audio fed that no decode has started on (0 after finish or
 * DONE). At step_s or more a decode runs and the next one's audio waits.
 * A source of live audio keeps feeding up to max_step_s of backlog (the
 * next decode takes it all: the session keeps up with real time on a
 * machine too busy for a decode every step_s), and past it should wait if
 * it can (a file, a socket with flow control) rather than feed more. */
ENCDEC_API double encdec_live_backlog(encdec_live *l);
/* The backlog a feeder should keep at most now (what the next decode may
 * take): max_step_s, or catch_up_s for a session behind at the wall
 * clock's pace. */
ENCDEC_API double encdec_live_ahead(encdec_live *l);
/* Cancels a decode that runs and frees the session. */
ENCDEC_API void encdec_live_free(encdec_live *l);

/* ---- text generation (T5 and BART families) ------------------------------ */

/* Generation token by token (encdec_generate_params.on_token): token id
 * (log-probability logprob) was chosen for sequence `sequence` (its rank
 * among the input's returns) of input `input`; text is what it adds to that
 * sequence's text: UTF-8, complete characters only (empty while a
 * character's bytes are still coming, or for a token with no text, as
 * </s>). Concatenated, a sequence's texts are its final text. Return
 * nonzero to stop: the call ends with ENCDEC_ERR_CANCELLED. */
typedef int (*encdec_token_fn)(int input, int sequence, int id, float logprob, const char *text,
                               void *user);

typedef struct {
    encdec_kv_mode kv_mode;
    int max_new_tokens;        /* per sequence, </s> included: 1..4096; 0 = 128 */
    int num_beams;             /* 1 = greedy (or sampling); 2..64 = beam search */
    float length_penalty;      /* beam score = sum of log-probs / length ^ length_penalty */
    int early_stopping;        /* beam: 1 = stop once num_beams hypotheses are done;
                                  0 = when no live beam can beat them (HF's default) */
    int num_return_sequences;  /* per input: 1..num_beams (beam search), 1..64 (sampling) */
    int do_sample;             /* 1 = sample instead of greedy (num_beams must be 1) */
    float temperature;         /* sampling: > 0 */
    int top_k;                 /* sampling: keep the k most likely tokens; 0 = off */
    float top_p;               /* sampling: nucleus mass in (0, 1]; 1 = off */
    uint64_t seed;             /* sampling: the same seed gives the same output */
    int truncate;              /* inputs longer than the model accepts: 0 = error,
                                  1 = keep the first tokens and </s> */
    /* Streaming (greedy and sampling, where a token is final once chosen; a
     * beam's are final only at the end: ENCDEC_ERR_ARG with num_beams > 1):
     * called for every token as the steps choose them, in order within a
     * sequence, on the caller's thread (an engine request: the request's
     * own thread, never the engine's; a slow callback delays only its own
     * request's deliveries, which then come several tokens at a time). */
    encdec_token_fn on_token;
    void *user;                /* passed to on_token */
    /* Translation models' languages, as encdec_model_language lists them
     * (NULL = the tokenizer's default source, the model's own start):
     * src_lang: the source language token of NLLB, mBART-50, mBART and
     * M2M100 inputs ("eng_Latn", "en_XX", "en"); tgt_lang: the target
     * language, forced as the first generated token (NLLB, mBART-50,
     * M2M100: forced_bos_token_id), as the decoder's start (mBART), or as
     * the >>fr<< token before a multilingual Marian model's input. A code the
     * model lacks, or a language a model has no place for, is ENCDEC_ERR_ARG
     * naming the model's codes. */
    const char *src_lang;
    const char *tgt_lang;
    /* The rules of these names (transformers' and CTranslate2's, which
     * differ in the details ctranslate2_rules below chooses): a logit of a
     * token the sequence generated (forced ones included) divided by
     * repetition_penalty when positive, multiplied when negative (0 or 1:
     * off); a token that would repeat an n-gram of the generated tokens
     * banned (no_repeat_ngram_size > 0); the suppress_tokens[0,
     * n_suppress_tokens) never generated (besides the generation config's
     * bad_words_ids). */
    float repetition_penalty;
    int no_repeat_ngram_size;
    const int *suppress_tokens;
    int n_suppress_tokens;
    /* </s> is banned until this many tokens are generated (forced ones
     * included): transformers' min_length - 1. */
    int min_new_tokens;
    /* 1: a sequence that reaches max_new_tokens ends in the model's
     * forced_eos_token_id (its </s> where it names none): transformers'
     * ForcedEOSTokenLogitsProcessor, which BART, Marian and Pegasus configs
     * turn on (bart-large-cnn's summaries, OPUS-MT's translations); 0: off
     * (the default; encdec_generate_model_params takes it from the model's
     * config: 1 where the config sets a forced_eos_token_id). */
    int forced_eos;
    /* Whose rules the search follows where transformers and CTranslate2
     * differ: 0, transformers' generate() (the default): the decoder start
     * token is among the tokens repetition_penalty penalizes, and beam
     * search applies the rules to log-probs (the penalty scales them,
     * suppressed tokens leave the others unrenormalised); 1, CTranslate2's
     * (encdec.Translator): generated tokens only, the rules on the logits
     * before the log-softmax. Greedy and sampling choose alike either way
     * but for the decoder start's penalty. */
    int ctranslate2_rules;
    /* The decoder's attention over the input for each token of the returned
     * sequences (encdec_result_attention), as CTranslate2's return_attention
     * gives it and its replace_unknowns reads it (encdec_text_attention's
     * rows): 0, none (the default); 1, every sequence; 2, only those that
     * hold the model's <unk>. Kept as the search decodes (the alignment
     * heads' scores of every step's rows, read back along each returned
     * beam's path): no pass of its own. BART-family and T5 models. */
    int return_attention;
    /* 1: each <unk> of a returned sequence is written, in its text and its
     * token's text, as the input token its attention weighs most, as
     * CTranslate2's replace_unknowns gives it and LibreTranslate (Argos
     * Translate) shows it: the piece as the tokenizer segmented the input
     * (a character the model lacks, a word its vocabulary lacks), U+2581 a
     * space; an <unk> that weighs a special token most (</s>, a language
     * code) stays out of the text as before. The token ids are unchanged.
     * Reads the attention return_attention 2 keeps (it is returned only as
     * return_attention asks). Not with on_token. 0: off (the default). */
    int replace_unknowns;
    /* Beam search with early_stopping 1 (CTranslate2's patience): an input's
     * search ends once round(num_beams * patience) hypotheses finished,
     * every one kept; num_return_sequences may then be up to that many (at
     * most 64), and fewer come back where fewer finished within
     * max_new_tokens. In (0, 64]; 0 or 1: num_beams (the default). */
    float patience;
    /* Tokens that end a sequence instead of the model's </s> (CTranslate2's
     * end_token): end_tokens[0, n_end_tokens) (1..1024 ids), banned as </s>
     * is before min_new_tokens; the model's </s> is then a token like any
     * other. A sequence's last token is the one that ended it; the end
     * tokens it ends with are left out of its text (a beam may go on from
     * one where a step's candidates run out of others, as CTranslate2's
     * do). NULL / 0: </s> (the default). */
    const int *end_tokens;
    int n_end_tokens;
    /* Beam search with early_stopping 1: each finished hypothesis' score
     * (every one kept, as with patience) gains coverage_penalty x the sum,
     * over the input tokens it attends to, of log(min(its attention summed
     * over the hypothesis' tokens, 1)) before they are ranked: CTranslate2's
     * coverage penalty, on the attention return_attention gives (kept as
     * the search decodes, whether returned or not; a weight below float's
     * smallest normal number is 0, as CTranslate2 has it). With
     * ctranslate2_rules it also keeps a search with length_penalty 0 going
     * to the end, as CTranslate2's. BART-family and T5 models; 0: off (the
     * default). */
    float coverage_penalty;
    /* 1: CTranslate2's return_alternatives: the num_return_sequences most
     * likely tokens at the first free position (after the target prefix or
     * the model's forced tokens; </s> not among them), those of probability
     * min_alternative_prob or more, each continued by its own search
     * (greedy, or num_beams beams returning one hypothesis); an input's
     * sequences in that order, fewer where fewer pass min_alternative_prob.
     * A sequence's score is its alternative's log-prob plus its
     * continuation's (the continuation's log-probs over its length ^
     * length_penalty), as CTranslate2 scores them. Decodes
     * num_return_sequences x num_beams sequences per input. Not with
     * sampling, on_token or coverage_penalty. 0: off (the default). */
    int return_alternatives;
    float min_alternative_prob;
    /* In [0, 1): CTranslate2's prefix_bias_beta. With a target prefix
     * (encdec_engine_generate_ids' prefix), the prefix is not forced: at
     * each of its positions a beam that has kept to it so far takes
     * log((1 - beta) p + beta [token == the prefix's]) for its token
     * log-probs p, so the search may leave the prefix where the model
     * disagrees enough. Any value above 0 makes the search a beam search
     * (num_beams 1: one beam; scores over length ^ length_penalty), as
     * CTranslate2's. Not with sampling, return_alternatives or on_token.
     * 0: off (the default). */
    float prefix_bias_beta;
    /* 1: each returned sequence's logits at every step, as CTranslate2's
     * return_logits_vocab gives them with greedy search
     * (encdec_result_logits): the row each token was chosen from, with the
     * rules applied (suppressed and banned tokens -inf; the repetition
     * penalty), before the log-softmax; the forced tokens' (a target
     * prefix, the model's first token) too, their prompt then fed a token
     * a pass. n_tokens x the vocabulary floats a sequence. Greedy and
     * sampling only (CTranslate2's beam search returns one row a
     * hypothesis, taken from another beam); the screened logits are off
     * for such a generation. 0: off (the default). */
    int return_logits;
} encdec_generate_params;

/* Defaults (those of HF generate, but 128 new tokens): full caches, greedy,
 * length_penalty 1, early_stopping 0, one sequence; sampling temperature 1, top_k 0, top_p 1,
 * seed 0; no truncation; no on_token. */
ENCDEC_API encdec_generate_params encdec_generate_default_params(void);
/* The same with the model's own generation config where it sets them, as
 * transformers' generate() starts from it (generation_config.json, else
 * config.json): num_beams, length_penalty, early_stopping (true, false,
 * "never"), max_new_tokens (or max_length - 1; capped to what the model
 * may generate), min_length (as min_new_tokens = min_length - 1),
 * no_repeat_ngram_size, repetition_penalty, forced_eos_token_id (as
 * forced_eos). bart-large-cnn's summaries,
 * OPUS-MT's beams. (transformers' 20-token max_length default is not taken:
 * without one, 128.) An Argos Translate package: Argos Translate's search,
 * as LibreTranslate runs it (num_beams 4, length_penalty 0.2,
 * early_stopping 1, max_new_tokens 256 (or what the positions allow),
 * min_new_tokens 1, replace_unknowns, ctranslate2_rules). Whisper models
 * and NULL: the defaults. */
ENCDEC_API encdec_generate_params encdec_generate_model_params(const encdec_model *m);

/* Generates text for n_inputs UTF-8 inputs at once (encoded as one packed
 * batch, decoded together): the result holds n_inputs x num_return_sequences
 * sequences, input-major, best first. params may be NULL. Errors: a model
 * that is not text-to-text, an empty input, invalid UTF-8 (ENCDEC_ERR_ARG
 * with the input and byte), an input longer than the model accepts without
 * truncate, out-of-range parameters. */
ENCDEC_API encdec_status encdec_generate(encdec_session *s, const char *const *inputs, int n_inputs,
                                         const encdec_generate_params *params, encdec_result **out);

/* Through an engine (encdec_engine_new on a text model; see the engine
 * above): submits the generation for one UTF-8 input (copied), with
 * encdec_generate's parameters (greedy, sampling or beam search; at most 17
 * sequences; max_new_tokens up to the engine's). Its result is
 * encdec_generate's for that one input, token for token, whatever else the
 * engine decodes. Several inputs: one request each (they share the steps). */
ENCDEC_API encdec_status encdec_engine_generate(encdec_engine *e, const char *input,
                                                const encdec_generate_params *params,
                                                encdec_request **out);
/* The same from tokens, as CTranslate2's translate_batch takes them: ids[0,
 * n_ids) the encoder's input as the model takes it (</s> and any language
 * token included; longer than the model accepts: an error, or with
 * truncate its first tokens and its last), prefix[0, n_prefix) the
 * decoder's first tokens after its start (a target prefix: forced, every
 * output starts with them; n_prefix < max_new_tokens; 0: the model's own
 * forced token or tgt_lang's). src_lang is an error (the tokens carry it),
 * so is a Marian tgt_lang. Ids must be below the vocabulary size. */
ENCDEC_API encdec_status encdec_engine_generate_ids(encdec_engine *e, const int *ids, int n_ids,
                                                    const int *prefix, int n_prefix,
                                                    const encdec_generate_params *params,
                                                    encdec_request **out);

/* The decoder's attention over an input for each token of a generated
 * sequence, as CTranslate2's return_attention gives it (and its
 * replace_unknowns reads it): row i of out[n_seq, n_ids] is the attention
 * over the n_ids input positions of the decoder step that chose seq[i], the
 * mean of the model's alignment heads' distributions (a CTranslate2
 * directory's alignment_layer and alignment_heads; otherwise CTranslate2's
 * defaults: the last decoder layer's first head). ids: the encoder's input
 * as encdec_engine_generate_ids takes it (longer than the model accepts: its
 * first tokens and its last, as generation with truncate encodes them; the
 * columns of the others are 0);
 * seq[0, n_seq): the tokens after the decoder's start (the model's own: a
 * target prefix and the generated tokens, as a result's sequence holds
 * them). A teacher-forced pass on the session (the input encoded, the
 * decoder over n_seq positions, no logits): nothing of it runs while
 * generating, so it costs only where asked for. Errors: a Whisper model, tokens out of the
 * vocabulary, too many positions. */
ENCDEC_API encdec_status encdec_text_attention(encdec_session *s, const int *ids, int n_ids,
                                               const int *seq, int n_seq, float *out);
/* n pairs at once (as encdec_text_score_batch groups them; no logits are
 * computed), pair i's rows into out[i][n_seq[i], n_ids[i]]. */
ENCDEC_API encdec_status encdec_text_attention_batch(encdec_session *s, int n, const int *const *ids,
                                                     const int *n_ids, const int *const *seq,
                                                     const int *n_seq, float *const *out);
/* The log-probability of each token of a sequence given the input, as
 * CTranslate2's score_batch gives it: logprobs[i] = log P(seq[i] | input,
 * the decoder's start and seq[0, i)), from the exact logits (no rule
 * applied). ids and seq as encdec_text_attention takes them (a scored
 * target usually ends in </s>). The same teacher-forced passes. */
ENCDEC_API encdec_status encdec_text_score(encdec_session *s, const int *ids, int n_ids,
                                           const int *seq, int n_seq, float *logprobs);
/* n pairs at once, pair i's input ids[i][0, n_ids[i]), its sequence
 * seq[i][0, n_seq[i]), its log-probabilities into logprobs[i][0, n_seq[i]):
 * the inputs of consecutive pairs encoded together and their positions in
 * one decoder pass of up to 16 M logits (the output projection read once for
 * many sequences). Errors name the pair. */
ENCDEC_API encdec_status encdec_text_score_batch(encdec_session *s, int n, const int *const *ids,
                                                 const int *n_ids, const int *const *seq,
                                                 const int *n_seq, float *const *logprobs);

/* ---- results ------------------------------------------------------------ */

/* The text of sequence 0: the transcript as Whisper emits it (usually with
 * a leading space), or the first input's best generation. Borrowed from r. */
ENCDEC_API const char *encdec_result_text(const encdec_result *r);
/* Tokens of all sequences, in sequence order. i in [0, n_tokens); NULL
 * when out of range. Borrowed from r. */
ENCDEC_API int encdec_result_n_tokens(const encdec_result *r);
ENCDEC_API const encdec_token *encdec_result_token(const encdec_result *r, int i);
/* Sequences: 1 for a transcript, n_inputs x num_return_sequences for
 * generation. i in [0, n); NULL when out of range. Borrowed from r. */
ENCDEC_API int encdec_result_n_sequences(const encdec_result *r);
ENCDEC_API const encdec_sequence *encdec_result_sequence(const encdec_result *r, int i);
/* Segments of a transcript (0 for generation), in time order. */
ENCDEC_API int encdec_result_n_segments(const encdec_result *r);
ENCDEC_API const encdec_segment *encdec_result_segment(const encdec_result *r, int i);
/* The language transcribed ("en", ...; NULL for generation). */
ENCDEC_API const char *encdec_result_language(const encdec_result *r);
/* Language detection's probabilities, most likely first (0 entries when the
 * language was given or the model is English-only): code and probability
 * of entry i; 0, or -1 when i is out of range. */
ENCDEC_API int encdec_result_n_language_probs(const encdec_result *r);
/* The probability of the language transcribed: detection's (the deciding
 * window's top probability, or with language_detection_segments the best
 * of the windows that voted for it); 1 when it was given or the model is
 * English-only; 0 for generation. */
ENCDEC_API float encdec_result_language_probability(const encdec_result *r);
ENCDEC_API int encdec_result_language_prob(const encdec_result *r, int i, const char **code,
                                           float *prob);
ENCDEC_API const encdec_timings *encdec_result_timings(const encdec_result *r);
/* Sequence i's attention (encdec_generate_params.return_attention): rows
 * [its n_tokens, *n_cols], row j the attention over the input's positions of
 * the decoder step that chose token j; *n_cols the input's tokens (a text
 * input: as encoded, cut to the model's length with truncate; token ids:
 * as given, a cut input's other columns 0). NULL (and *n_cols 0) when it
 * has none. Borrowed from r. */
ENCDEC_API const float *encdec_result_attention(const encdec_result *r, int i, int *n_cols);
/* Sequence i's logits (encdec_generate_params.return_logits): rows [its
 * n_tokens, *n_vocab], row j the logits token j was chosen from, the rules
 * applied (a suppressed or banned token -inf), before the log-softmax.
 * NULL (and *n_vocab 0) when it has none. Borrowed from r. */
ENCDEC_API const float *encdec_result_logits(const encdec_result *r, int i, int *n_vocab);
ENCDEC_API void encdec_result_free(encdec_result *r);

/* ---- writing results ------------------------------------------------------ */

typedef enum {
    ENCDEC_FORMAT_TXT = 0,   /* one segment per line */
    ENCDEC_FORMAT_SRT,       /* SubRip subtitles */
    ENCDEC_FORMAT_VTT,       /* WebVTT subtitles */
    ENCDEC_FORMAT_TSV,       /* start and end in integer milliseconds, text */
    ENCDEC_FORMAT_JSON,      /* openai-whisper's result: text, segments (with words), language */
} encdec_format;

typedef struct {
    int max_line_width;      /* subtitles from word times: characters per line (0: no limit) */
    int max_line_count;      /* lines per subtitle (0: no limit; both set: segments regrouped) */
    int max_words_per_line;  /* 0: no limit */
    int highlight_words;     /* 1: a cue per word, the word underlined (<u>...</u>) */
} encdec_format_options;
ENCDEC_API encdec_format_options encdec_format_default_options(void);   /* all zeros */

/* A transcript in format f, as openai-whisper's writers lay it out (the line
 * options need word_timestamps; without words a subtitle is a segment).
 * *out: NUL-terminated, caller frees with encdec_free. o may be NULL.
 * ENCDEC_ERR_ARG for an unknown format or negative options. */
ENCDEC_API encdec_status encdec_result_format(const encdec_result *r, encdec_format f,
                                              const encdec_format_options *o, char **out);
/* "txt", "srt", "vtt", "tsv", "json" -> *f; 0 on success, -1 otherwise. */
ENCDEC_API int encdec_format_parse(const char *name, encdec_format *f);
ENCDEC_API const char *encdec_format_name(encdec_format f);

#ifdef __cplusplus
}
#endif
#endif
