/* generate.c - `encdec generate`: text to text with a T5- or BART-family model. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *HELP =
    "usage: encdec generate -m MODEL [options] [TEXT...]\n"
    "       encdec translate -m MODEL [--src-lang CODE] --tgt-lang CODE [options] [TEXT...]\n"
    "(options and texts in any order; \"--\" ends the options)\n"
    "\n"
    "Generates text from text with a T5-family model (T5, Flan-T5, mT5, umT5) or a\n"
    "BART-family one (BART, mBART, mBART-50, Marian / OPUS-MT, M2M100, NLLB-200,\n"
    "Pegasus); a Hugging Face safetensors directory with its tokenizer files. Each TEXT\n"
    "argument is one input; without TEXT, the inputs are read from standard input, one\n"
    "per line. Inputs are encoded and decoded together, --batch at a time, and printed\n"
    "in input order. translate is generate with a target language required where the\n"
    "model has languages. The search options default to the model's generation config\n"
    "where it sets them (generation_config.json: num_beams, length_penalty,\n"
    "early_stopping, max_length, min_length, no_repeat_ngram_size, repetition_penalty),\n"
    "as transformers' generate() does (not with --sample or --stream: one sequence);\n"
    "else to the values below. An Argos Translate package searches as Argos Translate\n"
    "does (--beam 4 --length-penalty 0.2 --early-stopping --min-new-tokens 1\n"
    "--max-new-tokens 256 --replace-unknowns, CTranslate2's rules), as LibreTranslate.\n"
    "\n"
    "options:\n"
    "      --src-lang CODE    the inputs' language, for models whose inputs carry it\n"
    "                         (NLLB \"eng_Latn\", mBART \"en_XX\", M2M100 \"en\"; default:\n"
    "                         the tokenizer's src_lang)\n"
    "      --tgt-lang CODE    the language to generate (NLLB \"fra_Latn\", mBART \"fr_XX\",\n"
    "                         M2M100 \"fr\", a multilingual Marian model's \"fra\" for >>fra<<)\n"
    "      --list-languages   print the model's language codes, one per line, and exit\n"
    "  -m, --model PATH       model directory or .safetensors file (default: $ENCDEC_MODEL)\n"
    "  -t, --threads N        worker threads, 1..256 (default: CPUs online, at most 8)\n"
    "      --max-new-tokens N tokens generated per sequence, </s> included, 1..4096\n"
    "                         (default 128)\n"
    "      --min-new-tokens N </s> is banned before N tokens (default 0)\n"
    "      --no-forced-eos    a sequence cut at --max-new-tokens ends where it is cut\n"
    "                         (default: in </s> where the model's config sets a\n"
    "                         forced_eos_token_id, as transformers' generate())\n"
    "      --beam N           beam search with N beams, 1..64 (default 1: greedy)\n"
    "      --length-penalty X beam score = sum of log-probs / length^X (default 1)\n"
    "      --early-stopping   beam: stop an input once N hypotheses are finished\n"
    "                         (default: once no live beam can beat them)\n"
    "      --patience X       beam, with --early-stopping (implied): stop once\n"
    "                         round(N x X) hypotheses are finished, and keep them all\n"
    "                         (CTranslate2's patience), in (0, 64] (default 1)\n"
    "      --no-repeat-ngram N  never repeat an n-gram of N tokens (default 0: off)\n"
    "      --repetition-penalty X  a generated token's logit / X (x X when negative;\n"
    "                         default 1: off), as transformers' generate() applies it\n"
    "                         (the decoder start counted; on log-probs in beam search)\n"
    "      --num-return N     sequences returned per input (beam: 1..N beams, or\n"
    "                         round(N x X) with --patience X; sampling: 1..64;\n"
    "                         default 1); an input whose search finished fewer prints\n"
    "                         empty lines for the rest\n"
    "      --sample           sample instead of taking the most likely token\n"
    "      --temperature X    sampling temperature, > 0 (default 1)\n"
    "      --top-k N          sample from the N most likely tokens (default 0: all)\n"
    "      --top-p X          sample from the smallest set with probability >= X, in\n"
    "                         (0, 1] (default 1: all)\n"
    "      --seed N           random seed (default 0); a seed reproduces the output\n"
    "      --kv-cache MODE    full: self cache + cross K/V computed once per input\n"
    "                         (default); self: cross K/V recomputed every step; none: no\n"
    "                         cache at all. All three give the same tokens.\n"
    "      --compute MODE     weight matrices: f32 (as stored: f32/f16/bf16, f32 math;\n"
    "                         default), bf16 (bf16 weights and products, f32 sums),\n"
    "                         int8 (int8 weights, per-channel scales)\n"
    "      --cross-kv TYPE    cross-attention cache storage: f32 (default), f16, bf16\n"
    "      --isa SET          kernel set: auto (the CPU's best; default), c, avx2, avx512,\n"
    "                         amx, neon\n"
    "      --no-weight-check  skip the load-time scan of the weights for NaN, Inf and\n"
    "                         absurd values (a corrupt file)\n"
    "      --no-logit-screen  in f32: no int8 copy of the output projection (by default\n"
    "                         greedy steps of up to 4 inputs read it, a quarter of an\n"
    "                         f32 matrix's bytes or half of an f16 one, and take the\n"
    "                         full logits of the tokens that could win: the same\n"
    "                         tokens; an f32 matrix's pages are then mostly not read,\n"
    "                         so peak memory is lower for the copy)\n"
    "      --device DEV       cpu (default), cuda or cuda:N (every --compute mode)\n"
    "      --truncate         cut inputs longer than the model accepts (T5: n_positions,\n"
    "                         512; BART: max_position_embeddings) to their first tokens\n"
    "                         (default: an error)\n"
    "      --batch N          inputs encoded and decoded together, 1..4096 (default 32)\n"
    "      --json             one JSON object per input: its sequences with text, score,\n"
    "                         tokens and log-probabilities, and the batch's timings\n"
    "      --stream           print each input's text as the tokens come (inputs one at a\n"
    "                         time; greedy or --sample, one sequence per input; not with\n"
    "                         --json)\n"
    "      --replace-unknowns each <unk> of the output written as the input token its\n"
    "                         attention weighs most, as segmented (a character or word\n"
    "                         the model lacks), as CTranslate2's replace_unknowns and\n"
    "                         LibreTranslate give it (BART family, T5; not with --stream)\n"
    "  -h, --help             this help\n"
    "\n"
    "Output: one line per input (with --num-return N, N lines per input, best first).\n"
    "An input that fails (invalid UTF-8, empty, too long) is reported on stderr with\n"
    "its line number and prints an empty line; the others still run. Exit status 0 on\n"
    "success, 1 if any input failed, 2 on a usage error.\n";

enum { SET_BEAM = 1, SET_LP = 2, SET_EARLY = 4, SET_MAX = 8, SET_MIN = 16, SET_NGRAM = 32, SET_REP = 64,
       SET_FEOS = 128 };

typedef struct {
    const char *model;
    int threads, json, batch, stream, list_langs, translate;
    unsigned set;               /* the search options given (SET_*): the rest are the model's */
    encdec_generate_params gp;
    encdec_model_params mp;   /* compute mode, kernel set */
    encdec_kv_type cross_kv;
} opts;

