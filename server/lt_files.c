/* lt_files.c - translated files in memory (lt_files.h). */
#include "lt_files.h"
#include "utf8.h"

#include <stdint.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

typedef struct stored {
    struct stored *next;     /* newer */
    char name[200];
    unsigned char *data;
    size_t len;
    double t;
} stored;

struct srv_files {
    pthread_mutex_t mu;
    stored *oldest, *newest;
    size_t bytes, max_bytes;
};

srv_files *srv_files_new(size_t max_bytes) {
    srv_files *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    pthread_mutex_init(&f->mu, NULL);
    f->max_bytes = max_bytes;
    return f;
}

static void drop_oldest(srv_files *f) {
    stored *o = f->oldest;
    f->oldest = o->next;
    if (!f->oldest) f->newest = NULL;
    f->bytes -= o->len;
    free(o->data);
    free(o);
}

/* Files past their time, and the oldest while more than room is used. */
static void expire(srv_files *f, double now_s, size_t room) {
    while (f->oldest && (now_s - f->oldest->t > SRV_FILES_TTL_S || f->bytes > room)) drop_oldest(f);
}

void srv_files_free(srv_files *f) {
    if (!f) return;
    while (f->oldest) drop_oldest(f);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* A version-4 UUID, as LibreTranslate's uuid.uuid4(). */
static int uuid4(char out[37]) {
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return -1;
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

int srv_files_put(srv_files *f, const char *base, unsigned char *data, size_t len, double now_s, char *name,
                  size_t n) {
    char id[37];
    stored *e = len <= f->max_bytes ? calloc(1, sizeof *e) : NULL;
    if (!e || uuid4(id) || snprintf(e->name, sizeof e->name, "%s.%s", id, base) >= (int)sizeof e->name ||
        snprintf(name, n, "%s", e->name) >= (int)n) {
        free(e);
        free(data);
        return -1;
    }
    e->data = data;
    e->len = len;
    e->t = now_s;
    pthread_mutex_lock(&f->mu);
    expire(f, now_s, f->max_bytes - len);
    if (f->newest) f->newest->next = e;
    else f->oldest = e;
    f->newest = e;
    f->bytes += len;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

int srv_files_get(srv_files *f, const char *name, double now_s, unsigned char **data, size_t *len) {
    int st = -1;
    pthread_mutex_lock(&f->mu);
    expire(f, now_s, f->max_bytes);
    for (stored *e = f->oldest; e; e = e->next)
        if (!strcmp(e->name, name)) {
            *data = malloc(e->len ? e->len : 1);
            st = *data ? 0 : -2;
            if (*data) {
                memcpy(*data, e->data, e->len);
                *len = e->len;
            }
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return st;
}

static int fn_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F); }
static int fn_allowed(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* What NFKD and an ASCII encoding leave of a Latin-1 character (0: nothing). */
static char latin1_ascii(uint32_t c) {
    static const char up[64 + 1] = "AAAAAA\0CEEEEIIII\0NOOOOO\0\0UUUUY\0\0aaaaaa\0ceeeeiiii\0nooooo\0\0uuuuy\0y";
    if (c >= 0xC0 && c <= 0xFF) return up[c - 0xC0];
    return c == 0xA0 ? ' ' : c == 0xAA ? 'a' : c == 0xBA ? 'o' : c == 0xB9 ? '1' : c == 0xB2 ? '2' : c == 0xB3 ? '3' : 0;
}

void srv_secure_filename(const char *fn, char *out, size_t n) {
    /* werkzeug's steps: NFKD, then ASCII alone (Latin-1's letters lose
     * their accents; other scripts go); '/' made a space; words joined by
     * '_'; what is not allowed dropped; '.' and '_' cut from the ends */
    size_t k = 0, len = strlen(fn);
    int gap = 0;
    for (size_t i = 0; i < len && k + 2 < n;) {
        uint32_t cp;
        int l = srv_utf8_next(fn + i, len - i, &cp);
        if (!l) {
            i++;
            continue;
        }
        i += (size_t)l;
        unsigned char c = cp < 0x80 ? (unsigned char)cp : (unsigned char)latin1_ascii(cp);
        if (c == '/') c = ' ';
        if (!c) continue;
        if (fn_space(c)) {
            gap = k > 0;
            continue;
        }
        if (gap) out[k++] = '_';
        gap = 0;
        if (fn_allowed(c)) out[k++] = (char)c;
    }
    out[k] = 0;
    size_t a = 0;
    while (out[a] == '.' || out[a] == '_') a++;
    while (k > a && (out[k - 1] == '.' || out[k - 1] == '_')) k--;
    memmove(out, out + a, k - a);
    out[k - a] = 0;
}
