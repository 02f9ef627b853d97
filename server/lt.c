/* lt.c - LibreTranslate's requests and responses over a translation model
 * (lt.h). */
#include "lt.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* NLLB-200's codes (ISO 639-3 and script) that have an ISO 639-1 code, as
 * LibreTranslate names languages ("zt": Chinese in traditional script, which
 * its API spells "zh-Hant": srv_lt_iso). The
 * 639-3 part also names Marian's >>fra<< tokens. */
static const char *const NLLB_ISO1[][2] = {
    {"afr_Latn", "af"}, {"aka_Latn", "ak"}, {"amh_Ethi", "am"}, {"arb_Arab", "ar"}, {"asm_Beng", "as"},
    {"ayr_Latn", "ay"}, {"azj_Latn", "az"}, {"bak_Cyrl", "ba"}, {"bam_Latn", "bm"}, {"bel_Cyrl", "be"},
    {"ben_Beng", "bn"}, {"bod_Tibt", "bo"}, {"bos_Latn", "bs"}, {"bul_Cyrl", "bg"}, {"cat_Latn", "ca"},
    {"ces_Latn", "cs"}, {"cym_Latn", "cy"}, {"dan_Latn", "da"}, {"deu_Latn", "de"}, {"dzo_Tibt", "dz"},
    {"ell_Grek", "el"}, {"eng_Latn", "en"}, {"epo_Latn", "eo"}, {"est_Latn", "et"}, {"eus_Latn", "eu"},
    {"ewe_Latn", "ee"}, {"fao_Latn", "fo"}, {"pes_Arab", "fa"}, {"fij_Latn", "fj"}, {"fin_Latn", "fi"},
    {"fra_Latn", "fr"}, {"gla_Latn", "gd"}, {"gle_Latn", "ga"}, {"glg_Latn", "gl"}, {"grn_Latn", "gn"},
    {"guj_Gujr", "gu"}, {"hat_Latn", "ht"}, {"hau_Latn", "ha"}, {"heb_Hebr", "he"}, {"hin_Deva", "hi"},
    {"hrv_Latn", "hr"}, {"hun_Latn", "hu"}, {"hye_Armn", "hy"}, {"ibo_Latn", "ig"}, {"ind_Latn", "id"},
    {"isl_Latn", "is"}, {"ita_Latn", "it"}, {"jav_Latn", "jv"}, {"jpn_Jpan", "ja"}, {"kan_Knda", "kn"},
    {"kas_Arab", "ks"}, {"kat_Geor", "ka"}, {"kaz_Cyrl", "kk"}, {"khm_Khmr", "km"}, {"kik_Latn", "ki"},
    {"kin_Latn", "rw"}, {"kir_Cyrl", "ky"}, {"kon_Latn", "kg"}, {"kor_Hang", "ko"}, {"kmr_Latn", "ku"},
    {"lao_Laoo", "lo"}, {"lvs_Latn", "lv"}, {"lim_Latn", "li"}, {"lin_Latn", "ln"}, {"lit_Latn", "lt"},
    {"ltz_Latn", "lb"}, {"lug_Latn", "lg"}, {"mal_Mlym", "ml"}, {"mar_Deva", "mr"}, {"mkd_Cyrl", "mk"},
    {"plt_Latn", "mg"}, {"mlt_Latn", "mt"}, {"khk_Cyrl", "mn"}, {"mri_Latn", "mi"}, {"zsm_Latn", "ms"},
    {"mya_Mymr", "my"}, {"nld_Latn", "nl"}, {"nno_Latn", "nn"}, {"nob_Latn", "nb"}, {"npi_Deva", "ne"},
    {"nya_Latn", "ny"}, {"oci_Latn", "oc"}, {"gaz_Latn", "om"}, {"ory_Orya", "or"}, {"pan_Guru", "pa"},
    {"pol_Latn", "pl"}, {"por_Latn", "pt"}, {"pbt_Arab", "ps"}, {"quy_Latn", "qu"}, {"ron_Latn", "ro"},
    {"run_Latn", "rn"}, {"rus_Cyrl", "ru"}, {"sag_Latn", "sg"}, {"san_Deva", "sa"}, {"srd_Latn", "sc"},
    {"sin_Sinh", "si"}, {"slk_Latn", "sk"}, {"slv_Latn", "sl"}, {"smo_Latn", "sm"}, {"sna_Latn", "sn"},
    {"snd_Arab", "sd"}, {"som_Latn", "so"}, {"sot_Latn", "st"}, {"spa_Latn", "es"}, {"als_Latn", "sq"},
    {"srp_Cyrl", "sr"}, {"ssw_Latn", "ss"}, {"sun_Latn", "su"}, {"swe_Latn", "sv"}, {"swh_Latn", "sw"},
    {"tam_Taml", "ta"}, {"tat_Cyrl", "tt"}, {"tel_Telu", "te"}, {"tgk_Cyrl", "tg"}, {"tgl_Latn", "tl"},
    {"tha_Thai", "th"}, {"tir_Ethi", "ti"}, {"tsn_Latn", "tn"}, {"tso_Latn", "ts"}, {"tuk_Latn", "tk"},
    {"tur_Latn", "tr"}, {"twi_Latn", "tw"}, {"uig_Arab", "ug"}, {"ukr_Cyrl", "uk"}, {"urd_Arab", "ur"},
    {"uzn_Latn", "uz"}, {"vie_Latn", "vi"}, {"wol_Latn", "wo"}, {"xho_Latn", "xh"}, {"ydd_Hebr", "yi"},
    {"yor_Latn", "yo"}, {"zho_Hans", "zh"}, {"zho_Hant", "zt"}, {"zul_Latn", "zu"},
};
#define N_NLLB ((int)(sizeof NLLB_ISO1 / sizeof *NLLB_ISO1))