static int parse_seed(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = s && *s != '-' ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *s == '-' || *end || errno) {
        cli_err("encdec: --seed expects an integer in 0..2^64-1, got \"%s\"\n", s ? s : "");
        return 0;
    }
    *out = v;
    return 1;
}

/* The options anywhere among the texts (cli_args): 1, 0 (help printed) or -1. */
static int parse_options(int argc, char **argv, opts *o, cli_args *texts) {
    double x;
    for (int i = 1; i < argc; i++) {
        if (cli_positional(texts, argc, argv, &i)) continue;
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int pr = cli_parse_precision(argc, argv, &i, &o->mp, &o->cross_kv);
        if (pr < 0) return -1;
        if (pr > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(HELP, stdout); return 0; }
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--stream")) o->stream = 1;
        else if (!strcmp(a, "--list-languages")) o->list_langs = 1;
        else if (!strcmp(a, "--sample")) o->gp.do_sample = 1;
        else if (!strcmp(a, "--early-stopping")) o->gp.early_stopping = 1, o->set |= SET_EARLY;
        else if (!strcmp(a, "--truncate")) o->gp.truncate = 1;
        else if (!strcmp(a, "--replace-unknowns")) o->gp.replace_unknowns = 1;
        else if (!strcmp(a, "--no-forced-eos")) o->gp.forced_eos = 0, o->set |= SET_FEOS;
        else if (!strncmp(a, "--kv-cache=", 11)) { if (!cli_parse_kv(a + 11, &o->gp.kv_mode)) return -1; }
        else if (!v) {
            cli_err("encdec: unknown option or missing value: \"%s\" (see encdec generate --help)\n", a);
            return -1;
        } else {
            int ok = 1;
            i++;
            if (!strcmp(a, "--kv-cache")) ok = cli_parse_kv(v, &o->gp.kv_mode);
            else if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
            else if (!strcmp(a, "--src-lang")) o->gp.src_lang = v;
            else if (!strcmp(a, "--tgt-lang")) o->gp.tgt_lang = v;
            else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = cli_parse_int(a, v, 1, 256, &o->threads);
            else if (!strcmp(a, "--max-new-tokens")) ok = cli_parse_int(a, v, 1, 4096, &o->gp.max_new_tokens), o->set |= SET_MAX;
            else if (!strcmp(a, "--min-new-tokens")) ok = cli_parse_int(a, v, 0, 4096, &o->gp.min_new_tokens), o->set |= SET_MIN;
            else if (!strcmp(a, "--no-repeat-ngram")) ok = cli_parse_int(a, v, 0, 1024, &o->gp.no_repeat_ngram_size), o->set |= SET_NGRAM;
            else if (!strcmp(a, "--beam")) ok = cli_parse_int(a, v, 1, 64, &o->gp.num_beams), o->set |= SET_BEAM;
            else if (!strcmp(a, "--num-return")) ok = cli_parse_int(a, v, 1, 64, &o->gp.num_return_sequences);
            else if (!strcmp(a, "--top-k")) ok = cli_parse_int(a, v, 0, 1 << 20, &o->gp.top_k);
            else if (!strcmp(a, "--batch")) ok = cli_parse_int(a, v, 1, 4096, &o->batch);
            else if (!strcmp(a, "--seed")) ok = parse_seed(v, &o->gp.seed);
            else if (!strcmp(a, "--length-penalty")) {
                if ((ok = cli_parse_double(a, v, -100, 100, &x))) o->gp.length_penalty = (float)x, o->set |= SET_LP;
            } else if (!strcmp(a, "--patience")) {
                if ((ok = cli_parse_double(a, v, 1e-6, 64, &x)))
                    o->gp.patience = (float)x, o->gp.early_stopping = 1, o->set |= SET_EARLY;
            } else if (!strcmp(a, "--repetition-penalty")) {
                if ((ok = cli_parse_double(a, v, 0, 1e6, &x))) o->gp.repetition_penalty = (float)x, o->set |= SET_REP;
            } else if (!strcmp(a, "--temperature")) {
                if ((ok = cli_parse_double(a, v, 1e-6, 1e6, &x))) o->gp.temperature = (float)x;
            } else if (!strcmp(a, "--top-p")) {
                if ((ok = cli_parse_double(a, v, 1e-9, 1, &x))) o->gp.top_p = (float)x;
            } else {
                cli_err("encdec: unknown option \"%s\" (see encdec generate --help)\n", a);
                return -1;
            }
            if (!ok) return -1;
        }
    }
    return 1;
}

