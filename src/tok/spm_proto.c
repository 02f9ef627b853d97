/* spm_proto.c - reads a SentencePiece model file (spiece.model): a serialized
 * sentencepiece.ModelProto, decoded by hand. The fields used (numbers from
 * sentencepiece_model.proto):
 *
 *   ModelProto      1 pieces (repeated SentencePiece)  2 trainer_spec  3 normalizer_spec
 *                   5 denormalizer_spec
 *   SentencePiece   1 piece (string)  2 score (float)  3 type (NORMAL 1, UNKNOWN 2,
 *                   CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6)
 *   TrainerSpec     3 model_type (UNIGRAM 1, BPE 2, WORD 3, CHAR 4)
 *                   24 treat_whitespace_as_suffix  35 byte_fallback
 *   NormalizerSpec  2 precompiled_charsmap  3 add_dummy_prefix  4 remove_extra_whitespaces
 *                   5 escape_whitespaces
 *
 * Wire format: each field is a varint key (number << 3 | wire type) followed by a
 * varint (0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5).
 * Unknown fields are skipped; every length is checked against the enclosing
 * message, so a truncated or corrupt file fails with ENCDEC_ERR_FORMAT naming
 * the byte offset.
 */
#include "tok/spm_internal.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p, *end;     /* the unread part of the current message */
    const uint8_t *base;        /* the file, for offsets in messages */
    const char *file;
    const char *what;           /* the message being read, for errors */
} pb_reader;

static encdec_status pb_error(const pb_reader *r, const char *why) {
    return ed_fail(ENCDEC_ERR_FORMAT, "%s: %s at byte %zu (in %s): truncated or corrupt model file",
                   r->file, why, (size_t)(r->p - r->base), r->what);
}

static encdec_status pb_varint(pb_reader *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) return pb_error(r, "truncated varint");
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return ENCDEC_OK;
        }
    }
    return pb_error(r, "varint longer than 10 bytes");
}

/* Reads a key; *field 0 means the message ended. */
static encdec_status pb_key(pb_reader *r, uint32_t *field, int *wire) {
    *field = 0;
    if (r->p >= r->end) return ENCDEC_OK;
    uint64_t k;
    encdec_status st = pb_varint(r, &k);
    if (st) return st;
    if ((k >> 3) == 0 || (k >> 3) > 0x1fffffff) return pb_error(r, "invalid field number");
    *field = (uint32_t)(k >> 3);
    *wire = (int)(k & 7);
    return ENCDEC_OK;
}

/* A length-delimited field: sub covers its bytes, r moves past them. */
static encdec_status pb_len(pb_reader *r, pb_reader *sub, const char *what) {
    uint64_t n;
    encdec_status st = pb_varint(r, &n);
    if (st) return st;
    if (n > (uint64_t)(r->end - r->p)) return pb_error(r, "length past the end of the message");
    *sub = (pb_reader){r->p, r->p + n, r->base, r->file, what};
    r->p += n;
    return ENCDEC_OK;
}

static encdec_status pb_skip(pb_reader *r, int wire) {
    uint64_t v;
    pb_reader sub;
    switch (wire) {
    case 0: return pb_varint(r, &v);
    case 1:
    case 5: {
        size_t n = wire == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n) return pb_error(r, "truncated fixed-size field");
        r->p += n;
        return ENCDEC_OK;
    }
    case 2: return pb_len(r, &sub, r->what);
    default: return pb_error(r, "unsupported wire type");
    }
}

static encdec_status pb_expect(const pb_reader *r, uint32_t field, int wire, int want) {
    if (wire == want) return ENCDEC_OK;
    char why[96];
    snprintf(why, sizeof why, "field %u has wire type %d, expected %d", field, wire, want);
    return pb_error(r, why);
}

/* A varint field (bool, enum or int32), after its key. */
static encdec_status pb_int(pb_reader *r, uint32_t field, int wire, int64_t *v) {
    uint64_t u;
    encdec_status st = pb_expect(r, field, wire, 0);
    if (!st) st = pb_varint(r, &u);
    if (!st) *v = (int64_t)u;
    return st;
}

/* ---- messages ------------------------------------------------------------------ */

typedef struct {
    int64_t model_type, byte_fallback, ws_suffix;
    int64_t add_dummy_prefix, remove_extra_ws, escape_ws;
    const uint8_t *cmap;
    size_t cmap_len;
    int denormalizer_rules;
} model_spec;

