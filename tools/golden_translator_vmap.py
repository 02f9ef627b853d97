#!/usr/bin/env python3
"""Goldens for use_vmap (CTranslate2's vocabulary map) in encdec's
Translator: CTranslate2 4.8's Translator itself translates with the map.

It writes tests/data/tiny-random-marian-ct2/vmap.txt (a map as
CTranslate2's converters take with --vocab_mapping: a source n-gram, a tab,
target tokens; the line with an empty key the tokens every batch may
generate) from a seeded random choice over the model's vocabulary, then
runs translate_batch(use_vmap=True) on it:

  batch     every source in one call (one batch: their n-grams' tokens together)
  alone     each source in a call of its own, greedy
  groups    one call, max_batch_size 3 (CTranslate2's batches of the sources
            sorted from the longest; the sources' lengths all differ)
  prefix    each source alone with a target prefix of a token the map never
            names (a prefix's tokens join the set)

  tests/data/bart-golden/translator-vmap.json
    sources   token lists (>>de<< first, </s> last)
    runs      name, options, prefix, results (per kept source: hypotheses,
              scores)

A result is kept where its scores are 1e-3 or more apart (hypotheses
may run to the length limit: a random model seldom ends); the script asserts every run
keeps 4 or more, that the map changed its results, and that every token of
every hypothesis is one the map allows that batch (its own reading of the
file). Run from the repository root:

    .venv/bin/python tools/golden_translator_vmap.py
"""
import json
import os
import random

import ctranslate2
import sentencepiece as spm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "tests", "data", "tiny-random-marian-ct2")
OUT = os.path.join(ROOT, "tests", "data", "bart-golden", "translator-vmap.json")
MAX = 16
WORDS = ["the", "cat", "was", "yes", "estate", "Hello", "world", "big", "and", "of", "from", "The",
         "which", "sun", "day", "water", "we", "are", "read", "speak", "house", "green", "time"]


def separated(s):
    return all(x - y >= 1e-3 for x, y in zip(s, s[1:]))


def main():
    rng = random.Random(20261205)
    vocab = json.load(open(os.path.join(MODEL, "shared_vocabulary.json"), encoding="utf-8"))
    normal = [t for t in vocab[3:] if not t.startswith(">>") and not t.startswith("<") and t != "</s>"]
    sp = spm.SentencePieceProcessor(model_file=os.path.join(MODEL, "source.spm"))
    sources, lengths = [], set()
    while len(sources) < 9:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        pieces = sp.encode(text, out_type=str)
        n = len(pieces) + 2
        if all(p in vocab for p in pieces) and n not in lengths:
            lengths.add(n)
            sources.append([">>de<<"] + pieces + ["</s>"])
    pieces = sorted({p for s in sources for p in s[1:-1]})
    common = rng.sample(normal, 2)
    lines = ["\t" + " ".join(["</s>"] + common)]
    rules = {}
    for p in pieces:
        if rng.random() < 0.8:
            rules[p] = rng.sample(normal, rng.randint(1, 3))
    for s in sources[:4]:   # some two-word keys
        i = rng.randrange(1, len(s) - 2)
        rules[s[i] + " " + s[i + 1]] = rng.sample(normal, 2)
    for k, v in rules.items():
        lines.append(k + "\t" + " ".join(v))
    with open(os.path.join(MODEL, "vmap.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    def allowed(batch, prefixes):
        out = {"<unk>", "<s>", "</s>"} | set(common)
        for s in batch:
            for i in range(len(s)):
                for h in (1, 2):
                    key = " ".join(s[i:i + h])
                    if i + h <= len(s) and key in rules:
                        out.update(rules[key])
        for p in prefixes:
            out.update(p)
        return out

    tr = ctranslate2.Translator(MODEL, device="cpu", compute_type="float32")

    def fresh():
        # a Translator of its own for each call with the map: CTranslate2
        # 4.8's Decoder::update_output_layer adds a call's ids to the map of
        # the one before without clearing it (unordered_map::emplace keeps
        # old keys), so after a call with another set a target prefix is
        # forced onto a stale output index (another token comes out)
        return ctranslate2.Translator(MODEL, device="cpu", compute_type="float32")

    base = dict(max_decoding_length=MAX, return_scores=True)
    outside = next(t for t in normal if all(t not in v for v in rules.values()) and t not in common)
    runs = []

    def keep(name, opts, prefix, results, plain, sets):
        kept, changed = [], 0
        for i, (r, q) in enumerate(zip(results, plain)):
            changed += r.hypotheses != q.hypotheses
            for h in r.hypotheses:
                assert set(h) <= sets[i], (name, i, set(h) - sets[i])
            if separated(r.scores) and r.hypotheses:
                kept.append({"source": i, "hypotheses": r.hypotheses, "scores": r.scores})
        print(f"{name}: {len(kept)} of {len(results)} kept, the map changed {changed}")
        assert len(kept) >= 4 and changed >= 3, (name, len(kept), changed)
        runs.append({"name": name, "options": opts, "prefix": prefix, "results": kept})

    opts = dict(beam_size=2)
    r = fresh().translate_batch(sources, use_vmap=True, **base, **opts)
    q = tr.translate_batch(sources, **base, **opts)
    every = allowed(sources, [])
    keep("batch", opts, None, r, q, [every] * len(sources))

    opts = dict(beam_size=1)
    r = [fresh().translate_batch([s], use_vmap=True, **base, **opts)[0] for s in sources]
    q = [tr.translate_batch([s], **base, **opts)[0] for s in sources]
    keep("alone", opts, None, r, q, [allowed([s], []) for s in sources])

    opts = dict(beam_size=2, max_batch_size=3)
    r = fresh().translate_batch(sources, use_vmap=True, **base, **opts)
    q = tr.translate_batch(sources, **base, **opts)
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
    sets = [None] * len(sources)
    for g in range(0, len(order), 3):
        group = order[g:g + 3]
        for i in group:
            sets[i] = allowed([sources[j] for j in group], [])
    keep("groups", opts, None, r, q, sets)

    opts = dict(beam_size=2)
    r = [fresh().translate_batch([s], target_prefix=[[outside]], use_vmap=True, **base, **opts)[0] for s in sources]
    q = [tr.translate_batch([s], target_prefix=[[outside]], **base, **opts)[0] for s in sources]
    keep("prefix", opts, [[outside]] * len(sources), r, q, [allowed([s], [[outside]]) for s in sources])

    out = {"source": "tools/golden_translator_vmap.py, ctranslate2 " + ctranslate2.__version__,
           "model_dir": os.path.relpath(MODEL, ROOT), "max_decoding_length": MAX, "sources": sources, "runs": runs}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
