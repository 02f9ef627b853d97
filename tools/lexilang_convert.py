#!/usr/bin/env python3
"""lexilang's word lists as text, for encdec's language identifier
(src/models/langid.h): scripts/fetch-model.sh langid runs it on the lexilang
wheel it fetched from PyPI (its words.pickle is Python's pickle, which C does
not read).

    python3 tools/lexilang_convert.py WHEEL_DIR OUT_DIR

WHEEL_DIR: the unpacked wheel (lexilang/ inside). Writes OUT_DIR/words.tsv
("word<TAB>code code ...": a word and the languages whose lists hold it, in
lexilang's order, which decides its ties) and OUT_DIR/weights.tsv ("code
weight": the weight lexilang gives each of its languages to break ties).
"""
import os
import pickle
import sys


def main():
    wheel, out = sys.argv[1], sys.argv[2]
    sys.path.insert(0, wheel)
    from lexilang import languages  # noqa: E402 (the wheel's own module)

    with open(os.path.join(wheel, "lexilang", "data", "words.pickle"), "rb") as f:
        words = pickle.load(f, encoding="utf-8")
    codes = sorted(set(languages.get_supported_languages().values()))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "weights.tsv"), "w", encoding="utf-8") as f:
        for c in codes:
            f.write("%s\t%r\n" % (c, languages.get_language_weight(c)))
    known = set(codes)
    n = 0
    with open(os.path.join(out, "words.tsv"), "w", encoding="utf-8", newline="\n") as f:
        for word, langs in words.items():
            if not word:
                continue  # lexilang never looks up an empty token
            if any(ch in word for ch in "\t\n\r\0 ") or not set(langs) <= known:
                raise SystemExit("lexilang_convert: an unexpected word %r" % word)
            f.write("%s\t%s\n" % (word, " ".join(langs)))
            n += 1
    print("lexilang_convert: %d words, %d languages" % (n, len(codes)))


if __name__ == "__main__":
    main()