/* What the options say together; *first_text = i (the texts' first index). */
static int check(opts *o, int i, int *first_text) {
    if (!o->model) o->model = getenv("ENCDEC_MODEL");
    if (!o->model || !*o->model) {
        cli_err("encdec: generate needs a text-to-text model (T5 or BART family): -m DIR (or "
                "$ENCDEC_MODEL)\n");
        return -1;
    }
    int most = o->gp.num_beams;
    if (o->gp.patience > 0 && o->gp.num_beams > 1) most = (int)lround(o->gp.num_beams * (double)o->gp.patience);
    if (o->gp.num_return_sequences > (o->gp.do_sample ? 64 : most)) {
        cli_err("encdec: --num-return %d needs --beam %d or more (or more --patience), or --sample\n",
                o->gp.num_return_sequences, o->gp.num_return_sequences);
        return -1;
    }
    if (o->gp.do_sample && o->gp.num_beams > 1) {
        cli_err("encdec: --sample and --beam N > 1 do not combine\n");
        return -1;
    }
    if (o->stream && o->gp.replace_unknowns) {
        cli_err("encdec: --replace-unknowns writes a sequence's <unk> once it is whole: not with --stream\n");
        return -1;
    }
    if (o->stream && (o->json || o->gp.num_beams > 1 || o->gp.num_return_sequences > 1)) {
        cli_err("encdec: --stream prints one greedy or sampled sequence per input as it comes: "
                "not with --json, --beam N > 1 or --num-return N > 1\n");
        return -1;
    }
    if (o->stream) o->batch = 1;   /* one input's tokens at a time, in order */
    *first_text = i;
    return 1;
}