/* ---- codes ------------------------------------------------------------------------------ */

void srv_lt_code(const encdec_model *m, int i, char *out, size_t n) {
    const char *c = encdec_model_language(m, i);
    snprintf(out, n, "%s", c ? c : "");
    if (!c) return;
    size_t len = strlen(c);
    for (int k = 0; k < N_NLLB; k++) {
        const char *x = NLLB_ISO1[k][0];
        if (!strcmp(x, c) || (len == 3 && !strncmp(x, c, 3))) {   /* NLLB; Marian's "fra" */
            snprintf(out, n, "%s", NLLB_ISO1[k][1]);
            return;
        }
    }
    /* mBART's "fr_XX": its ISO 639-1 part */
    if (len == 5 && c[2] == '_' && islower((unsigned char)c[0]) && islower((unsigned char)c[1]))
        snprintf(out, n, "%.2s", c);
}

/* LibreTranslate's three codes beyond ISO 639-1, and how its API spells
 * them (its model2iso; iso2model the other way, any letter case). */
static const char *const ISO_ALIAS[][2] = {{"zh", "zh-Hans"}, {"zt", "zh-Hant"}, {"pb", "pt-BR"}};
#define N_ALIAS ((int)(sizeof ISO_ALIAS / sizeof *ISO_ALIAS))

const char *srv_lt_iso(const char *code) {
    for (int i = 0; i < N_ALIAS; i++)
        if (!strcmp(code, ISO_ALIAS[i][0])) return ISO_ALIAS[i][1];
    return code;
}

/* A client's code as LibreTranslate reads it: an alias as its model's
 * code, anything else lowercased (into buf). */
static const char *iso2model(const char *code, char *buf, size_t n) {
    for (int i = 0; i < N_ALIAS; i++)
        if (!strcasecmp(code, ISO_ALIAS[i][1])) return ISO_ALIAS[i][0];
    size_t k = 0;
    for (; code[k] && k + 1 < n; k++) buf[k] = (char)tolower((unsigned char)code[k]);
    buf[k] = 0;
    return buf;
}

static int find_code(const encdec_model *m, const char *code) {
    int i = encdec_model_find_language(m, code);
    if (i >= 0) return i;
    char c[40];
    for (i = 0; encdec_model_language(m, i); i++) {
        srv_lt_code(m, i, c, sizeof c);
        if (!strcmp(c, code)) return i;
    }
    return -1;
}

int srv_lt_find(const encdec_model *m, const char *code) {
    if (!code || !*code || strlen(code) > 32) return -1;
    int i = find_code(m, code);   /* as given: the model's own ("fra_Latn") or LibreTranslate's */
    char buf[40];
    const char *lt = iso2model(code, buf, sizeof buf);
    return i >= 0 || !strcmp(lt, code) ? i : find_code(m, lt);
}

