/* test_lt_doc.c - the files of LibreTranslate's /translate_file
 * (server/lt_doc.c, lt_srt.c, lt_zip.c, lt_files.c).
 *
 * Against the libraries LibreTranslate's engine uses
 * (tests/data/lt-files/golden.json, tools/golden_lt_files.py): Python's
 * textwrap.fill at 40; pysrt 1.1.2's texts of a subtitle file and the file it
 * saves; werkzeug's secure_filename. And from the formats' own rules (what
 * lt_doc.h states): which ZIP entries of .docx / .pptx / .odt / .odp /
 * .epub are translated, every other entry kept byte for byte with its
 * compression method, the XML's markup kept around the translations;
 * refusals of files that are not what they claim; the store's time and
 * room. */
#include "check.h"

#include "../server/utf8.c"
#include "../server/lt_html.c"
#include "../server/lt_srt.c"
#include "../server/lt_doc.c"
#include "../server/lt_files.c"
#if ENCDEC_WITH_ZIP
#include "../server/lt_zip.c"
#endif

#include <cjson/cJSON.h>
#include <stdlib.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

static const char *str(const cJSON *o, const char *k) { return cJSON_GetObjectItem(o, k)->valuestring; }

static void goldens(const cJSON *g) {
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "wrap")) {
        char *w = srv_wrap_fill(str(c, "text"), 40);
        CHECK_STR(w, str(c, "out"));
        free(w);
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "secure")) {
        char out[256];
        srv_secure_filename(str(c, "in"), out, sizeof out);
        CHECK_STR(out, str(c, "out"));
    }
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(g, "srt")) {
        const char *srt = str(c, "file");
        srv_doc *d;
        char msg[256];
        CHECK_EQ_INT(srv_doc_open("subs.srt", (const unsigned char *)srt, strlen(srt), 100, &d, msg, sizeof msg), 0);
        if (!d) continue;
        const char *const *units;
        int n = srv_doc_units(d, &units);
        const cJSON *want = cJSON_GetObjectItem(c, "units"), *outs = cJSON_GetObjectItem(c, "out");
        CHECK_EQ_INT(n, cJSON_GetArraySize(want));
        const char *out[16];
        for (int i = 0; i < n && i < 16; i++) {
            CHECK_STR(units[i], cJSON_GetArrayItem(want, i)->valuestring);
            out[i] = cJSON_GetArrayItem(outs, i)->valuestring;
        }
        unsigned char *b;
        size_t len;
        CHECK_EQ_INT(srv_doc_write(d, out, &b, &len, msg, sizeof msg), 0);
        CHECK_EQ_INT(len, strlen(str(c, "saved")));
        CHECK(len == strlen(str(c, "saved")) && !memcmp(b, str(c, "saved"), len));
        free(b);
        srv_doc_free(d);
    }
}

/* Opens data as file name fn: the status, msg. */
static int open_st(const char *fn, const char *data, size_t len, int max, char *msg) {
    srv_doc *d = NULL;
    int st = srv_doc_open(fn, (const unsigned char *)data, len, max, &d, msg, 256);
    CHECK(st ? d == NULL : d != NULL);
    srv_doc_free(d);
    return st;
}

