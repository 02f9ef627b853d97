#!/usr/bin/env python3
"""Converts the data of sacremoses 0.1.1's Moses tokenizer (the version
Argos Translate 1.11 pins) into the files tok/moses_data.c reads:

    python3 tools/moses_convert.py EXTRACTED_WHEEL DEST

EXTRACTED_WHEEL is the unzipped sacremoses-0.1.1 wheel (the folder holding
sacremoses/); scripts/fetch-model.sh moses downloads it from PyPI, checks
its sha256 and runs this into <models>/sacremoses-0.1.1. DEST gets:

- classes.tsv: one line per character class the tokenizer and detokenizer
  read, "NAME<TAB>lo-hi lo-hi ..." (hexadecimal code point ranges): the
  Perl Unicode property lists IsN, IsAlnum, IsAlpha, IsLower, IsSc, IsSo
  and the scripts Han, Hangul, Hiragana, Katakana (added to the alphabetic
  classes for zh, ja, ko and cjk) exactly as their files hold them (a newline included where a file has
  one: sacremoses puts each file's characters, that newline too, into its
  regular expressions' classes), and Indic, the viramas and nuktas
  sacremoses adds to the tokenizer's IsAlnum and IsAlpha;
- prefixes.tsv: "CODE<TAB>PREFIX" for every nonbreaking prefix of every
  language, as NonbreakingPrefixes.words yields them (lines stripped,
  empty lines and those starting with # left out), in file order;
- langs.tsv: "NAME<TAB>CODE", the names and codes words() accepts;
- VERSION.

Only the standard library: indic.py and corpus.py (which import only it)
are run from their files for their lists.
"""
import os
import sys


def module(path):
    src = open(path, encoding="utf-8").read()
    env = {"__name__": "sacremoses_data", "__file__": path}
    exec(compile(src, path, "exec"), env)
    return env


def ranges(chars):
    cps = sorted(set(ord(c) for c in chars))
    out = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return " ".join("%X-%X" % (lo, hi) for lo, hi in out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dest = sys.argv[1], sys.argv[2]
    pkg = os.path.join(src, "sacremoses")
    os.makedirs(dest, exist_ok=True)
    with open(os.path.join(dest, "classes.tsv"), "w", encoding="utf-8") as f:
        for name in ["IsN", "IsAlnum", "IsAlpha", "IsLower", "IsSc", "IsSo", "Han", "Hangul", "Hiragana",
                     "Katakana"]:
            text = open(os.path.join(pkg, "data", "perluniprops", name + ".txt"), "rb").read().decode("utf-8")
            f.write("%s\t%s\n" % (name, ranges(text)))
        indic = module(os.path.join(pkg, "indic.py"))
        f.write("Indic\t%s\n" % ranges("".join(indic["VIRAMAS"]) + "".join(indic["NUKTAS"])))
    corpus = module(os.path.join(pkg, "corpus.py"))
    nbp = corpus["NonbreakingPrefixes"]()
    codes = sorted(set(nbp.available_langs.values()))
    with open(os.path.join(dest, "langs.tsv"), "w", encoding="utf-8") as f:
        for name, code in sorted(nbp.available_langs.items()):
            f.write("%s\t%s\n" % (name, code))
    n = 0
    with open(os.path.join(dest, "prefixes.tsv"), "w", encoding="utf-8") as f:
        for code in codes:
            path = os.path.join(pkg, "data", "nonbreaking_prefixes", "nonbreaking_prefix." + code)
            for line in open(path, "rb").read().decode("utf-8").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    f.write("%s\t%s\n" % (code, line.strip()))
                    n += 1
    with open(os.path.join(dest, "VERSION"), "w") as f:
        f.write("sacremoses 0.1.1\n")
    print("%d languages, %d prefixes -> %s" % (len(codes), n, dest))


if __name__ == "__main__":
    main()