/* ---- parsing ------------------------------------------------------------------------------ */

static int fail(srv_lt_error *e, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    e->status = status;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    srv_utf8_clean(e->message);   /* a client's value it quotes may be no UTF-8, or cut */
    return 0;
}

static int hexv(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes a urlencoded value in place ('+' a space, %XX a byte); 0 when a
 * % is not followed by two hex digits. */
static int url_decode(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '+') {
            *w++ = ' ';
        } else if (*r == '%') {
            int a = hexv(r[1]), b = a >= 0 ? hexv(r[2]) : -1;
            if (b < 0) return 0;
            *w++ = (char)(a << 4 | b);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return 1;
}

typedef struct {
    const char *q, *source, *target, *format, *alternatives;
} lt_fields;

/* The line break at s (as Python's str.splitlines sees them: \r\n, \n, \r,
 * \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029): its bytes, else 0. */
static size_t line_break(const char *s) {
    if (s[0] == '\r' && s[1] == '\n') return 2;
    if (s[0] && strchr("\n\r\v\f\x1c\x1d\x1e", s[0])) return 1;
    if (!strncmp(s, "\xc2\x85", 2)) return 2;
    if (!strncmp(s, "\xe2\x80\xa8", 3) || !strncmp(s, "\xe2\x80\xa9", 3)) return 3;
    return 0;
}

/* A form's text with its line breaks as LibreTranslate makes them
 * ("\n".join(q.splitlines())): each one \n, the last one of the text
 * dropped; in place. */
static void unix_lines(char *q) {
    char *w = q;
    for (const char *r = q; *r;) {
        size_t k = line_break(r);
        if (!k) {
            *w++ = *r++;
            continue;
        }
        r += k;
        if (*r) *w++ = '\n';
    }
    *w = 0;
}

static int parse_form(srv_lt_req *r, const char *body, size_t len, lt_fields *f, srv_lt_error *e) {
    if (!(r->form = malloc(len + 1))) return fail(e, 500, "out of memory");
    memcpy(r->form, body, len);
    r->form[len] = 0;
    if (memchr(body, 0, len)) return fail(e, 400, "the form holds a NUL byte");
    for (char *save = NULL, *kv = strtok_r(r->form, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *v = strchr(kv, '=');
        if (!v) continue;
        *v++ = 0;
        if (!url_decode(kv) || !url_decode(v)) return fail(e, 400, "a malformed %%-escape in the form");
        if (!strcmp(kv, "q")) f->q = v;
        else if (!strcmp(kv, "source")) f->source = v;
        else if (!strcmp(kv, "target")) f->target = v;
        else if (!strcmp(kv, "format")) f->format = v;
        else if (!strcmp(kv, "alternatives")) f->alternatives = v;
    }
    if (f->q) {
        unix_lines((char *)f->q);
        r->q[r->n_q++] = f->q;
    }
    return 1;
}

static const char *json_str(const cJSON *j, const char *key, int *bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (v && !cJSON_IsString(v) && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && !strcmp(key, "alternatives")))
        *bad = 1;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int parse_json(srv_lt_req *r, const char *body, size_t len, lt_fields *f, srv_lt_error *e) {
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return fail(e, 400, "the body is not a JSON object");
    }
    r->json = j;
    int bad = 0;
    f->source = json_str(j, "source", &bad);
    f->target = json_str(j, "target", &bad);
    f->format = json_str(j, "format", &bad);
    const cJSON *alt = cJSON_GetObjectItemCaseSensitive(j, "alternatives");
    if (cJSON_IsNumber(alt)) {
        if (!(alt->valuedouble >= 0 && alt->valuedouble <= 8) || alt->valuedouble != (int)alt->valuedouble)
            return fail(e, 400, "Invalid request: alternatives must be a whole number from 0 to 8");
        r->alternatives = (int)alt->valuedouble;
    } else if (alt && !cJSON_IsNull(alt)) {
        f->alternatives = json_str(j, "alternatives", &bad);
    }
    if (bad) return fail(e, 400, "Invalid request: source, target and format are strings");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "q"), *it;
    if (cJSON_IsString(q)) {
        r->q[r->n_q++] = q->valuestring;
    } else if (cJSON_IsArray(q)) {
        r->q_list = 1;
        cJSON_ArrayForEach(it, q) {
            if (!cJSON_IsString(it)) return fail(e, 400, "Invalid request: q must be a string or a list of strings");
            if (r->n_q == SRV_LT_MAX_Q) return fail(e, 400, "Invalid request: at most %d texts a request", SRV_LT_MAX_Q);
            r->q[r->n_q++] = it->valuestring;
        }
    } else if (q && !cJSON_IsNull(q)) {
        return fail(e, 400, "Invalid request: q must be a string or a list of strings");
    }
    return 1;
}