static encdec_status read_piece(spm_tok *t, pb_reader *r, int id) {
    const uint8_t *s = NULL;
    size_t n = 0;
    float score = 0;
    int64_t type = SPM_NORMAL;
    uint32_t field;
    int wire;
    for (;;) {
        encdec_status st = pb_key(r, &field, &wire);
        if (st) return st;
        if (!field) break;
        if (field == 1) {
            pb_reader sub;
            if ((st = pb_expect(r, field, wire, 2)) || (st = pb_len(r, &sub, r->what))) return st;
            s = sub.p;
            n = (size_t)(sub.end - sub.p);
        } else if (field == 2) {
            if ((st = pb_expect(r, field, wire, 5))) return st;
            if (r->end - r->p < 4) return pb_error(r, "truncated score");
            uint32_t u = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                         (uint32_t)r->p[3] << 24;
            memcpy(&score, &u, 4);
            r->p += 4;
        } else if (field == 3) {
            if ((st = pb_int(r, field, wire, &type))) return st;
        } else if ((st = pb_skip(r, wire))) {
            return st;
        }
    }
    if (!s || n == 0) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: piece %d is empty", r->file, id);
    if (type < SPM_NORMAL || type > SPM_BYTE)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: piece %d has unknown type %lld", r->file, id, (long long)type);
    return spm_put(t, id, (const char *)s, n, score, (int)type, r->file);
}

static encdec_status read_trainer(pb_reader *r, model_spec *m) {
    uint32_t field;
    int wire;
    for (;;) {
        encdec_status st = pb_key(r, &field, &wire);
        if (st) return st;
        if (!field) return ENCDEC_OK;
        if (field == 3) st = pb_int(r, field, wire, &m->model_type);
        else if (field == 24) st = pb_int(r, field, wire, &m->ws_suffix);
        else if (field == 35) st = pb_int(r, field, wire, &m->byte_fallback);
        else st = pb_skip(r, wire);
        if (st) return st;
    }
}

static encdec_status read_normalizer(pb_reader *r, model_spec *m, int denormalizer) {
    uint32_t field;
    int wire;
    for (;;) {
        encdec_status st = pb_key(r, &field, &wire);
        if (st) return st;
        if (!field) return ENCDEC_OK;
        if (field == 2) {
            pb_reader sub;
            if ((st = pb_expect(r, field, wire, 2)) || (st = pb_len(r, &sub, r->what))) return st;
            if (denormalizer) {
                m->denormalizer_rules |= sub.end > sub.p;
            } else {
                m->cmap = sub.p;
                m->cmap_len = (size_t)(sub.end - sub.p);
            }
        } else if (!denormalizer && field == 3) st = pb_int(r, field, wire, &m->add_dummy_prefix);
        else if (!denormalizer && field == 4) st = pb_int(r, field, wire, &m->remove_extra_ws);
        else if (!denormalizer && field == 5) st = pb_int(r, field, wire, &m->escape_ws);
        else st = pb_skip(r, wire);
        if (st) return st;
    }
}

static encdec_status read_model(spm_tok *t, pb_reader *r, model_spec *m) {
    int n_pieces = 0;
    uint32_t field;
    int wire;
    char what[64];
    for (;;) {
        encdec_status st = pb_key(r, &field, &wire);
        if (st) return st;
        if (!field) return ENCDEC_OK;
        pb_reader sub;
        if (field == 1 || field == 2 || field == 3 || field == 5) {
            static const char *names[] = {"", "", "trainer_spec", "normalizer_spec", "", "denormalizer_spec"};
            if (field == 1) snprintf(what, sizeof what, "piece %d", n_pieces);
            else snprintf(what, sizeof what, "%s", names[field]);
            if ((st = pb_expect(r, field, wire, 2)) || (st = pb_len(r, &sub, what))) return st;
        }
        if (field == 1) {
            if (n_pieces >= SPM_MAX_ID - 100) return pb_error(r, "too many pieces");
            st = read_piece(t, &sub, n_pieces++);
        } else if (field == 2) st = read_trainer(&sub, m);
        else if (field == 3) st = read_normalizer(&sub, m, 0);
        else if (field == 5) st = read_normalizer(&sub, m, 1);
        else st = pb_skip(r, wire);
        if (st) return st;
    }
}

/* ---- checks and T5 conventions ---------------------------------------------------- */

static const char *model_type_name(int64_t v) {
    switch (v) {
    case 1: return "UNIGRAM";
    case 2: return "BPE";
    case 3: return "WORD";
    case 4: return "CHAR";
    }
    return "unknown";
}

/* What sentencepiece checks at load: one <unk>, byte pieces only with
 * byte_fallback, no spelling twice among normal pieces or among the others. */
