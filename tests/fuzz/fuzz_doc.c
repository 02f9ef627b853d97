/* fuzz_doc.c - the files of LibreTranslate's /translate_file
 * (server/lt_doc.c over lt_srt.c, lt_html.c and lt_zip.c): any bytes as a
 * file of one of its formats (the first byte chooses), split into its
 * texts, written again around translations that need escaping and
 * wrapping, and sampled; a file name made safe. Must accept or refuse,
 * never crash or leak. */
#include "fuzz_common.h"
#include "../../server/lt_doc.h"
#include "../../server/lt_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    static const char *const names[] = {"a.txt", "a.srt", "a.html", "a.docx", "a.pptx", "a.odt", "a.odp", "a.epub"};
    const char *fn = names[data[0] % 8];
    srv_doc *d = NULL;
    char msg[512];
    if (srv_doc_open(fn, data + 1, size - 1, 256, &d, msg, sizeof msg) == 0) {
        const char *const *units;
        int n = srv_doc_units(d, &units);
        const char **out = calloc((size_t)n + 1, sizeof *out);
        for (int i = 0; out && i < n; i++)
            out[i] = i % 3 == 0 ? units[i] : i % 3 == 1 ? "<&amp;> a-very-long-hyphenated-word-that-goes-past-forty-characters"
                                                        : "";
        unsigned char *b = NULL;
        size_t len;
        if (out && srv_doc_write(d, out, &b, &len, msg, sizeof msg) == 0) free(b);
        free(out);
        free(srv_doc_sample(d, 64));
        srv_doc_free(d);
    }
    char name[128], fname[256];
    size_t l = size - 1 < sizeof fname - 1 ? size - 1 : sizeof fname - 1;
    memcpy(fname, data + 1, l);
    fname[l] = 0;
    srv_secure_filename(fname, name, sizeof name);
    return 0;
}
