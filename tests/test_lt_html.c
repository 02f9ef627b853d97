/* test_lt_html.c - LibreTranslate's format "html" (server/lt_html.c): which
 * text nodes of a document go to the model, decoded, and the document put
 * back around their translations, byte for byte elsewhere. The expected
 * nodes are written from the HTML rules lt_html.h states (tags, comments,
 * entities, raw text elements, translate="no"), not from the code's output. */
#include "check.h"

#include "../server/utf8.c"
#include "../server/lt_html.c"

#include <stdlib.h>

/* Splits doc, checks its text nodes against want[n] (NULL-terminated), and
 * when out is given, the document joined around them. */
static void expect(const char *doc, const char *const *want, const char *const *out,
                   const char *joined) {
    srv_html h;
    CHECK_EQ_INT(srv_html_split(doc, 64, &h), 0);
    int n = 0;
    while (want[n]) n++;
    CHECK_EQ_INT(h.n_text, n);
    for (int i = 0; i < n && i < h.n_text; i++) CHECK_STR(h.text[i], want[i]);
    if (joined) {
        char *j = srv_html_join(&h, out);
        CHECK_STR(j, joined);
        free(j);
    }
    /* the document's own texts put back: itself, where it has no entities
     * and no bare '<' */
    if (!strchr(doc, '&') && !strstr(doc, "< ")) {
        char *j = srv_html_join(&h, (const char *const *)h.text);
        CHECK_STR(j, doc);
        free(j);
    }
    srv_html_free(&h);
}

int main(void) {
    {   /* inline markup splits a sentence into its nodes; white space stays */
        const char *want[] = {"Hello", "world", ", friend.", NULL}, *out[] = {"A", "B", "C"};
        expect("<p>Hello <b>world</b>, friend.</p>\n", want, out, "<p>A <b>B</b>C</p>\n");
    }
    {   /* entities decoded for the model; the translation escaped */
        const char *want[] = {"Fish & chips <3 \xc3\xa9t\xc3\xa9 \xc2\xa0x &bogus; &#0; \"q\" 'a'", NULL};
        const char *out[] = {"a < b & c > d \"e\""};
        expect("<p> Fish &amp; chips &lt;3 &#233;t&#xE9; &nbsp;x &bogus; &#0; &quot;q&quot; &apos;a&apos;</p>",
               want, out, "<p> a &lt; b &amp; c &gt; d \"e\"</p>");
    }
    {   /* named entities beyond the markup five (code points: HTML 4's
         * entity tables, as Python's html.unescape has them); a reference
         * in the translation stays one */
        const char *want[] = {"\xc3\xa9t\xc3\xa9 \xe2\x80\x94 \xc2\xa9 \xe2\x80\xa6 \xc3\x9f\xc3\xbf \xe2\x82\xac &hellipx;", NULL};
        const char *out[] = {"A &hellip; B & C &copy;"};
        expect("<p>&eacute;t&eacute; &mdash; &copy; &hellip; &szlig;&yuml; &euro; &hellipx;</p>", want, out,
               "<p>A &hellip; B &amp; C &copy;</p>");
    }
    {   /* what is not translated: raw text, computer text, translate="no" */
        const char *want[] = {"T1", "after", NULL}, *out[] = {"X", "Y"};
        const char *doc =
            "<script>var a = \"<p>no</p>\";</script><STYLE>p { x: 'y' }</STYLE>"
            "<code>x = y</code><pre>z</pre><kbd>k</kbd>"
            "<div translate=\"no\">Name <span>Inner</span></div>"
            "<span class=\"a notranslate b\">Keep</span><span class=\"notranslated\">T1</span>"
            "<div translate=NO><div>a</div>b</div> after";
        expect(doc, want, out,
               "<script>var a = \"<p>no</p>\";</script><STYLE>p { x: 'y' }</STYLE>"
               "<code>x = y</code><pre>z</pre><kbd>k</kbd>"
               "<div translate=\"no\">Name <span>Inner</span></div>"
               "<span class=\"a notranslate b\">Keep</span><span class=\"notranslated\">X</span>"
               "<div translate=NO><div>a</div>b</div> Y");
    }
    {   /* comments, a doctype, '>' in a quoted attribute, a bare '<' */
        const char *want[] = {"Title here", "Caption", "a < b and c", NULL};
        expect("<!DOCTYPE html><!-- Hello <b>x</b> --><title>Title here</title>"
               "<img alt=\"x > y\" src=a.png>Caption<p>a < b and c</p>",
               want, NULL, NULL);
    }
    {   /* nodes without a letter are kept; a void or self-closed element
         * with translate="no" holds nothing */
        const char *want[] = {"x", "y", NULL}, *out[] = {"1", "2"};
        expect("<td>123</td><td> | </td><td>&nbsp;</td><p translate=\"no\"/>x<br translate=\"no\">y",
               want, out, "<td>123</td><td> | </td><td>&nbsp;</td><p translate=\"no\"/>1<br translate=\"no\">2");
    }
    {   /* unterminated markup runs to the end; a text of no markup at all */
        const char *w1[] = {"Hello", NULL}, *w2[] = {"plain text", NULL};
        expect("<p>Hello <b class=\"x", w1, NULL, NULL);
        expect("plain text", w2, NULL, NULL);
    }
    {   /* at most max_text nodes; a document with none */
        srv_html h;
        CHECK_EQ_INT(srv_html_split("<p>a</p><p>b</p><p>c</p>", 2, &h), -2);
        srv_html_free(&h);
        CHECK_EQ_INT(srv_html_split("<br><!-- x -->", 2, &h), 0);
        CHECK_EQ_INT(h.n_text, 0);
        char *j = srv_html_join(&h, NULL);
        CHECK_STR(j, "<br><!-- x -->");
        free(j);
        srv_html_free(&h);
    }
    return check_done();
}
