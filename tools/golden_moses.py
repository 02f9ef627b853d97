#!/usr/bin/env python3
"""Writes tests/data/moses/normalize.json, tokenize.json and
detokenize.json: what sacremoses' own MosesPunctNormalizer(lang).normalize,
MosesTokenizer(lang).tokenize and MosesDetokenizer(lang).detokenize give (sacremoses 0.1.1: Argos Translate 1.11
pins sacremoses < 0.2, and its BPETokenizer runs both with their defaults)
for a corpus of tricky texts in several languages: the independent
reference for src/tok/moses_norm.c, moses_tok.c and moses_detok.c
(tests/test_moses.c). The detokenizer's inputs are the tokenizer's outputs
(what a translation model's output looks like) and token lists that walk
its rules; one rule of sacremoses 0.1.1 raises TypeError (Czech "-li"
after an elision): such inputs are left out.

Re-run (from the repository root) after changing the corpus:

    .venv/bin/python tools/golden_moses.py [tests/data/moses]

The oracle is the sacremoses wheel, fetched once with `pip download
--no-deps` into build/oracle-wheels: normalize.py alone for the
normaliser (it imports only `re`, `itertools` and `regex`, which .venv
has); the unpacked package for the tokenizer, with the joblib and tqdm
wheels its util module imports (pinned, unpacked beside it).
"""
import json
import os
import sys

from oracle_wheel import wheel_module, wheel_package, write_cases

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/moses"
SACREMOSES = "sacremoses==0.1.1"
DEPS = ("joblib==1.4.2", "tqdm==4.67.1")   # what sacremoses.util imports

LANGS = ["en", "de", "fr", "es", "cs", "cz", "it", "pt", "ru", "zh", "ja", "xx"]

NB = "\u00a0"
CORPUS = [
    "",
    "   ",
    "Hello, world!",
    "  spaces   around  \t tabs \r\n and CRLF\r\n",
    "a(b)c ( d ) e (f) . g (h) , i (j) ! (k)? (l):(m);",
    "50 % of 3 % and ٣ % and x % and 12 %%",
    "key : value ; next :: x ;;",
    "``quoted'' and `single' and ''double''",
    "„German“ “English” ‘single’ ‚low‘",
    "dash – en — em –– x—y",
    "it´s don’t rock‘n’roll ’tis o’clock a’b ‘x’",
    "´´acute´´ ´ ´",
    "wait… what……",
    f"«{NB}Bonjour{NB}» «Salut» «{NB}x» y{NB}»{NB}z {NB}»",
    f"10{NB}% nº{NB}5 a{NB}: 20{NB}ºC 5{NB}cm why{NB}? yes{NB}! a{NB};b ,{NB}c",
    f"1{NB}000{NB}000 and 3{NB}x and ٣{NB}٤ and a{NB}1",
    'He said "hello", then "bye". "Yes,." "a,,b" "..',
    'Er sagte "Hallo," und "Tschüss." Dann "ja..." <b>"x."<i>',
    'Il a dit "oui."  Puis "non."\u3000ok "fin." ',
    'end with dots quote..."',
    '.." at start',
    'a.".b ."." x',
    "mixed\u2028line\u2029sep\u3000ideographic\u2003em space",
    "\u3000\u2003 leading and trailing unicode spaces \u2003\u3000",
    "emoji 😀 and CJK 日本語、テキスト。",
    "Numbers: 1,000.50 and 3.14; 2026-12-05 (today) .",
    'Quote at end "',
    ") ,) .) !) ?) :) ;) x",
    "( (( ))",
    "\r\r\r",
]


def oracle():
    return wheel_module(SACREMOSES, "sacremoses/normalize.py").MosesPunctNormalizer


TOK_LANGS = ["en", "fr", "it", "de", "es", "cs", "pt", "ru", "el", "fi", "zh", "ja", "ko", "cjk", "hi",
             "english", "xx"]
