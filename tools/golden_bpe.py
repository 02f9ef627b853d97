#!/usr/bin/env python3
"""Writes tests/data/bpe_golden.json: BPE ids for a corpus of tricky strings,
computed by the Hugging Face `tokenizers` library (the independent reference
for src/tok/bpe.c) from the Whisper tiny.en tokenizer.json.

Re-run (from the repository root) after changing the corpus:

    .venv/bin/python tools/golden_bpe.py \
        [../shared/assets/whisper-tiny.en-tokenizer/tokenizer.json] \
        [tests/data/bpe_golden.json]

Ids are the raw BPE ids: no post-processor prefix tokens (add_special_tokens
False) and special-token spellings in the text encoded as plain text
(encode_special_tokens True), which is what bpe_encode promises.
"""
import json
import random
import sys

import tokenizers
from tokenizers import Tokenizer

import os
# ../shared beside the repository (override with $ENCDEC_SHARED)
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

TOKENIZER = SHARED + "/assets/whisper-tiny.en-tokenizer/tokenizer.json"
OUT = "tests/data/bpe_golden.json"

CORPUS = [
    "",
    " ",
    "a",
    "Hello world",
    " hello world",
    " And so my fellow Americans, ask not what your country can do for you,"
    " ask what you can do for your country.",
    # spaces, tabs, newlines
    "  leading two spaces",
    "trailing spaces   ",
    "multiple    inner     spaces",
    "tab\tseparated\t\tvalues",
    "line one\nline two\n\n\nline five",
    "\r\n windows line end\r\n",
    " \t \n mixed whitespace \n\t ",
    "   ",
    "\n",
    "a\u00a0non-breaking\u3000ideographic\u2009thin space",
    # numbers
    "123456789",
    "3.14",
    "1,000",
    "pi is 3.14159265358979 and e is 2.71828",
    "Call 555-0199 at 10:30pm on 2024-01-31.",
    "\u0661\u0662\u0663 \u00bd \u2167 \u00b2",
    # contractions and apostrophes
    "I'll",
    "don't",
    "'S",
    "IT'S THE CAT'S TOY, ISN'T IT?",
    "we're they've I'm you'd she'll o'clock rock'n'roll",
    " 's 't 're 've 'm 'll 'd",
    "\u2019s curly apostrophe don\u2019t",
    # punctuation runs
    "Wait...what?!?! (really) [yes] {no} <maybe>",
    "!!!???...,,,;;;:::---___===+++***&&&^^^%%%$$$###@@@",
    "email@example.com https://example.org/path?q=1&r=2#frag",
    "\"quoted\" 'single' `back` \u00abguillemets\u00bb \u201ccurly\u201d",
    "--flag=value -x /usr/bin/env",
    # special-token spellings are plain text
    "<|endoftext|>",
    "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>",
    " <|0.00|> Hello<|1.00|>",
    # accents and combining marks
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe",
    "cafe\u0301 nai\u0308ve (combining marks)",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034da\u0357\u0363 zalgo",
    "\u1ec6 Vi\u1ec7t Nam ti\u1ebfng Vi\u1ec7t",
    # CJK
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    # emoji, ZWJ sequences, flags, skin tones
    "\U0001F917",
    "I \u2764\ufe0f NY \U0001F600\U0001F603",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family",
    "\U0001F44D\U0001F3FD thumbs \U0001F1FA\U0001F1F8 flag",
    "\U0001F3F3\ufe0f\u200d\U0001F308",
    # right to left
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u202eevil\u202c RLO override",
    # mixed scripts
    "English \u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u4e2d\u6587 \u0939\u093f\u0928\u094d\u0926\u0940",
    "Tokyo\u6771\u4eac2020\u5e74",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35 \u1780\u17d2\u1793\u17bb\u17c6",
    # rare code points
    "\u0001\u0002\u001b\u007f\u0085 control characters",
    "\U0001D54F\U0001D552\U0001D55D math letters \U00010348 gothic",
    "\ufeffBOM at start",
    # a long word
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "Supercalifragilisticexpialidocious" * 8,
    "a" * 300,
    " " + "ab" * 200,
    # white space next to words, numbers and punctuation
    "x \u00a0y \u00a0 z", "a \n b", " 123 \t456", "end \n", "'ll've'd", "don't\n'm",
]

# Random strings over the characters where the pre-tokenizer's alternatives
# meet: white space of several kinds, apostrophes, letters, digits, marks.
POOL = list(" \t\n\r'sStlmdrve.,!?-_0159aZ\u00e9\u00a0\u2003\u3000\u0301\u0663\u00bd"
            "\u4e2d\u6587\u0416\u05d0\u200d\ufe0f") + ["\U0001F600", "\U0001F44D"]


def random_cases(n=150, seed=1234):
    rng = random.Random(seed)
    return ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 24))) for _ in range(n)]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else TOKENIZER
    out = sys.argv[2] if len(sys.argv) > 2 else OUT
    tok = Tokenizer.from_file(path)
    tok.encode_special_tokens = True
    cases = []
    for s in CORPUS + random_cases():
        ids = tok.encode(s, add_special_tokens=False).ids
        cases.append({"text": s, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=False)})
    # Partial UTF-8 sequences decode to U+FFFD.
    emoji = tok.encode("\U0001F917 ok", add_special_tokens=False).ids
    decodes = [{"ids": emoji[:1], "skip_special": False,
                "text": tok.decode(emoji[:1], skip_special_tokens=False)},
               {"ids": emoji[1:], "skip_special": False,
                "text": tok.decode(emoji[1:], skip_special_tokens=False)}]
    jfk = [50257, 50362] + tok.encode(CORPUS[5], add_special_tokens=False).ids + [50256]
    for skip in (True, False):
        decodes.append({"ids": jfk, "skip_special": skip,
                        "text": tok.decode(jfk, skip_special_tokens=skip)})
    doc = {"source": "tokenizers %s, %s" % (tokenizers.__version__, path),
           "cases": cases, "decode": decodes}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=1)
        f.write("\n")
    print("%s: %d cases, %d decode cases" % (out, len(cases), len(decodes)))


if __name__ == "__main__":
    main()
