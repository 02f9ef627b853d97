#!/usr/bin/env python3
"""Writes tests/data/bpe-nmt/: three BPE codes files and golden.json, the
units Argos Translate's own apply_bpe (argostranslate 1.11.0, the module its
BPETokenizer segments a package's bpe.model with) gives for a corpus of
tricky texts with each file: the independent reference for
src/tok/bpe_nmt.c (tests/test_bpe_nmt.c).

Re-run (from the repository root) after changing the corpus:

    .venv/bin/python tools/golden_bpe_nmt.py [tests/data/bpe-nmt]

The oracle module is read straight out of the argostranslate wheel, fetched
once with `pip download --no-deps` into build/oracle-wheels (its package's
dependencies, CTranslate2 and stanza among them, are not needed for this
one file, which imports only the standard library).

The codes files:
- codes-v02.txt: "#version: 0.2", merges learned here (a plain count of the
  most frequent pair, as subword-nmt's learner does) from the transcripts in
  ../shared/audio/TRANSCRIPTS.tsv and the sentences below;
- codes-v01.txt: the same learner in version 0.1's form (the end mark a
  symbol of its own), no version line;
- codes-crafted.txt: CRLF and lone-CR line ends, duplicate codes (the first
  wins), a merge whose product is merged at a lower rank than itself, codes
  that make "</w>" appear inside units, non-ASCII symbols;
- codes-random.txt: 80 random codes over the symbols of "abc" and their
  products, in a shuffled order (products merged at lower ranks than the
  codes that make them, overlapping pairs such as "a a"), with 300 random
  words over "abc": every way merges can interact.
"""
import collections
import json
import random
import os
import sys

from oracle_wheel import wheel_module, write_cases

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(HERE, "..", "..", "shared"))
OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/bpe-nmt"
ARGOS = "argostranslate==1.11.0"

SENTENCES = [
    "The quick brown fox jumps over the lazy dog while the dogs sleep.",
    "Translation models read their input in subword units learned from a corpus.",
    "Every unit but the last of a word carries the continuation mark.",
    "She sells sea shells by the sea shore; the shells she sells are surely sea shells.",
    "Peter Piper picked a peck of pickled peppers, a peck of pickled peppers Peter Piper picked.",
    "Die schnelle braune Füchsin springt über den faulen Hund.",
    "Le café de la rue est fermé : les élèves étudient à la bibliothèque.",
    "Numbers such as 3.14 , 1,000 and 2026 appear in text too .",
]

CORPUS = [
    "",
    " ",
    "\r\n",
    "a",
    "I",
    "a b",
    "Hello world !",
    "  leading spaces",
    "trailing spaces  \r\n",
    "double  space  between",
    "tab\tinside a word",
    "new\nline inside",
    "\n\nnewlines at both ends\n\n",
    "naïve café façade Straße Füchsin",
    "日本語 の テキスト",
    "emoji 😀 👍🏽 thumbs",
    "e\u0301 combining and \u00a0no-break",
    "literal</w>token </w> x</w></w> <w> </ w>",
    "@@ a@@ b@@@@ @@@",
    "e ee eee eeee eeeee",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "abaa ababab abab abababa ba",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "the the the , . ; : ! ?",
    "quilter apostle middle classes gospel",
    "And so my fellow Americans , ask not what your country can do for you",
]


def oracle():
    return wheel_module(ARGOS, "argostranslate/apply_bpe.py").BPE


def corpus_words():
    words = collections.Counter()
    texts = list(SENTENCES)
    with open(os.path.join(SHARED, "audio", "TRANSCRIPTS.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > 1 and not cols[1].startswith("("):
                texts.append(cols[1])
    for t in texts:
        words.update(t.split())
    return words


def learn(words, n_merges, version):
    """The most frequent adjacent pair, merged everywhere, n_merges times
    (ties: the pair that sorts first)."""
    vocab = {}
    for w, c in words.items():
        sym = tuple(w) + ("</w>",) if version == 1 else tuple(w[:-1]) + (w[-1] + "</w>",)
        vocab[sym] = vocab.get(sym, 0) + c
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for sym, c in vocab.items():
            for a, b in zip(sym, sym[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        new = {}
        for sym, c in vocab.items():
            out, i = [], 0
            while i < len(sym):
                if i + 1 < len(sym) and (sym[i], sym[i + 1]) == best:
                    out.append(sym[i] + sym[i + 1])
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        vocab = new
    return merges


CRAFTED = (
    "#version: 0.2\r\n"
    "a b\r\n"
    "ab a\r\n"          # a product merged again (rank 1)
    "a b\r\n"           # a duplicate: the first wins
    "ab ab\r"           # a lone CR ends the line
    "e e</w>\n"
    "e e\n"
    "ee e</w>\n"
    "ee ee\n"
    "> </w>\n"          # what a literal "</w>" in the text becomes
    "w ></w>\n"
    "/ w></w>\n"
    "< /w></w>\n"
    "x </w></w>\n"
    "é s</w>\n"
    "ç a\n"
    "ça d\n"
    "t h\n"
    "th e</w>\n"
    "@ @\n"
    "@@ @</w>\n"
    "😀 👍\n"
)


def random_codes(rng):
    syms = ["a", "b", "c", "a</w>", "b</w>", "c</w>"]
    codes = []
    while len(codes) < 80:
        x = rng.choice([s for s in syms if not s.endswith("</w>")])
        y = rng.choice(syms)
        if (x, y) not in codes:
            codes.append((x, y))
            if x + y not in syms:
                syms.append(x + y)
    rng.shuffle(codes)
    return "#version: 0.2\n" + "".join("%s %s\n" % c for c in codes)


def main():
    BPE = oracle()
    os.makedirs(OUT, exist_ok=True)
    words = corpus_words()
    files = {
        "codes-v02.txt": "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in learn(words, 400, 2)),
        "codes-v01.txt": "".join(f"{a} {b}\n" for a, b in learn(words, 250, 1)),
        "codes-crafted.txt": CRAFTED,
        "codes-random.txt": random_codes(random.Random(20261205)),
    }
    rng = random.Random(5)
    random_words = [" ".join("".join(rng.choice("abc") for _ in range(rng.randint(1, 40)))
                             for _ in range(3)) for _ in range(100)]
    cases = []
    for name, text in files.items():
        path = os.path.join(OUT, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        with open(path, "r", encoding="utf-8") as f:
            bpe = BPE(f)
        for t in CORPUS + SENTENCES + (random_words if name == "codes-random.txt" else []):
            units = bpe.segment_tokens(t.strip("\r\n ").split(" "))
            cases.append({"codes": name, "version": ".".join(map(str, bpe.version)), "text": t,
                          "units": list(units), "join": " ".join(units).replace("@@ ", "")})
    write_cases(os.path.join(OUT, "golden.json"), ARGOS + " apply_bpe.BPE.segment_tokens", cases)


if __name__ == "__main__":
    main()