static int parse(int argc, char **argv, opts *o, int *first_text) {
    o->model = NULL;
    o->threads = cli_default_threads();
    o->json = 0;
    o->stream = 0;
    o->list_langs = 0;
    o->set = 0;
    o->batch = 32;
    o->gp = encdec_generate_default_params();
    o->mp = encdec_model_default_params();
    o->cross_kv = ENCDEC_KV_F32;
    cli_args texts;
    if (!cli_args_init(&texts, argc)) return -1;
    int rc = parse_options(argc, argv, o, &texts);
    int i = cli_args_finish(&texts, argc, argv);
    if (rc <= 0) return rc;
    return check(o, i, first_text);
}


/* ---- output ---- */

/* The result's next sequence (*at) when it answers input k (a search may
 * have finished fewer than n_ret: --patience), else NULL. */
static const encdec_sequence *next_of(const encdec_result *r, int *at, int k) {
    const encdec_sequence *q = encdec_result_sequence(r, *at);
    if (!q || q->input != k) return NULL;
    ++*at;
    return q;
}

static void print_plain(const encdec_result *r, int *at, int k, int n_ret) {
    for (int j = 0; j < n_ret; j++) {
        const encdec_sequence *q = next_of(r, at, k);
        printf("%s\n", q ? q->text : "");
    }
}

static void print_json(const encdec_result *r, int *at, int k, int n_ret, long line, const char *input,
                       const opts *o) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "index", (double)line);
    cJSON_AddStringToObject(j, "input", input);
    cJSON *seqs = cJSON_AddArrayToObject(j, "sequences");
    for (int s = 0; s < n_ret; s++) {
        const encdec_sequence *q = next_of(r, at, k);
        if (!q) break;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "text", q->text);
        cJSON_AddNumberToObject(e, "score", q->score);
        cJSON *toks = cJSON_AddArrayToObject(e, "tokens");
        for (int t = 0; t < q->n_tokens; t++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "id", q->tokens[t].id);
            cJSON_AddStringToObject(x, "text", q->tokens[t].text);
            cJSON_AddNumberToObject(x, "logprob", q->tokens[t].logprob);
            cJSON_AddItemToArray(toks, x);
        }
        cJSON_AddItemToArray(seqs, e);
    }
    const encdec_timings *tm = encdec_result_timings(r);
    cJSON *t = cJSON_AddObjectToObject(j, "batch_timings");
    cJSON_AddNumberToObject(t, "encoder_ms", tm->encoder_ms);
    cJSON_AddNumberToObject(t, "decode_ms", tm->decode_ms);
    cJSON_AddNumberToObject(t, "n_tokens", tm->n_tokens);
    cJSON_AddNumberToObject(t, "n_steps", tm->n_steps);
    cJSON_AddStringToObject(j, "kv_cache", cli_kv_name(o->gp.kv_mode));
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
}

static void print_failed(long line, const char *input, const char *why, const opts *o) {
    cli_err("encdec: input %ld: %s\n", line, why);
    if (!o->json) {
        for (int j = 0; j < o->gp.num_return_sequences; j++) putchar('\n');
        return;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "index", (double)line);
    cJSON_AddStringToObject(j, "error", why);
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
    (void)input;
}

