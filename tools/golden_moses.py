#!/usr/bin/env python3
"""Writes tests/data/moses/normalize.json: what sacremoses' own
MosesPunctNormalizer(lang).normalize gives (sacremoses 0.1.1: Argos
Translate 1.11 pins sacremoses < 0.2, and its BPETokenizer runs the
normaliser with its defaults) for a corpus of tricky texts in several
languages: the independent reference for src/tok/moses_norm.c
(tests/test_moses.c).

Re-run (from the repository root) after changing the corpus:

    .venv/bin/python tools/golden_moses.py [tests/data/moses]

The oracle module is read straight out of the sacremoses wheel, fetched
once with `pip download --no-deps` into build/oracle-wheels (normalize.py
imports only `re`, `itertools` and `regex`, which .venv has).
"""
import json
import os
import sys

from oracle_wheel import wheel_module

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/moses"
SACREMOSES = "sacremoses==0.1.1"

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


def main():
    Norm = oracle()
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for lang in LANGS:
        norm = Norm(lang)
        for t in CORPUS:
            cases.append({"lang": lang, "text": t, "out": norm.normalize(t)})
    with open(os.path.join(OUT, "normalize.json"), "w", encoding="utf-8") as f:
        json.dump({"oracle": SACREMOSES + " MosesPunctNormalizer(lang).normalize", "cases": cases}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases -> {OUT}/normalize.json")


if __name__ == "__main__":
    main()