/* The texts: at least one, none empty, all UTF-8. */
static int check_q(const srv_lt_req *r, srv_lt_error *e) {
    if (!r->n_q) return fail(e, 400, "Invalid request: missing q parameter");
    for (int i = 0; i < r->n_q; i++) {
        if (!*r->q[i]) return fail(e, 400, "Invalid request: text %d of q is empty", i);
        size_t bad = srv_utf8_bad(r->q[i]);
        if (bad != (size_t)-1)
            return fail(e, 400, "Invalid request: text %d of q is not UTF-8 (byte %zu)", i, bad);
    }
    return 1;
}

/* The model's language for a client's code; "auto" (and an absent
 * source) the model's default where it has one. */
static int map_lang(const encdec_model *m, const char *code, int source, int *out, int *auto_src,
                    srv_lt_error *e) {
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    *out = -1;
    const char *which = source ? "source" : "target";
    int marian = !strcmp(info.model_type, "marian");
    if (!encdec_model_language(m, 0) || (source && marian)) {   /* one pair; Marian's one source */
        const char *mine = source ? info.source_language : info.target_language;
        if (source && code && !strcmp(code, "auto")) *auto_src = 1;
        char buf[40];
        if (!code || !strcmp(code, "auto") || !mine || !strcmp(code, mine) ||
            !strcmp(iso2model(code, buf, sizeof buf), mine))
            return 1;
        return fail(e, 400, "%s language %.40s is not supported: this model translates %s to %s", which,
                    code, info.source_language ? info.source_language : "?",
                    info.target_language ? info.target_language : "?");
    }
    if (source && code && !strcmp(code, "auto")) *auto_src = 1;
    if (source && (!code || !strcmp(code, "auto"))) return 1;   /* the tokenizer's default */
    if (!code) return fail(e, 400, "Invalid request: missing target parameter");
    if ((*out = srv_lt_find(m, code)) < 0)
        return fail(e, 400, "%s language %.40s is not supported (GET /languages lists them)", which, code);
    return 1;
}

int srv_lt_parse(const encdec_model *m, const char *body, size_t len, int is_json, srv_lt_req *r,
                 srv_lt_error *e) {
    memset(r, 0, sizeof *r);
    r->src = r->tgt = -1;
    lt_fields f = {0};
    if (!(is_json ? parse_json(r, body, len, &f, e) : parse_form(r, body, len, &f, e))) return 0;
    if (!check_q(r, e)) return 0;
    if (f.alternatives) {
        char *end;
        long a = strtol(f.alternatives, &end, 10);
        if (*end || end == f.alternatives || a < 0 || a > 8)
            return fail(e, 400, "Invalid request: alternatives must be a whole number from 0 to 8");
        r->alternatives = (int)a;
    }
    if (f.format && strcmp(f.format, "text")) {
        if (strcmp(f.format, "html"))
            return fail(e, 400, "format %.20s is not supported: text or html", f.format);
        r->html = 1;
        if (r->alternatives)
            return fail(e, 400, "Invalid request: alternatives are given for format text only");
    }
    if (!f.target) return fail(e, 400, "Invalid request: missing target parameter");
    return map_lang(m, f.source, 1, &r->src, &r->auto_src, e) && map_lang(m, f.target, 0, &r->tgt, &r->auto_src, e);
}

