/* test_lt_split.c - a LibreTranslate text cut into sentences
 * (server/lt_split.c): the sentences expected are written from the rules
 * lt_split.h states (lines apart; . ! ? ... and closers, then white space
 * and no lowercase letter; abbreviations; CJK's terminators; pieces
 * without a letter kept), not from the code's output; and the text put
 * back around translations, byte for byte between them. */
#include "check.h"

#include "../server/utf8.c"
#include "../server/lt_split.c"

#include <stdlib.h>

/* Cuts text, checks its sentences against want (NULL-terminated), and the
 * text rejoined around "<i>" markers against joined. */
static void expect(const char *text, const char *const *want, const char *joined) {
    srv_sentences ss;
    CHECK_EQ_INT(srv_lt_sentences(text, 64, &ss), 0);
    int n = 0;
    while (want[n]) n++;
    CHECK_EQ_INT(ss.n, n);
    char got[256];
    for (int i = 0; i < n && i < ss.n; i++) {
        snprintf(got, sizeof got, "%.*s", (int)ss.s[i].len, text + ss.s[i].off);
        CHECK_STR(got, want[i]);
    }
    char marks[64][16];
    const char *out[64];
    for (int i = 0; i < ss.n && i < 64; i++) {
        snprintf(marks[i], sizeof marks[i], "<%d>", i);
        out[i] = marks[i];
    }
    char *j = srv_lt_rejoin(&ss, out);
    CHECK_STR(j, joined);
    free(j);
    /* its own sentences put back: the text itself */
    const char *self[64];
    char buf[64][256];
    for (int i = 0; i < ss.n && i < 64; i++) {
        snprintf(buf[i], sizeof buf[i], "%.*s", (int)ss.s[i].len, text + ss.s[i].off);
        self[i] = buf[i];
    }
    j = srv_lt_rejoin(&ss, self);
    CHECK_STR(j, text);
    free(j);
    srv_sentences_free(&ss);
}

int main(void) {
    {   /* sentences, the white space between them kept */
        const char *w[] = {"Hello world.", "How are you?", "Fine!", NULL};
        expect("Hello world.  How are you?\tFine!", w, "<0>  <1>\t<2>");
    }
    {   /* lines apart, blank ones and a last newline kept */
        const char *w[] = {"One line", "Two.", "Three.", NULL};
        expect("One line\n\nTwo. Three.\n", w, "<0>\n\n<1> <2>\n");
    }
    {   /* no cut: a lowercase word after, a number's point, abbreviations, initials */
        const char *w[] = {"It costs 3.50 e.g. for Mr. Smith and J. R. Tolkien, etc. and so on.",
                           "Next one.", NULL};
        expect("It costs 3.50 e.g. for Mr. Smith and J. R. Tolkien, etc. and so on. Next one.", w, "<0> <1>");
    }
    {   /* ellipses and runs of terminators, closing quotes and brackets */
        const char *w[] = {"Wait...", "What?!", "He said \"Go.\"", "(Then he went.)", "\xc2\xabOui.\xc2\xbb", NULL};
        expect("Wait... What?! He said \"Go.\" (Then he went.) \xc2\xabOui.\xc2\xbb", w, "<0> <1> <2> <3> <4>");
    }
    {   /* ordinals of one or two digits are no end; a year is */
        const char *w[] = {"Am 3. Oktober 1990.", "Dann 12. Mai.", NULL};
        expect("Am 3. Oktober 1990. Dann 12. Mai.", w, "<0> <1>");
        const char *w2[] = {"Born in 1990.", "Then more.", NULL};
        expect("Born in 1990. Then more.", w2, "<0> <1>");
    }
    {   /* a lowercase start keeps the sentence; an uppercase or digit one cuts it */
        const char *w[] = {"See fig. one.", "Then 3 more.", "4 left.", NULL};
        expect("See fig. one. Then 3 more. 4 left.", w, "<0> <1> <2>");
    }
    {   /* CJK: cut after 。！？ whatever follows */
        const char *w[] = {"\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82", "\xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81",
                           "\xe5\xa5\xbd\xef\xbc\x9f", NULL};
        expect("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe5\x86\x8d\xe8\xa7\x81\xef\xbc\x81 \xe5\xa5\xbd\xef\xbc\x9f",
               w, "<0><1> <2>");
    }
    {   /* pieces without a letter stay as they were */
        const char *w[] = {"Chapter one.", "The end.", NULL};
        expect("142. Chapter one. -- 7! The end. ...", w, "142. <0> -- 7! <1> ...");
    }
    {   /* no letter beyond ASCII either: punctuation, symbols, emoji; CJK and accents are letters */
        const char *w[] = {"\xc3\xa9t\xc3\xa9.", "\xe5\xa5\xbd", NULL};
        expect("\xe2\x80\xa6 \xc2\xab\xc2\xbb \xe2\x82\xac" "5. \xf0\x9f\x98\x80! \xc3\xa9t\xc3\xa9. \xe5\xa5\xbd", w,
               "\xe2\x80\xa6 \xc2\xab\xc2\xbb \xe2\x82\xac" "5. \xf0\x9f\x98\x80! <0> <1>");
    }
    {   /* nothing to translate */
        const char *w[] = {NULL};
        expect("  \n 12.5 %\n", w, "  \n 12.5 %\n");
        expect("", w, "");
    }
    {   /* more sentences than allowed */
        srv_sentences ss;
        CHECK_EQ_INT(srv_lt_sentences("Aa. Bb. Cc. Dd.", 3, &ss), -2);
        srv_sentences_free(&ss);
        CHECK_EQ_INT(srv_lt_sentences("Aa. Bb. Cc. Dd.", 4, &ss), 0);
        CHECK_EQ_INT(ss.n, 4);
        srv_sentences_free(&ss);
    }
    return check_done();
}