TOK_CORPUS = CORPUS + [
    "Mr. Smith went to Washington. He met Dr. Jones on Jan. 5.",
    "No. 5 and No. five; Art. 12 and pp. 10 but p. x",
    "e.g. this, i.e. that; U.S.A. is big. The U.S. is too.",
    "It's John's car. They're here; we'll see, I've done it, he'd go.",
    "rock 'n' roll, the '90s, 50's, Jones' book, 'quoted' words.",
    "l'homme d'affaires aujourd'hui qu'il s'est dit",
    "5,300 and A,B,C,D and 1,a and a,1 and end,",
    "Hello... world.... ok. .. . ...x",
    "a|b <tag> & [x] {y} \"quoted\" text",
    "He said 'hi'.'",
    "x-ray and foo--bar - and/or @user #tag $5 100% 3*4=12",
    "email@example.com http://example.com/a/b.html",
    "1. first 2. second 3.third",
    "ΑΒΓ. δέλτα. Ε.",
    "我爱北京天安门。我们。",
    "日本語のテキスト、です。カタカナ。",
    "한국어 문장입니다. 다음.",
    "नमस्ते दुनिया। क़िला",
    "tab\tand\nnewline\x01control\x1f\x7f and \u2028 sep",
    "St. Louis vs. Ms. Brown , Jr. and Sr.",
    "trailing dot apostrophe.'",
    "'leading quote and x.' and 'y'",
    "Z. A. and q. r.",
    "Made in the U.S.A. Then we left for the U.K.",
    "Version 1.2. Then 3.4.5. And a.1.",
    "x DOTMULTI.y DOTMULTI. a..b.... c DOTDOTMULTI.z DOTMULTI.. XDOTDOTMULTI DOTMULTI",
    "dots" + "." * 300 + "end" + "." * 7,
]


DETOK_LANGS = ["en", "fr", "it", "ga", "cs", "fi", "de", "zh", "ja", "ko", "xx"]
DETOK_EXTRA = [
    "",
    "Hello , world !",
    "He said &quot; hello &quot; and &quot; bye &quot; .",
    "&apos; single &apos; and `` double &apos;&apos; and ` one &apos;",
    "The Jones &apos; house and James &apos; s",
    "It &apos;s John &apos;s and they &apos;re",
    "l&apos; homme d&apos; affaires qu&apos; il",
    "Combien ? Oui ! Note : ceci ; 50 % \\ x",
    "$ 5 and € 10 and ( a ) [ b ] { c } ¿ qué ? ¡ sí !",
    "3 , 14 and 2 . 5 and 10 . 5",
    "EU : n EU : ssa EU : sta Helsinki : ssä x : kin x : nsa",
    "foo @-@ bar @-@ @-@ baz",
    "&amp;lt; &bar; &bra; &ket; &#124; &#91; &#93; &lt; &gt; &amp;",
    "我 爱 北京 天安门 。 hello 世界",
    "한국어 문장 . 다음",
    "日本語 の テキスト 、 です 。",
    "„ Anführung “ und „ noch “",
    "“ curly ” quotes “ again ”",
    "a   b\u3000c\td",
    "tokens ending : with colon : n",
    "\u1100 \u1100 \u1101 \u1101 \uac00 \uac00 \uac01 \uac01 \u2e80 \u2e80 \u2e81 \u2e81 \ud7af \ud7af",
]


def main():
    Norm = oracle()
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for lang in LANGS:
        norm = Norm(lang)
        for t in CORPUS:
            cases.append({"lang": lang, "text": t, "out": norm.normalize(t)})
    write_cases(os.path.join(OUT, "normalize.json"), SACREMOSES + " MosesPunctNormalizer(lang).normalize", cases)

    wheel_package(SACREMOSES, deps=DEPS)
    from sacremoses.tokenize import MosesTokenizer
    cases = []
    for lang in TOK_LANGS:
        tok = MosesTokenizer(lang)
        for t in TOK_CORPUS:
            cases.append({"lang": lang, "text": t, "tokens": " ".join(tok.tokenize(t))})
    write_cases(os.path.join(OUT, "tokenize.json"), SACREMOSES + " MosesTokenizer(lang).tokenize", cases)

    from sacremoses.tokenize import MosesDetokenizer
    tokenized = {}
    for c in cases:
        tokenized.setdefault(c["lang"], []).append(c["tokens"])
    cases = []
    for lang in DETOK_LANGS:
        detok = MosesDetokenizer(lang)
        for t in tokenized.get(lang, tokenized["en"]) + DETOK_EXTRA:
            try:
                out = detok.detokenize(t.split(" "))
            except TypeError:
                continue
            cases.append({"lang": lang, "tokens": t, "text": out})
    write_cases(os.path.join(OUT, "detokenize.json"), SACREMOSES + " MosesDetokenizer(lang).detokenize", cases)


if __name__ == "__main__":
    main()