static void text_files(void) {
    char msg[256];
    {   /* a text: one unit, its byte-order mark kept */
        const char *t = "\xEF\xBB\xBFHello. World.\n";
        srv_doc *d;
        CHECK_EQ_INT(srv_doc_open("a.txt", (const unsigned char *)t, strlen(t), 10, &d, msg, sizeof msg), 0);
        const char *const *u;
        CHECK_EQ_INT(srv_doc_units(d, &u), 1);
        CHECK_STR(u[0], "Hello. World.\n");
        const char *out[] = {"Hallo. Welt."};
        unsigned char *b;
        size_t len;
        CHECK_EQ_INT(srv_doc_write(d, out, &b, &len, msg, sizeof msg), 0);
        CHECK(len == 15 && !memcmp(b, "\xEF\xBB\xBFHallo. Welt.", 15));
        free(b);
        char *s = srv_doc_sample(d, 8);
        CHECK_STR(s, "Hello. W");
        free(s);
        srv_doc_free(d);
    }
    {   /* HTML: its text nodes (one without a letter kept); scripts and code kept; the markup byte for byte */
        const char *t = "<!DOCTYPE html><p class=x>Good <b>day</b>!</p><script>var a = 1;</script><code>x = y</code>";
        srv_doc *d;
        CHECK_EQ_INT(srv_doc_open("p.html", (const unsigned char *)t, strlen(t), 10, &d, msg, sizeof msg), 0);
        const char *const *u;
        CHECK_EQ_INT(srv_doc_units(d, &u), 2);
        CHECK_STR(u[0], "Good");
        CHECK_STR(u[1], "day");
        const char *out[] = {"Guten", "Tag & <Nacht>"};
        unsigned char *b;
        size_t len;
        CHECK_EQ_INT(srv_doc_write(d, out, &b, &len, msg, sizeof msg), 0);
        const char *want = "<!DOCTYPE html><p class=x>Guten <b>Tag &amp; &lt;Nacht&gt;</b>!</p><script>var a = 1;</script>"
                           "<code>x = y</code>";
        CHECK(len == strlen(want) && !memcmp(b, want, len));
        free(b);
        srv_doc_free(d);
    }
    /* refusals */
    CHECK_EQ_INT(open_st("a.pdf", "%PDF", 4, 10, msg), 400);
    CHECK(strstr(msg, "format not supported") != NULL);
    CHECK_EQ_INT(open_st("a.TXT", "x", 1, 10, msg), 400);   /* LibreTranslate compares the extension as it is */
    CHECK_EQ_INT(open_st(".txt", "x", 1, 10, msg), 400);
    CHECK_EQ_INT(open_st("a.txt", "caf\xE9", 4, 10, msg), 400);
    CHECK(strstr(msg, "not UTF-8") != NULL);
    CHECK_EQ_INT(open_st("a.txt", "a\0b", 3, 10, msg), 400);
    CHECK_EQ_INT(open_st("a.srt", "1\nnot a time\nText\n", 18, 10, msg), 400);
    CHECK(strstr(msg, "cue 1") != NULL);
    CHECK_EQ_INT(open_st("a.srt", "1\n00:00:01,000 --> 00:00:0x,000\nText\n", 36, 10, msg), 400);
    const char *three = "1\n00:00:01,000 --> 00:00:02,000\na\n\n2\n00:00:01,000 --> 00:00:02,000\nb\n\n"
                        "3\n00:00:01,000 --> 00:00:02,000\nc\n";
    CHECK_EQ_INT(open_st("a.srt", three, strlen(three), 2, msg), 413);
    CHECK_EQ_INT(open_st("a.srt", three, strlen(three), 3, msg), 0);
    CHECK_EQ_INT(open_st("a.html", "<p>a</p><p>b</p><p>c</p>", 24, 2, msg), 413);
    CHECK_EQ_INT(open_st("a.srt", "", 0, 2, msg), 0);
    /* an empty document: nothing to translate, the same bytes back */
    srv_doc *d;
    CHECK_EQ_INT(srv_doc_open("e.html", (const unsigned char *)"<br>", 4, 2, &d, msg, sizeof msg), 0);
    const char *const *u;
    CHECK_EQ_INT(srv_doc_units(d, &u), 0);
    unsigned char *b;
    size_t len;
    CHECK_EQ_INT(srv_doc_write(d, NULL, &b, &len, msg, sizeof msg), 0);
    CHECK(len == 4 && !memcmp(b, "<br>", 4));
    free(b);
    srv_doc_free(d);
}

static void store(void) {
    srv_files *f = srv_files_new(100);
    char name[256];
    unsigned char *d = malloc(60), *got = NULL;
    memset(d, 'a', 60);
    CHECK_EQ_INT(srv_files_put(f, "x_de.txt", d, 60, 1000, name, sizeof name), 0);
    CHECK_EQ_INT(strlen(name), 36 + 1 + 8);
    CHECK(name[14] == '4' && !strcmp(name + 36, ".x_de.txt"));   /* a version-4 uuid, then the name */
    size_t len = 0;
    CHECK_EQ_INT(srv_files_get(f, name, 1500, &got, &len), 0);
    CHECK(len == 60 && got && got[59] == 'a');
    free(got);
    CHECK_EQ_INT(srv_files_get(f, "nope", 1500, &got, &len), -1);
    char second[256];
    d = malloc(60);
    memset(d, 'b', 60);
    CHECK_EQ_INT(srv_files_put(f, "y.txt", d, 60, 1600, second, sizeof second), 0);   /* the first makes room */
    CHECK_EQ_INT(srv_files_get(f, name, 1600, &got, &len), -1);
    CHECK_EQ_INT(srv_files_get(f, second, 1600 + SRV_FILES_TTL_S, &got, &len), 0);
    free(got);
    CHECK_EQ_INT(srv_files_get(f, second, 1601 + SRV_FILES_TTL_S, &got, &len), -1);   /* past its 30 minutes */
    CHECK_EQ_INT(srv_files_put(f, "z.txt", malloc(101), 101, 1700, second, sizeof second), -1);   /* larger than it */
    srv_files_free(f);
}

#if ENCDEC_WITH_ZIP
typedef struct {
    const char *name, *data;
    size_t len;
    int stored;
} entry;

