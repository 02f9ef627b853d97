/* fmap.c - mmap and small-file helpers. */
#include "base/fmap.h"
#include "base/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

encdec_status ed_fmap_open(ed_fmap *f, const char *path) {
    f->data = NULL;
    f->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ed_fail(ENCDEC_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size > 0) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return ed_fail(ENCDEC_ERR_IO, "%s: mmap: %s", path, strerror(errno));
        }
        f->data = p;
        f->size = (size_t)sb.st_size;
    }
    close(fd);
    return ENCDEC_OK;
}

void ed_fmap_close(ed_fmap *f) {
    if (f->data) munmap((void *)f->data, f->size);
    f->data = NULL;
    f->size = 0;
}

encdec_status ed_read_file(const char *path, char **out, size_t *len) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return ed_fail(ENCDEC_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(fp);
        return ed_fail(ENCDEC_ERR_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(fp);
        return ed_fail(ENCDEC_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, n);
    }
    if (fread(buf, 1, n, fp) != n) {
        free(buf);
        fclose(fp);
        return ed_fail(ENCDEC_ERR_IO, "%s: short read", path);
    }
    fclose(fp);
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return ENCDEC_OK;
}

int ed_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int ed_is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

char *ed_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    size_t n = strlen(dir);
    snprintf(buf, cap, "%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/", name);
    return buf;
}

const char *ed_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}