int srv_lt_pair(const encdec_model *m, const char *source, const char *target, srv_lt_req *r, srv_lt_error *e) {
    memset(r, 0, sizeof *r);
    r->src = r->tgt = -1;
    if (!source || !*source) return fail(e, 400, "Invalid request: missing source parameter");
    if (!target || !*target) return fail(e, 400, "Invalid request: missing target parameter");
    return map_lang(m, source, 1, &r->src, &r->auto_src, e) && map_lang(m, target, 0, &r->tgt, &r->auto_src, e);
}

int srv_lt_parse_q(const char *body, size_t len, int is_json, srv_lt_req *r, srv_lt_error *e) {
    memset(r, 0, sizeof *r);
    r->src = r->tgt = -1;
    lt_fields f = {0};
    return (is_json ? parse_json(r, body, len, &f, e) : parse_form(r, body, len, &f, e)) && check_q(r, e);
}

void srv_lt_free(srv_lt_req *r) {
    cJSON_Delete(r->json);
    free(r->form);
    memset(r, 0, sizeof *r);
}

/* ---- responses ---------------------------------------------------------------------------- */

static char *print(cJSON *j) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return s;
}

/* A code point of LibreTranslate's map of emoji (and the space). */
static int lt_emoji(uint32_t c) {
    static const uint32_t r[][2] = {{0x1F600, 0x1F64F}, {0x1F300, 0x1F5FF}, {0x1F680, 0x1F6FF},
                                    {0x2600, 0x26FF},   {0x2700, 0x27BF},   {0xFE00, 0xFE0F},
                                    {0x1F900, 0x1F9FF}, {0x1F1E6, 0x1F1FF}, {0x20D0, 0x20FF}};
    if (c == ' ') return 1;
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (c >= r[i][0] && c < r[i][1]) return 1;
    return 0;
}

int srv_lt_translatable(const srv_lt_req *r) {
    for (int i = 0; i < r->n_q; i++) {
        const char *s = r->q[i];
        size_t n = strlen(s);
        for (size_t at = 0; at < n;) {
            uint32_t c;
            int k = srv_utf8_next(s + at, n - at, &c);
            if (k <= 0 || !lt_emoji(c)) return 1;   /* (parsed texts are UTF-8) */
            at += (size_t)k;
        }
    }
    return 0;
}

char *srv_lt_body(const srv_lt_req *r, const char *const *texts) {
    cJSON *j = cJSON_CreateObject(), *tt = NULL, *alts = NULL;
    int per = 1 + r->alternatives;
    if (r->q_list) {
        tt = cJSON_AddArrayToObject(j, "translatedText");
        if (r->alternatives) alts = cJSON_AddArrayToObject(j, "alternatives");
    }
    cJSON *det = NULL;
    if (r->has_detected) {
        det = r->q_list ? cJSON_AddArrayToObject(j, "detectedLanguage") : NULL;
        for (int i = 0; i < (r->q_list ? r->n_q : 1); i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "confidence", r->detected_conf);
            cJSON_AddStringToObject(o, "language", srv_lt_iso(r->detected));
            if (det) cJSON_AddItemToArray(det, o);
            else cJSON_AddItemToObject(j, "detectedLanguage", o);
        }
    }
    for (int i = 0; i < r->n_q; i++) {
        const char *t = texts[i * per];
        cJSON *a = r->alternatives ? cJSON_CreateArray() : NULL;
        for (int k = 1; k < per; k++) {   /* as LibreTranslate lists them: empty ones and repeats out */
            const char *x = texts[i * per + k];
            int dup = !*x || !strcmp(x, t);
            for (int k2 = 1; k2 < k && !dup; k2++) dup = !strcmp(x, texts[i * per + k2]);
            if (!dup) cJSON_AddItemToArray(a, cJSON_CreateString(x));
        }
        if (r->q_list) {
            cJSON_AddItemToArray(tt, cJSON_CreateString(t));
            if (a) cJSON_AddItemToArray(alts, a);
        } else {
            cJSON_AddStringToObject(j, "translatedText", t);
            if (a) cJSON_AddItemToObject(j, "alternatives", a);
        }
    }
    return print(j);
}

/* A language's entry: its code as LibreTranslate's API spells it, name
 * (Whisper's English names where it has one, capitalised; else the code)
 * and targets. */
