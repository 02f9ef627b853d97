/* text_base.c - what the text tokenizer kinds share beneath them: an
 * ed_ttok's release, and the vocab.json table of the mapped kinds (Marian's
 * and text_sp.c's), each spelling's id and its text (U+2581 read as a space).
 * It calls no other text_*.c (text_internal.h has the layers).
 */
#include "tok/text_internal.h"
#include "base/err.h"
#include "base/fmap.h"
#include "base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_MARK "\xe2\x96\x81"   /* U+2581 */

encdec_status ttok_put_text(tok_vocab *v, int id, const char *s, const char *file) {
    size_t n = strlen(s), k = 0;
    char *t = malloc(n + 1);
    if (!t) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: tokenizer");
    for (size_t i = 0; i < n;) {
        if (!strncmp(s + i, SPACE_MARK, 3)) {
            t[k++] = ' ';
            i += 3;
        } else {
            t[k++] = s[i++];
        }
    }
    int added;
    encdec_status st = tv_put(v, id, t, k, file, &added);
    free(t);
    return st;
}

encdec_status ttok_read_vocab_json(ed_ttok *t, const char *path) {
    cJSON *c;
    encdec_status st = ed_json_load(path, &c);
    if (st) return st;
    const cJSON *e;
    int added;
    cJSON_ArrayForEach(e, c) {
        /* the range first: a cast of 1e300 to int is undefined (the fuzzer's find) */
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < TV_MAX_ID) ||
            e->valuedouble != floor(e->valuedouble)) {
            st = ed_fail(ENCDEC_ERR_TOKENIZER, "%s: the id of \"%.40s\" is not an integer in "
                         "[0, %d)", ed_basename(path), e->string, TV_MAX_ID);
            break;
        }
        st = tv_put(&t->vocab, e->valueint, e->string, strlen(e->string), path, &added);
        if (!st) st = ttok_put_text(&t->text, e->valueint, e->string, path);
        if (st) break;
    }
    cJSON_Delete(c);
    if (!st) st = tv_check(&t->vocab, path);
    if (st) return st;
    t->eos = tv_lookup(&t->vocab, "</s>", 4);
    t->unk = tv_lookup(&t->vocab, "<unk>", 5);
    t->pad = tv_lookup(&t->vocab, "<pad>", 5);
    if (t->eos < 0 || t->unk < 0)
        return ed_fail(ENCDEC_ERR_TOKENIZER, "%s: no \"</s>\" or \"<unk>\"", ed_basename(path));
    return ENCDEC_OK;
}

void ttok_free(ed_ttok *t) {
    if (!t) return;
    bpe_free(t->bpe);
    spm_free(t->src);
    spm_free(t->tgt);
    tv_free(&t->vocab);
    tv_free(&t->text);
    free(t->special);
    free(t->added);
    for (int i = 0; i < t->n_langs; i++) free(t->lang_code[i]);
    free(t->lang_code);
    free(t->lang_id);
    free(t->pair[0]);
    free(t->pair[1]);
    free(t);
}