static encdec_status check_pieces(spm_tok *t, const model_spec *m, int n_pieces, const char *file) {
    for (int id = 0; id < n_pieces; id++) {
        const char *s = tv_spelling(&t->voc, id);
        size_t n = tv_len(&t->voc, id);
        int ty = t->type[id];
        if (ty == SPM_UNKNOWN) {
            if (t->unk >= 0)
                return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: two unknown pieces (ids %d and %d)", file, t->unk, id);
            t->unk = id;
        }
        if (ty == SPM_BYTE && !m->byte_fallback)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: byte piece \"%s\" (id %d) but byte_fallback is off",
                           file, s, id);
        if (ty == SPM_BYTE && spm_byte_of_piece(s, n) < 0)
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: byte piece %d is spelled \"%s\", expected <0xNN>", file, id, s);
        int first = spm_lookup(t, s, n);
        int normal = ty == SPM_NORMAL || ty == SPM_USER_DEFINED || ty == SPM_UNUSED;
        int ft = t->type[first];
        if (first != id && normal == (ft == SPM_NORMAL || ft == SPM_USER_DEFINED || ft == SPM_UNUSED))
            return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: piece \"%s\" is defined twice (ids %d and %d)",
                           file, s, first, id);
        if (ty == SPM_USER_DEFINED) {
            t->n_user++;
            if (n > t->user_max_len) t->user_max_len = n;
        }
    }
    if (t->unk < 0) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no unknown piece (<unk>)", file);
    return ENCDEC_OK;
}

encdec_status spm_load_proto(spm_tok *t, const uint8_t *data, size_t size, const char *file,
                             int n_extra) {
    if (size == 0) return ed_fail(ENCDEC_ERR_FORMAT, "%s: empty file", file);
    model_spec m = {.model_type = 1, .add_dummy_prefix = 1, .remove_extra_ws = 1, .escape_ws = 1};
    pb_reader r = {data, data + size, data, file, "ModelProto"};
    encdec_status st = read_model(t, &r, &m);
    if (st) return st;
    if (m.model_type != 1 && m.model_type != 2)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: model_type is %s (%lld); only UNIGRAM and BPE models are supported",
                       file, model_type_name(m.model_type), (long long)m.model_type);
    if (m.ws_suffix) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: treat_whitespace_as_suffix is not supported", file);
    if (m.denormalizer_rules) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: denormalizer rules are not supported", file);
    int n_pieces = t->voc.n;
    if (n_pieces == 0) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no pieces", file);

    /* T5's sentinels (100 unless tokenizer_config.json says otherwise) after
     * the pieces, <extra_id_0> last. */
    for (int i = 0; i < n_extra; i++) {
        char s[32];
        int n = snprintf(s, sizeof s, "<extra_id_%d>", n_extra - 1 - i);
        if ((st = spm_put(t, n_pieces + i, s, (size_t)n, 0, SPM_ADDED, file))) return st;
    }
    t->bpe = m.model_type == 2;
    t->byte_fallback = m.byte_fallback != 0;
    t->decode_bytes = t->byte_fallback;
    t->add_dummy_prefix = m.add_dummy_prefix != 0;
    t->remove_extra_ws = m.remove_extra_ws != 0;
    t->escape_ws = m.escape_ws != 0;
    if (m.cmap_len && (st = spm_charsmap_init(&t->cmap, m.cmap, m.cmap_len, file))) return st;
    if ((st = spm_finish(t, file)) || (st = check_pieces(t, &m, n_pieces, file))) return st;

    /* HF's T5Tokenizer: eos "</s>", pad "<pad>", unk "<unk>" by spelling; its
     * sentinels swallow the whitespace around them, the others do not. */
    t->eos = spm_lookup(t, "</s>", 4);
    t->pad = spm_lookup(t, "<pad>", 5);
    if (t->eos < 0 || t->eos >= n_pieces) return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no </s> piece", file);
    if (t->pad >= n_pieces) t->pad = -1;
    int unk = spm_lookup(t, "<unk>", 5);
    if (unk >= 0 && unk < n_pieces && unk != t->unk)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: <unk> (id %d) is not the unknown piece (id %d)", file, unk, t->unk);
    const int plain[3] = {t->pad, t->eos, t->unk};
    for (int i = 0; i < 3; i++) {
        if (plain[i] < 0) continue;
        t->special[plain[i]] = 1;
        if ((st = spm_add_special(t, plain[i], 0, 0, 0, file))) return st;
    }
    for (int i = 0; i < n_extra; i++) {
        t->special[n_pieces + i] = 1;
        if ((st = spm_add_special(t, n_pieces + i, 1, 1, 0, file))) return st;
    }
    return ENCDEC_OK;
}