/* An archive of e[n] in memory. */
static unsigned char *make_zip(const entry *e, int n, size_t *len) {
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(NULL, 0, 0, &err);
    zip_t *z = zip_open_from_source(src, ZIP_TRUNCATE, &err);
    zip_source_keep(src);
    for (int i = 0; i < n; i++) {
        zip_source_t *s = zip_source_buffer(z, e[i].data, e[i].len ? e[i].len : strlen(e[i].data), 0);
        zip_int64_t at = zip_file_add(z, e[i].name, s, 0);
        zip_set_file_compression(z, (zip_uint64_t)at, e[i].stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 0);
    }
    zip_close(z);
    unsigned char *b;
    take(src, &b, len);
    zip_source_free(src);
    zip_error_fini(&err);
    return b;
}

/* The file's units must be want[]; written with out[], its entries must be
 * e's, in order, with their methods, each the same bytes but those in
 * changed[] (name, contents). */
static void zip_case(const char *fn, const entry *e, int n, const char *const *want, const char *const *out,
                     const char *const *changed) {
    size_t len;
    unsigned char *z = make_zip(e, n, &len);
    srv_doc *d;
    char msg[256];
    CHECK_EQ_INT(srv_doc_open(fn, z, len, 100, &d, msg, sizeof msg), 0);
    if (!d) {
        fprintf(stderr, "%s: %s\n", fn, msg);
        free(z);
        return;
    }
    free(z);   /* the document keeps its own copy */
    const char *const *u;
    int nu = srv_doc_units(d, &u), nw = 0;
    while (want[nw]) nw++;
    CHECK_EQ_INT(nu, nw);
    for (int i = 0; i < nu && i < nw; i++) CHECK_STR(u[i], want[i]);
    unsigned char *b;
    CHECK_EQ_INT(srv_doc_write(d, out, &b, &len, msg, sizeof msg), 0);
    srv_doc_free(d);
    srv_zip *r;
    CHECK_EQ_INT(srv_zip_open(b, len, &r, msg, sizeof msg), 0);
    CHECK_EQ_INT(srv_zip_count(r), n);
    for (int i = 0; i < n && i < srv_zip_count(r); i++) {
        CHECK_STR(srv_zip_name(r, i), e[i].name);
        zip_stat_t st;
        zip_stat_index(r->za, (zip_uint64_t)i, 0, &st);
        CHECK_EQ_INT(st.comp_method == ZIP_CM_STORE, e[i].stored);
        char *got;
        size_t gl;
        CHECK_EQ_INT(srv_zip_read(r, i, 1 << 20, &got, &gl, msg, sizeof msg), 0);
        const char *exp = e[i].data;
        size_t el = e[i].len ? e[i].len : strlen(e[i].data);
        for (int k = 0; changed[k]; k += 2)
            if (!strcmp(changed[k], e[i].name)) {
                exp = changed[k + 1];
                el = strlen(exp);
            }
        CHECK(got && gl == el && !memcmp(got, exp, el));
        if (got && (gl != el || memcmp(got, exp, el))) fprintf(stderr, "  %s: %.*s\n", e[i].name, (int)gl, got);
        free(got);
    }
    srv_zip_free(r);
    free(b);
}

