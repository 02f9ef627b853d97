/* source.c - where audio bytes come from: a regular file (libsndfile opens
 * and seeks it), or a stream read whole, with a size limit, into a
 * temporary file (or memory):
 * standard input ("-"), a pipe, a named FIFO (waited for, not forever), a
 * character device. Directories, block devices, empty files and a terminal
 * on standard input are refused with a message that says which. */
#include "audio/audio.h"
#include "base/err.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_STREAM ((size_t)2 << 30)   /* 2 GiB */
#define DEFAULT_FIFO_WAIT_S 10.0

/* Waits up to wait_s for the first byte of a FIFO (no writer: none comes). */
static encdec_status fifo_wait(int fd, const char *name, double wait_s) {
    struct pollfd p = {fd, POLLIN, 0};
    double ms = wait_s * 1000.0;
    int r;
    do r = poll(&p, 1, ms > 2e9 ? 2000000000 : (int)ms);
    while (r < 0 && errno == EINTR);
    if (r < 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", name, strerror(errno));
    if (r == 0)
        return ed_fail(ENCDEC_ERR_IO, "%s: a FIFO that gave no data in %g s (no writer?)", name,
                       wait_s);
    return ENCDEC_OK;
}

/* Everything fd delivers until its end, at most max bytes. */
static encdec_status slurp(int fd, const char *name, size_t max, unsigned char **out, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", name);
    for (;;) {
        if (n == cap) {
            if (cap > max) {
                free(buf);
                return ed_fail(ENCDEC_ERR_AUDIO, "%s: a stream of more than %zu bytes (the limit "
                               "for streams, which are read whole into memory)", name, max);
            }
            size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
            unsigned char *b = realloc(buf, nc);
            if (!b) {
                free(buf);
                return ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s (%zu bytes)", name, nc);
            }
            buf = b;
            cap = nc;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            return ed_fail(ENCDEC_ERR_IO, "%s: %s", name, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n == 0 || n > max) {
        free(buf);
        return n ? ed_fail(ENCDEC_ERR_AUDIO, "%s: a stream of more than %zu bytes (the limit "
                           "for streams, which are read whole into memory)", name, max)
                 : ed_fail(ENCDEC_ERR_AUDIO, "%s: no data (0 bytes)", name);
    }
    *out = buf;
    *len = n;
    return ENCDEC_OK;
}

/* Everything fd delivers, into an unlinked temporary file (memory stays
 * bounded; the bytes are read twice later); falls back to memory when no
 * temporary file can be made. */
static encdec_status spool(int fd, const char *name, size_t max, unsigned char **buf, size_t *len,
                           FILE **out) {
    FILE *f = tmpfile();
    if (!f) return slurp(fd, name, max, buf, len);
    enum { CHUNK = 1 << 16 };
    unsigned char *chunk = malloc(CHUNK);
    size_t n = 0;
    encdec_status st = chunk ? ENCDEC_OK : ed_fail(ENCDEC_ERR_NOMEM, "out of memory: %s", name);
    while (!st) {
        ssize_t got = read(fd, chunk, CHUNK);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            st = ed_fail(ENCDEC_ERR_IO, "%s: %s", name, strerror(errno));
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) {
            st = ed_fail(ENCDEC_ERR_AUDIO, "%s: a stream of more than %zu bytes (the limit for "
                         "streams, which are copied to a temporary file)", name, max);
            break;
        }
        if (fwrite(chunk, 1, (size_t)got, f) != (size_t)got) {
            st = ed_fail(ENCDEC_ERR_IO, "%s: cannot write a temporary copy: %s", name, strerror(errno));
            break;
        }
    }
    free(chunk);
    if (!st && n == 0) st = ed_fail(ENCDEC_ERR_AUDIO, "%s: no data (0 bytes)", name);
    if (!st && (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0))
        st = ed_fail(ENCDEC_ERR_IO, "%s: cannot write a temporary copy: %s", name, strerror(errno));
    if (st) {
        fclose(f);
        return st;
    }
    *out = f;
    *len = n;
    return ENCDEC_OK;
}

encdec_status audio_source(const char *path, const encdec_audio_params *p, unsigned char **buf,
                           size_t *len, FILE **spooled) {
    size_t max = p && p->max_stream_bytes ? p->max_stream_bytes : DEFAULT_MAX_STREAM;
    double wait = p && p->fifo_wait_s > 0 ? p->fifo_wait_s : DEFAULT_FIFO_WAIT_S;
    *buf = NULL;
    *len = 0;
    if (spooled) *spooled = NULL;
    if (!strcmp(path, "-")) {
        if (isatty(STDIN_FILENO))
            return ed_fail(ENCDEC_ERR_IO, "standard input is a terminal, not audio (pipe a file "
                           "into it: encdec transcribe - < talk.wav)");
        return spooled ? spool(STDIN_FILENO, "standard input", max, buf, len, spooled)
                       : slurp(STDIN_FILENO, "standard input", max, buf, len);
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return ed_fail(ENCDEC_ERR_IO, "%s: is a directory, not an audio file", path);
    if (S_ISBLK(sb.st_mode))
        return ed_fail(ENCDEC_ERR_IO, "%s: is a block device, not an audio file", path);
    if (S_ISCHR(sb.st_mode))   /* /dev/zero, /dev/urandom, a terminal: nothing that ends */
        return ed_fail(ENCDEC_ERR_IO, "%s: is a character device, not an audio file (pipe a "
                       "recording in through a FIFO or standard input)", path);
    if (S_ISREG(sb.st_mode)) {
        if (access(path, R_OK) != 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
        if (sb.st_size == 0) return ed_fail(ENCDEC_ERR_AUDIO, "%s: the file is empty (0 bytes)", path);
        return ENCDEC_OK;   /* libsndfile opens it */
    }
    /* FIFO, socket: a stream. O_NONBLOCK so that opening a
     * FIFO without a writer returns; reads block again after the wait. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    encdec_status st = S_ISFIFO(sb.st_mode) ? fifo_wait(fd, path, wait) : ENCDEC_OK;
    int fl = fcntl(fd, F_GETFL);
    if (!st && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
        st = ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    if (!st) st = spooled ? spool(fd, path, max, buf, len, spooled) : slurp(fd, path, max, buf, len);
    close(fd);
    return st;
}