/* --stream: a token's text as it comes (*user: whether any was printed). */
static int print_piece(int input, int sequence, int id, float lp, const char *text, void *user) {
    (void)input, (void)sequence, (void)id, (void)lp;
    if (*text) {
        fputs(text, stdout);
        fflush(stdout);
        *(int *)user = 1;
    }
    return 0;
}

/* Runs inputs[0, n) (numbered first_line...) as one batch; when the batch
 * fails on an input, runs them one by one so that the others still print. */
static int run_batch(encdec_session *s, const char *const *inputs, int n, long first_line,
                     const opts *o) {
    encdec_result *r = NULL;
    encdec_generate_params gp = o->gp;
    int printed = 0;
    if (o->stream) {
        gp.on_token = print_piece;
        gp.user = &printed;
    }
    encdec_status st = encdec_generate(s, inputs, n, &gp, &r);
    int n_ret = o->gp.num_return_sequences, failed = 0, at = 0;
    if (printed && st) putchar('\n');   /* the line cut short by the error */
    if (!st) {
        for (int k = 0; k < n; k++) {
            if (o->json) print_json(r, &at, k, n_ret, first_line + k, inputs[k], o);
            else if (o->stream) putchar('\n');
            else print_plain(r, &at, k, n_ret);
        }
        encdec_result_free(r);
        fflush(stdout);
        return 0;
    }
    if (n == 1 || st != ENCDEC_ERR_ARG) {
        char why[1200];
        snprintf(why, sizeof why, "%s: %s", encdec_status_str(st), encdec_last_error());
        /* "input 0: ..." from the library names the batch index: drop it */
        const char *w = encdec_last_error();
        if (!strncmp(w, "input 0", 7) && n == 1) {
            w += 7;
            while (*w == ':' || *w == ' ') w++;
            snprintf(why, sizeof why, "%s: %s", encdec_status_str(st), w);
        }
        for (int k = 0; k < n; k++) print_failed(first_line + k, inputs[k], why, o);
        fflush(stdout);
        return 1;
    }
    for (int k = 0; k < n; k++) failed |= run_batch(s, inputs + k, 1, first_line + k, o);
    return failed;
}

/* Reads standard input line by line (any length; "\n" or "\r\n"). */
static int run_stdin(encdec_session *s, const opts *o) {
    char **lines = calloc((size_t)o->batch, sizeof *lines);
    if (!lines) {
        cli_err("encdec: out of memory\n");
        return 1;
    }
    int n = 0, failed = 0;
    long line_no = 1, first = 1;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&buf, &cap, stdin)) >= 0) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
        const char *nul = memchr(buf, 0, (size_t)len);
        if (nul) {   /* it would silently cut the input: the line fails, in its place */
            if (n) failed |= run_batch(s, (const char *const *)lines, n, first, o);
            for (int k = 0; k < n; k++) free(lines[k]);
            n = 0;
            char why[128];
            snprintf(why, sizeof why, "invalid argument: a NUL byte at offset %zu (a text line "
                     "may not hold one)", (size_t)(nul - buf));
            print_failed(line_no, "", why, o);
            failed = 1;
            first = ++line_no;
            continue;
        }
        lines[n] = strdup(buf);
        if (!lines[n]) {
            cli_err("encdec: out of memory\n");
            failed = 1;
            break;
        }
        n++;
        line_no++;
        if (n == o->batch) {
            failed |= run_batch(s, (const char *const *)lines, n, first, o);
            for (int k = 0; k < n; k++) free(lines[k]);
            n = 0;
            first = line_no;
        }
    }
    if (n) failed |= run_batch(s, (const char *const *)lines, n, first, o);
    for (int k = 0; k < n; k++) free(lines[k]);
    free(lines);
    free(buf);
    return failed;
}

/* The model's language codes on one line each, or all on stderr after a
 * usage error. */
static void print_langs(const encdec_model *m, FILE *f) {
    for (int i = 0; encdec_model_language(m, i); i++) fprintf(f, "%s\n", encdec_model_language(m, i));
}

/* --src-lang and --tgt-lang against the model's codes (translate: a target
 * where there are languages): 1, or 0 after a usage error listing them. */