static const char PNG[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";

static void zip_files(void) {
    const char *doc = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document><w:body><w:p>"
                      "<w:r><w:t>Hello world</w:t></w:r><w:r><w:instrText xml:space=\"preserve\"> PAGE </w:instrText></w:r>"
                      "<w:r><w:t xml:space=\"preserve\"> and &amp; more </w:t></w:r></w:p><w:p><w:r><w:t>42</w:t></w:r>"
                      "</w:p></w:body></w:document>";
    const entry docx[] = {{"[Content_Types].xml", "<Types><Default Extension=\"xml\"/></Types>", 0, 0},
                          {"word/document.xml", doc, 0, 0},
                          {"word/header1.xml", "<w:hdr><w:p><w:r><w:t>Top</w:t></w:r></w:p></w:hdr>", 0, 1},
                          {"word/media/image1.png", PNG, sizeof PNG - 1, 1},
                          {"docProps/core.xml", "<cp:coreProperties><dc:title>Title</dc:title></cp:coreProperties>", 0, 0},
                          {"word/styles.xml", "<w:styles><w:name>Normal</w:name></w:styles>", 0, 0}};
    const char *want[] = {"Hello world", "and & more", "Top", NULL};
    const char *out[] = {"Hallo Welt", "und & <mehr>", "Oben"};
    const char *changed[] = {"word/document.xml",
                             "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document><w:body><w:p>"
                             "<w:r><w:t>Hallo Welt</w:t></w:r><w:r><w:instrText xml:space=\"preserve\"> PAGE </w:instrText>"
                             "</w:r><w:r><w:t xml:space=\"preserve\"> und &amp; &lt;mehr&gt; </w:t></w:r></w:p><w:p><w:r>"
                             "<w:t>42</w:t></w:r></w:p></w:body></w:document>",
                             "word/header1.xml", "<w:hdr><w:p><w:r><w:t>Oben</w:t></w:r></w:p></w:hdr>", NULL};
    zip_case("report.docx", docx, 6, want, out, changed);

    const entry pptx[] = {{"ppt/slides/slide1.xml", "<p:sld><a:t>One</a:t></p:sld>", 0, 0},
                          {"ppt/slides/_rels/slide1.xml.rels", "<Relationships>Rel</Relationships>", 0, 0},
                          {"ppt/slideLayouts/slideLayout1.xml", "<p:sldLayout><a:t>Layout</a:t></p:sldLayout>", 0, 0},
                          {"ppt/slides/slide12.xml", "<p:sld><a:t>Twelve &#233;</a:t></p:sld>", 0, 0}};
    const char *pwant[] = {"One", "Twelve \xC3\xA9", NULL}, *pout[] = {"Eins", "Zw\xC3\xB6lf &nbsp;"};
    const char *pchanged[] = {"ppt/slides/slide1.xml", "<p:sld><a:t>Eins</a:t></p:sld>", "ppt/slides/slide12.xml",
                              "<p:sld><a:t>Zw\xC3\xB6lf &amp;nbsp;</a:t></p:sld>", NULL};
    zip_case("deck.pptx", pptx, 4, pwant, pout, pchanged);

    const entry odt[] = {{"mimetype", "application/vnd.oasis.opendocument.text", 0, 1},
                         {"content.xml", "<office:text><text:p>Zwei<text:s/>Worte</text:p></office:text>", 0, 0},
                         {"styles.xml", "<office:styles><style:name>Body</style:name></office:styles>", 0, 0}};
    const char *owant[] = {"Zwei", "Worte", NULL}, *oout[] = {"Two", "words"};
    const char *ochanged[] = {"content.xml", "<office:text><text:p>Two<text:s/>words</text:p></office:text>", NULL};
    zip_case("a.odt", odt, 3, owant, oout, ochanged);
    zip_case("a.odp", odt, 3, owant, oout, ochanged);

    const entry epub[] = {{"mimetype", "application/epub+zip", 0, 1},
                          {"OEBPS/content.opf", "<package><dc:title>Book</dc:title></package>", 0, 0},
                          {"OEBPS/ch1.xhtml", "<html><body><p>Text <br/>more</p><script>x()</script></body></html>", 0, 0},
                          {"OEBPS/style.css", "p { color: red }", 0, 0},
                          {"META-INF/container.xml", "<container>Not this</container>", 0, 0}};
    const char *ewant[] = {"Book", "Text", "more", NULL}, *eout[] = {"Buch", "Satz", "mehr"};
    const char *echanged[] = {"OEBPS/content.opf", "<package><dc:title>Buch</dc:title></package>", "OEBPS/ch1.xhtml",
                              "<html><body><p>Satz <br/>mehr</p><script>x()</script></body></html>", NULL};
    zip_case("book.epub", epub, 5, ewant, eout, echanged);

    char msg[256];
    CHECK_EQ_INT(open_st("x.docx", "PK\x03\x04 not a zip at all", 22, 10, msg), 400);
    CHECK(strstr(msg, "ZIP") != NULL);
    size_t len;
    const entry bad[] = {{"word/document.xml", "<w:t>caf\xE9</w:t>", 0, 0}};
    unsigned char *z = make_zip(bad, 1, &len);
    CHECK_EQ_INT(open_st("x.docx", (const char *)z, len, 10, msg), 400);
    CHECK(strstr(msg, "word/document.xml is not UTF-8") != NULL);
    CHECK_EQ_INT(open_st("x.docx", (const char *)z, len / 2, 10, msg), 400);   /* cut short */
    free(z);
    const entry many[] = {{"content.xml", "<t>a</t><t>b</t><t>c</t>", 0, 0}};
    z = make_zip(many, 1, &len);
    CHECK_EQ_INT(open_st("x.odt", (const char *)z, len, 2, msg), 413);
    free(z);
}
#endif

int main(void) {
    char *text = slurp(ED_TEST_DATA "/lt-files/golden.json");
    cJSON *g = text ? cJSON_Parse(text) : NULL;
    CHECK(g != NULL);
    if (g) goldens(g);
    cJSON_Delete(g);
    free(text);
    text_files();
    store();
#if ENCDEC_WITH_ZIP
    zip_files();
    const char *const *ext = srv_doc_extensions();
    int n = 0;
    while (ext[n]) n++;
    CHECK_EQ_INT(n, 8);
#else
    printf("(built without libzip: the office and e-book formats not tested)\n");
#endif
    return check_done();
}