static cJSON *lang_entry(const char *code, cJSON *targets) {
    cJSON *o = cJSON_CreateObject();
    char name[64];
    const char *n = !strcmp(code, "zt") ? "Chinese (traditional)"
                  : !strcmp(code, "pb") ? "Portuguese (Brazil)" : encdec_language_name(code);
    snprintf(name, sizeof name, "%s", n ? n : code);
    name[0] = (char)toupper((unsigned char)name[0]);
    cJSON_AddStringToObject(o, "code", srv_lt_iso(code));
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddItemToObject(o, "targets", targets);
    return o;
}

static cJSON *languages(const encdec_model *m) {
    cJSON *a = cJSON_CreateArray();
    char c[40];
    if (!encdec_model_language(m, 0)) {
        encdec_model_info info;
        encdec_model_get_info(m, &info);
        if (info.source_language && info.target_language) {
            cJSON *t = cJSON_CreateArray();
            cJSON_AddItemToArray(t, cJSON_CreateString(info.target_language));
            cJSON_AddItemToArray(a, lang_entry(info.source_language, t));
        }
        return a;
    }
    encdec_model_info info;
    encdec_model_get_info(m, &info);
    if (!strcmp(info.model_type, "marian")) {   /* one source (or any), the >>xx<< targets */
        cJSON *t = cJSON_CreateArray();
        for (int k = 0; encdec_model_language(m, k); k++) {
            srv_lt_code(m, k, c, sizeof c);
            cJSON_AddItemToArray(t, cJSON_CreateString(srv_lt_iso(c)));
        }
        cJSON_AddItemToArray(a, lang_entry(info.source_language ? info.source_language : "auto", t));
        return a;
    }
    /* every language translates into every other (the model's list) */
    for (int i = 0; encdec_model_language(m, i); i++) {
        cJSON *t = cJSON_CreateArray();
        for (int k = 0; encdec_model_language(m, k); k++) {
            if (k == i) continue;
            srv_lt_code(m, k, c, sizeof c);
            cJSON_AddItemToArray(t, cJSON_CreateString(srv_lt_iso(c)));
        }
        srv_lt_code(m, i, c, sizeof c);
        cJSON_AddItemToArray(a, lang_entry(c, t));
    }
    return a;
}

char *srv_lt_languages(const encdec_model *m) { return print(languages(m)); }

/* {"code", "name"} of a language the list names. */
static cJSON *lang_named(const char *code) {
    cJSON *o = lang_entry(code, cJSON_CreateArray());
    cJSON_DeleteItemFromObject(o, "targets");
    return o;
}

char *srv_lt_settings(const encdec_model *m, const char *const *files) {
    cJSON *langs = languages(m), *j = cJSON_CreateObject(), *l = cJSON_CreateObject();
    const cJSON *first = cJSON_GetArrayItem(langs, 0);
    const cJSON *src = cJSON_GetObjectItem(first, "code");
    const cJSON *tgt = cJSON_GetArrayItem(cJSON_GetObjectItem(first, "targets"), 0);
    cJSON_AddNumberToObject(j, "charLimit", -1);   /* (a body is at most 1 MB) */
    cJSON_AddNumberToObject(j, "frontendTimeout", 500);
    cJSON_AddFalseToObject(j, "apiKeys");
    cJSON_AddFalseToObject(j, "keyRequired");
    cJSON_AddFalseToObject(j, "suggestions");
    cJSON_AddBoolToObject(j, "filesTranslation", files != NULL);
    cJSON *formats = cJSON_CreateArray();
    for (; files && *files; files++) cJSON_AddItemToArray(formats, cJSON_CreateString(*files));
    cJSON_AddItemToObject(j, "supportedFilesFormat", formats);
    char b1[40], b2[40];
    cJSON_AddItemToObject(l, "source", lang_named(cJSON_IsString(src) ? iso2model(src->valuestring, b1, sizeof b1) : "auto"));
    cJSON_AddItemToObject(l, "target", lang_named(cJSON_IsString(tgt) ? iso2model(tgt->valuestring, b2, sizeof b2) : "en"));
    cJSON_AddItemToObject(j, "language", l);
    cJSON_Delete(langs);
    return print(j);
}

char *srv_lt_error_body(const char *message) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", message);
    return print(j);
}
