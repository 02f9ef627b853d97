/* tensor.h - the weight table: every loader (safetensors, CTranslate2, ggml) fills
 * one, and model code looks tensors up by name in it.
 *
 *   ed_wtab *t = wtab_new();
 *   st_load_file(t, "dir/model.safetensors");      (or ct2_load_file, st_load_dir)
 *   const ed_tensor *w = wtab_get(t, "model.encoder.conv1.weight");
 *   wtab_free(t);
 *
 * A table owns the file mappings its tensors point into; tensor data stays
 * valid until wtab_free. Tensors are read-only. Not thread-safe while being
 * filled; safe to read from any number of threads afterwards.
 */
#ifndef ED_TENSOR_H
#define ED_TENSOR_H

#include "encdec.h"
#include "base/fmap.h"
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ED_F32 = 0, ED_F16, ED_BF16, ED_F64,
    ED_I8, ED_U8, ED_I16, ED_I32, ED_I64, ED_BOOL,
    ED_DTYPE_COUNT
} ed_dtype;

#define ED_MAX_DIMS 4

typedef struct {
    const char *name;          /* owned by the table */
    const char *file;          /* file it came from, for messages (owned by the table) */
    ed_dtype dtype;
    int ndim;                  /* 0 for a scalar */
    int64_t shape[ED_MAX_DIMS];
    size_t nbytes;             /* = product(shape) * ed_dtype_size(dtype) */
    const void *data;          /* into a mapping, or owned by the table */
} ed_tensor;

typedef struct ed_wtab ed_wtab;

ed_wtab *wtab_new(void);                 /* NULL on out of memory (message set) */
void wtab_free(ed_wtab *t);

/* Adds a tensor whose data points into memory the table already keeps alive
 * (a mapping passed to wtab_keep_map, or the table itself). Copies name and
 * file. Fails with ENCDEC_ERR_FORMAT on a duplicate name. */
encdec_status wtab_add(ed_wtab *t, const ed_tensor *tensor);
/* Adds an alias: `name` resolves to the existing tensor `target`. */
encdec_status wtab_alias(ed_wtab *t, const char *name, const char *target);
/* How many names (aliases included) resolve to a tensor whose data is p:
 * memory that more than one of them reads must not be dropped for one. */
int wtab_refs(const ed_wtab *t, const void *p);
/* The table takes over a mapping (closes it in wtab_free). */
encdec_status wtab_keep_map(ed_wtab *t, ed_fmap map);
/* Memory owned by the table (freed in wtab_free), for converted data. */
void *wtab_alloc(ed_wtab *t, size_t bytes, const char *what);
/* The bytes [p, p + bytes) will not be read again (a tensor converted into
 * another layout): when they lie in one of t's read-only file mappings, the
 * whole pages among them are dropped from the process's memory (they would
 * come back from the file if read); when p is a block of the table's own
 * (wtab_alloc: a fused or realigned copy), the block is freed, and no
 * tensor of the table may be read through it any more. Else nothing. */
void wtab_drop(ed_wtab *t, const void *p, size_t bytes);
/* The bytes [p, p + bytes) are read and will not be needed soon: when they
 * lie in one of t's file mappings, its whole pages among them leave the
 * process's memory (they come back from the page cache if read again); else
 * nothing. Loading calls it behind every pass over the file (a realigned
 * copy, the weight check), so that the file's pages do not add up in the
 * peak resident size on top of what is built from them. */
void wtab_release(const ed_wtab *t, const void *p, size_t bytes);
/* Every page of t's file mappings leaves the process's memory (loading is
 * done: what is still borrowed from them comes back on first use, from the
 * page cache). */
void wtab_drop_maps(ed_wtab *t);

const ed_tensor *wtab_get(const ed_wtab *t, const char *name);  /* NULL if absent */
int wtab_count(const ed_wtab *t);
const ed_tensor *wtab_at(const ed_wtab *t, int i);

size_t ed_dtype_size(ed_dtype dt);
const char *ed_dtype_name(ed_dtype dt);
/* "[384,80,3]" into buf. */
const char *ed_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);

/* Converts n elements of src (F32, F16 or BF16) to f32 in dst. Returns
 * ENCDEC_ERR_DTYPE for other dtypes. */
encdec_status ed_to_f32(float *dst, const void *src, ed_dtype dt, size_t n);

/* ---- loaders (one file each) ---- */

/* safetensors.c: one .safetensors file; header validated (JSON, offsets in
 * range and non-overlapping, sizes match dtype x shape, known dtype). */
encdec_status st_load_file(ed_wtab *t, const char *path);
/* A directory: model.safetensors, or model.safetensors.index.json + shards. */
encdec_status st_load_dir(ed_wtab *t, const char *dir);

/* ct2.c: a CTranslate2 model.bin (any spec; names as stored, e.g.
 * "encoder/layer_0/self_attention/linear_0/weight"; aliases resolved; scalar
 * attributes such as "encoder/num_heads" become 0-d tensors). */
encdec_status ct2_load_file(ed_wtab *t, const char *path);
/* The spec a model.bin was written from ("WhisperSpec", "TransformerSpec")
 * into out[cap]: 1, or 0 when the file is unreadable or no model.bin. */
int ct2_spec_name(const char *path, char *out, size_t cap);
/* The same, with the binary version and the spec revision. */
int ct2_header(const char *path, char *spec_name, size_t cap, uint32_t *version, uint32_t *revision);

/* ggml.c: a whisper.cpp ggml-*.bin Whisper file (f32, f16; q4_0, q4_1,
 * q5_0, q5_1, q8_0 expanded to f16); tensors under Hugging Face's names.
 * What the file says besides its tensors: */
typedef struct {
    int32_t n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int32_t n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype;
    int32_t n_tokens;           /* tokens listed: ids 0 .. n_tokens-1 */
    const char **tok;           /* [n_tokens] their bytes (into the mapping) */
    uint32_t *tok_len;          /* [n_tokens] (tok and tok_len owned by the table) */
} ggml_whisper;
encdec_status ggml_load_file(ed_wtab *t, const char *path, ggml_whisper *g);
/* 1 when path is a file that starts with ggml's magic. */
int ggml_is_file(const char *path);

#endif
