#!/usr/bin/env python3
"""Goldens for return_logits_vocab in encdec's Translator: CTranslate2 4.8's
Translator itself returns the logits of every greedy decoding step on the
random Marian conversion (tests/data/tiny-random-marian-ct2, 234 tokens):

  plain     greedy, each source alone, a long enough limit that some end
  batch     the same sources in one call (CTranslate2 pads them together)
  prefix    a two-token target prefix and min_decoding_length 3 (the
            prefix's steps have logits too; the end token banned at the
            first three steps, the prefix's counted)
  rules     repetition_penalty 1.5, no_repeat_ngram_size 2 and a suppressed
            token (banned tokens at float32's lowest value)
  ends      end_token a list of two tokens, return_end_token

  tests/data/bart-golden/translator-logits.json
    vocab_size, sources (token lists: >>de<< first, </s> last), sample (40
    token ids, seeded), runs: name, options, prefix, results (per source:
    hypotheses, scores, steps (the logits rows CTranslate2 returned), rows:
    per step its 8 largest logits as [id, value], its values at the sample
    ids, and the ids at float32's lowest value (banned))

The script asserts that each step's logits give that step's token as the
greedy choice (the row's argmax) and that some hypotheses end before the
limit. Run from the repository root:

    .venv/bin/python tools/golden_translator_logits.py
"""
import json
import os
import random

import ctranslate2
import numpy as np
import sentencepiece as spm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "tests", "data", "tiny-random-marian-ct2")
OUT = os.path.join(ROOT, "tests", "data", "bart-golden", "translator-logits.json")
MAX = 10
WORDS = ["the", "cat", "was", "yes", "estate", "Hello", "world", "big", "and", "of", "from", "The",
         "which", "sun", "day", "water", "we", "are", "read", "speak", "house", "green", "time"]


def main():
    rng = random.Random(20261204)
    vocab = json.load(open(os.path.join(MODEL, "shared_vocabulary.json"), encoding="utf-8"))
    sp = spm.SentencePieceProcessor(model_file=os.path.join(MODEL, "source.spm"))
    sources = []
    while len(sources) < 5:
        pieces = sp.encode(" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))), out_type=str)
        if all(p in vocab for p in pieces):
            sources.append([">>de<<"] + pieces + ["</s>"])
    normal = [t for t in vocab[3:] if not t.startswith(">>") and not t.startswith("<") and t != "</s>"]
    prefix = [rng.sample(normal, 2) for _ in sources]
    sample = sorted(rng.sample(range(len(vocab)), 40))
    t = ctranslate2.Translator(MODEL, compute_type="float32")
    runs = [("plain", {}, None), ("batch", {}, None),
            ("prefix", {"min_decoding_length": 3}, prefix),
            ("rules", {"repetition_penalty": 1.5, "no_repeat_ngram_size": 2, "suppress_sequences": [[normal[7]]]},
             None),
            ("ends", {"end_token": ["</s>", normal[11]], "return_end_token": True}, None)]
    out = {"ctranslate2": ctranslate2.__version__, "model_dir": "tests/data/tiny-random-marian-ct2",
           "vocab_size": len(vocab), "max_decoding_length": MAX, "sample": sample, "sources": sources, "runs": []}
    ended = 0
    for name, opts, pre in runs:
        kw = dict(opts, beam_size=1, max_decoding_length=MAX, return_scores=True, return_logits_vocab=True)
        if name == "batch":
            res = t.translate_batch(sources, **kw)
        else:
            res = [t.translate_batch([s], target_prefix=[pre[i]] if pre else None, **kw)[0]
                   for i, s in enumerate(sources)]
        results = []
        for r in res:
            rows = [np.asarray(x, dtype=np.float32) for x in r.logits[0]]
            hyp = r.hypotheses[0]
            for j, row in enumerate(rows[:len(hyp)]):
                if not (pre and j < len(pre[0])):
                    assert vocab[int(row.argmax())] == hyp[j], (name, j)
            ended += len(rows) < MAX
            results.append({"hypotheses": r.hypotheses, "scores": r.scores, "steps": len(rows),
                            "rows": [{"top": [[int(i), float(row[i])] for i in np.argsort(-row, kind="stable")[:8]],
                                      "sample": [float(row[i]) for i in sample],
                                      "lowest": [int(i) for i in np.nonzero(row <= np.finfo(np.float32).min)[0]]}
                                     for row in rows]})
        out["runs"].append({"name": name, "options": opts, "prefix": pre, "results": results})
    assert ended >= 3, ended
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
