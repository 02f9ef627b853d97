/* test_lt_format.c - LibreTranslate's touches to a text translation
 * (server/lt_format.c): trailing punctuation matched to the source's, a
 * one-word source's repeated-word "salad" cut to its first word, letter
 * case from the source (all lower, all upper, or the first letter's); and
 * the alternatives /translate lists (server/lt.c's body: empty ones, the
 * translation and repeats left out); which texts LibreTranslate sends back
 * untranslated (server/lt.c's srv_lt_translatable: spaces and its rough
 * map of emoji, Python ranges without their ends). The expected texts are written from
 * the rules lt_format.h and lt.h state, not from the code's output. */
#include "check.h"

#include "../server/utf8.c"
#include "../server/lt_format.c"
#include "../server/lt.c"

static void expect(const char *source, const char *translation, const char *want) {
    char *got = srv_lt_format(source, translation);
    CHECK_STR(got, want);
    free(got);
}

/* srv_lt_translatable of the texts q[0..n). */
static int translatable(const char *const *q, int n) {
    srv_lt_req r = {0};
    for (int i = 0; i < n; i++) r.q[i] = q[i];
    r.n_q = n;
    return srv_lt_translatable(&r);
}

static void untranslatable_texts(void) {
    const char *emoji[] = {"\xf0\x9f\x98\x80 \xf0\x9f\x8e\x89",   /* U+1F600 (its first), U+1F389 */
                           "\xe2\x98\x80",                            /* U+2600 */
                           "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",      /* U+1F44D with a skin tone U+1F3FD */
                           "\xf0\x9f\x87\xa9\xf0\x9f\x87\xaa",      /* a flag: U+1F1E9 U+1F1EA */
                           " ", ""};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(translatable(emoji + i, 1), 0);
    CHECK_EQ_INT(translatable(emoji, 6), 0);
    const char *text[] = {"\xf0\x9f\x98\x80 a",          /* a letter */
                          "\xe2\x9d\xa4\xef\xb8\x8f",    /* U+2764 U+FE0F: the range of FE00 ends before FE0F */
                          "\xf0\x9f\x99\x8f",             /* U+1F64F: the end of 1F600-1F64F, left out */
                          "12",                            /* digits are text */
                          "\xf0\x9f\x98\x80\t",           /* a tab is not a space */
                          "\xe2\x80\x8d"};                 /* a zero-width joiner */
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(translatable(text + i, 1), 1);
    const char *mixed[] = {"\xf0\x9f\x98\x80", "word"};   /* a list: any text */
    CHECK_EQ_INT(translatable(mixed, 2), 1);
}

int main(void) {
    untranslatable_texts();
    /* punctuation */
    expect("Hello.", "Hallo", "Hallo.");
    expect("Hello!", "Hallo.", "Hallo!");
    expect("Hello", "Hallo.", "Hallo");
    expect("Hello?", "Hallo?", "Hallo?");
    expect("Wait;", "Warte,", "Warte;");
    expect("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82", "Hello", "Hello\xe3\x80\x82");   /* 你好。 */
    expect("x", ".", "");                                                        /* all dropped, lowercased */
    /* white space around the source; empty sides */
    expect("  \t", "x", "");
    expect("Hi", "", "Hi");
    /* case: all lowercase, all uppercase, the first letter's */
    expect("  hello world  ", "Hallo Welt", "hallo welt");
    expect("HELLO WORLD", "Hallo Welt", "HALLO WELT");
    expect("hello World", "Hallo Welt", "hallo Welt");
    expect("Hello world", "hallo Welt", "Hallo Welt");
    expect("\xc2\xbfQu\xc3\xa9?", "what?", "what?");            /* ¿Qué?: no case at its start */
    expect("\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92\xd0\x95\xd0\xa2", "hello \xc3\xa9t\xc3\xa9",   /* ПРИВЕТ */
           "HELLO \xc3\x89T\xc3\x89");
    expect("\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", "Hello \xce\x91\xce\x92",   /* привет */
           "hello \xce\xb1\xce\xb2");
    expect("Stra\xc3\x9f" "e.", "street", "Street.");            /* ß is lowercase; the S leads */
    expect("12 apples", "12 \xc3\x84pfel", "12 \xc3\xa4pfel");   /* all its letters lowercase */
    /* salad: one word under 20 characters, a word twice as common as the distinct ones */
    expect("Hello", "Hallo Hallo Hallo", "Hallo");
    expect("Hello", "gut gut gut gut Tag", "Gut");
    expect("Hello", "a b a", "A b a");                           /* 2 of a, 2 distinct: kept */
    expect("Hello there", "Hallo Hallo Hallo", "Hallo Hallo Hallo");   /* two words: kept */
    /* bytes that are no UTF-8 come back as they were */
    expect("ok", "a\xff b", "a\xff b");
    /* the alternatives listed: "" , the translation and a repeat out, in order */
    {
        srv_lt_req r = {0};
        r.n_q = 2, r.q_list = 1, r.alternatives = 4;
        const char *texts[] = {"A", "B", "A", "", "B", "C", "C", "D", "C", "E"};
        char *body = srv_lt_body(&r, texts);
        CHECK_STR(body, "{\"translatedText\":[\"A\",\"C\"],\"alternatives\":[[\"B\"],[\"D\",\"E\"]]}");
        free(body);
    }
    return check_done();
}
