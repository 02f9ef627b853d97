/* lt_zip.c - ZIP containers through libzip (lt_zip.h). */
#include "lt_zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

struct srv_zip {
    zip_t *za;
    zip_source_t *src;
    int n;
};

static int zfail(char *msg, size_t n, const char *what, zip_error_t *err) {
    snprintf(msg, n, "%s: %s", what, err ? zip_error_strerror(err) : "out of memory");
    return -1;
}

int srv_zip_open(const unsigned char *data, size_t len, srv_zip **out, char *msg, size_t n) {
    *out = NULL;
    zip_error_t err;
    zip_error_init(&err);
    srv_zip *z = calloc(1, sizeof *z);
    if (!z) return zfail(msg, n, "the archive", NULL);
    z->src = zip_source_buffer_create(data, len, 0, &err);
    if (z->src) z->za = zip_open_from_source(z->src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!z->za) {
        zfail(msg, n, "the file is not a ZIP archive as this format is", &err);
        zip_error_fini(&err);
        if (z->src) zip_source_free(z->src);
        free(z);
        return -1;
    }
    zip_error_fini(&err);
    zip_int64_t count = zip_get_num_entries(z->za, 0);
    if (count < 0 || count > 65535) {
        snprintf(msg, n, "the archive has %lld entries: at most 65535", (long long)count);
        srv_zip_free(z);
        return -1;
    }
    z->n = (int)count;
    *out = z;
    return 0;
}

int srv_zip_count(const srv_zip *z) { return z->n; }

const char *srv_zip_name(const srv_zip *z, int i) {
    const char *s = zip_get_name(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
    return s ? s : "";
}

int srv_zip_read(srv_zip *z, int i, size_t max, char **out, size_t *len, char *msg, size_t n) {
    *out = NULL;
    zip_stat_t st;
    if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) || !(st.valid & ZIP_STAT_SIZE))
        return zfail(msg, n, "an entry of the archive", zip_get_error(z->za));
    const char *name = srv_zip_name(z, i);
    if (st.size > max) {
        snprintf(msg, n, "%.200s is %llu bytes uncompressed: at most %zu", name, (unsigned long long)st.size, max);
        return -1;
    }
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
        snprintf(msg, n, "%.200s is encrypted", name);
        return -1;
    }
    char *b = malloc((size_t)st.size + 1);
    zip_file_t *f = b ? zip_fopen_index(z->za, (zip_uint64_t)i, 0) : NULL;
    zip_int64_t got = f ? zip_fread(f, b, st.size) : -1;
    char extra;   /* more than its stated size: a lying header */
    int over = f && got == (zip_int64_t)st.size && zip_fread(f, &extra, 1) > 0;
    if (!b || !f || got != (zip_int64_t)st.size || over) {
        snprintf(msg, n, "%.200s cannot be read: %s", name,
                 !b ? "out of memory" : f ? "its size or data is damaged" : zip_error_strerror(zip_get_error(z->za)));
        if (f) zip_fclose(f);
        free(b);
        return -1;
    }
    zip_fclose(f);
    b[st.size] = 0;
    *out = b;
    *len = (size_t)st.size;
    return 0;
}

/* The written archive's bytes out of its buffer source. */
static int take(zip_source_t *src, unsigned char **out, size_t *len) {
    zip_stat_t st;
    if (zip_source_stat(src, &st) || zip_source_open(src)) return -1;
    unsigned char *b = malloc(st.size ? st.size : 1);
    zip_int64_t got = b ? zip_source_read(src, b, st.size) : -1;
    zip_source_close(src);
    if (got != (zip_int64_t)st.size) {
        free(b);
        return -1;
    }
    *out = b;
    *len = (size_t)st.size;
    return 0;
}

/* Entry i into archive w: its contents replaced by repl, or as they were;
 * its compression method and time kept. */
static int copy_entry(srv_zip *z, zip_t *w, int i, const char *repl) {
    zip_stat_t st;
    if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st)) return -1;
    zip_source_t *s = repl ? zip_source_buffer(w, repl, strlen(repl), 0)
                           : zip_source_zip(w, z->za, (zip_uint64_t)i, 0, 0, -1);
    if (!s) return -1;
    zip_int64_t at = zip_file_add(w, srv_zip_name(z, i), s, ZIP_FL_ENC_RAW);
    if (at < 0) {
        zip_source_free(s);
        return -1;
    }
    zip_int32_t method = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE ? ZIP_CM_STORE
                                                                                              : ZIP_CM_DEFLATE;
    if (zip_set_file_compression(w, (zip_uint64_t)at, method, 0)) return -1;
    if ((st.valid & ZIP_STAT_MTIME) && zip_file_set_mtime(w, (zip_uint64_t)at, st.mtime, 0)) return -1;
    return 0;
}

int srv_zip_write(srv_zip *z, const char *const *repl, unsigned char **out, size_t *len, char *msg,
                  size_t n) {
    *out = NULL;
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &err);
    zip_t *w = src ? zip_open_from_source(src, ZIP_TRUNCATE, &err) : NULL;
    if (!w) {
        zfail(msg, n, "the translated archive", &err);
        zip_error_fini(&err);
        if (src) zip_source_free(src);
        return -1;
    }
    zip_error_fini(&err);
    zip_source_keep(src);
    int bad = 0;
    for (int i = 0; i < z->n && !bad; i++) bad = copy_entry(z, w, i, repl[i]);
    if (bad) {
        zfail(msg, n, "the translated archive", zip_get_error(w));
        zip_discard(w);
        zip_source_free(src);
        return -1;
    }
    if (zip_close(w)) {
        zfail(msg, n, "the translated archive", zip_get_error(w));
        zip_discard(w);
        zip_source_free(src);
        return -1;
    }
    int st = take(src, out, len);
    zip_source_free(src);
    if (st) snprintf(msg, n, "the translated archive: out of memory");
    return st;
}

void srv_zip_free(srv_zip *z) {
    if (!z) return;
    if (z->za) zip_discard(z->za);   /* frees its source too */
    free(z);
}
