/* test_lt_format.c - LibreTranslate's touches to a text translation
 * (server/lt_format.c): trailing punctuation matched to the source's, a
 * one-word source's repeated-word "salad" cut to its first word, letter
 * case from the source (all lower, all upper, or the first letter's); and
 * the alternatives /translate lists (server/lt.c's body: empty ones, the
 * translation and repeats left out). The expected texts are written from
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

int main(void) {
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