static int check_langs(const encdec_model *m, const opts *o) {
    const char *bad = NULL, *which = NULL;
    if (o->gp.tgt_lang && encdec_model_find_language(m, o->gp.tgt_lang) < 0) bad = o->gp.tgt_lang, which = "--tgt-lang";
    if (o->gp.src_lang && encdec_model_find_language(m, o->gp.src_lang) < 0) bad = o->gp.src_lang, which = "--src-lang";
    if (bad && !encdec_model_language(m, 0)) {
        cli_err("encdec: %s \"%s\": this model has no languages to choose\n", which, bad);
        return 0;
    }
    if (bad) {
        cli_err("encdec: %s \"%s\" is not one of the model's language codes:\n", which, bad);
        print_langs(m, stderr);
        return 0;
    }
    if (o->translate && !o->gp.tgt_lang && encdec_model_language(m, 0)) {
        cli_err("encdec: translate needs --tgt-lang CODE (encdec translate -m %s --list-languages "
                "lists them)\n", o->model);
        return 0;
    }
    return 1;
}

/* The model's generation config for the search options not given (its
 * beams only where neither --sample nor --stream asks for one sequence at a
 * time). */
static void model_search(const encdec_model *m, opts *o) {
    encdec_generate_params mp = encdec_generate_model_params(m);
    encdec_generate_params *g = &o->gp;
    if (!(o->set & SET_BEAM) && !g->do_sample && !o->stream && mp.num_beams > g->num_return_sequences)
        g->num_beams = mp.num_beams;
    if (!(o->set & SET_LP)) g->length_penalty = mp.length_penalty;
    if (!(o->set & SET_EARLY)) g->early_stopping = mp.early_stopping;
    if (!(o->set & SET_MAX)) g->max_new_tokens = mp.max_new_tokens;
    if (!(o->set & SET_MIN)) g->min_new_tokens = mp.min_new_tokens;
    if (!(o->set & SET_NGRAM)) g->no_repeat_ngram_size = mp.no_repeat_ngram_size;
    if (!(o->set & SET_REP)) g->repetition_penalty = mp.repetition_penalty;
    if (!(o->set & SET_FEOS)) g->forced_eos = mp.forced_eos;
    /* an Argos Translate package's: unknowns replaced, CTranslate2's rules */
    if (!o->stream && mp.replace_unknowns) g->replace_unknowns = 1;
    g->ctranslate2_rules = mp.ctranslate2_rules;
    if (g->min_new_tokens >= g->max_new_tokens) g->min_new_tokens = g->max_new_tokens - 1;
}

int cli_translate(int argc, char **argv) { return cli_generate_as(argc, argv, 1); }

int cli_generate(int argc, char **argv) { return cli_generate_as(argc, argv, 0); }

int cli_generate_as(int argc, char **argv, int translate) {
    opts o;
    int first;
    int rc = parse(argc, argv, &o, &first);
    o.translate = translate;
    if (rc <= 0) return rc == 0 ? 0 : CLI_USAGE_ERR;
    double load_ms;
    encdec_model *m = cli_load_model(o.model, &o.mp, &load_ms);
    if (!m) return 1;
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    if (!strcmp(info.family, "whisper")) {
        cli_err("encdec: %s is a %s model (speech to text): use encdec transcribe\n",
                o.model, info.family);
        encdec_model_free(m);
        return 1;
    }
    model_search(m, &o);
    if (o.list_langs || !check_langs(m, &o)) {
        if (o.list_langs) print_langs(m, stdout);
        encdec_model_free(m);
        return o.list_langs ? 0 : CLI_USAGE_ERR;
    }
    encdec_session *s = NULL;
    encdec_session_params sp = {o.threads, o.cross_kv};
    encdec_status st = encdec_session_new(m, &sp, &s);
    if (st) {
        cli_err("encdec: %s: %s\n", encdec_status_str(st), encdec_last_error());
        encdec_model_free(m);
        return 1;
    }
    int failed = 0;
    if (first < argc) {
        for (int i = first; i < argc; i += o.batch) {
            int n = argc - i < o.batch ? argc - i : o.batch;
            failed |= run_batch(s, (const char *const *)argv + i, n, i - first + 1, &o);
        }
    } else {
        failed = run_stdin(s, &o);
    }
    encdec_session_free(s);
    encdec_model_free(m);
    return failed;
}
