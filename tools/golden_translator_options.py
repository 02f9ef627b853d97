#!/usr/bin/env python3
"""Goldens for the search options of CTranslate2's translate_batch that
encdec's Translator takes besides the plain beam and greedy searches:
patience, length_penalty 0 (CTranslate2's early exit), end_token,
return_alternatives with min_alternative_expansion_prob, prefix_bias_beta
and coverage_penalty. CTranslate2 4.8's Translator itself runs each one on
the CTranslate2 directory of tools/golden_bart_ct2.py
(tests/data/tiny-random-marian-ct2), one example a call.

A random model seldom ends a sequence, and its many near-equal tokens make
ties a float32 engine could break otherwise: every case lets the model
generate only </s> and a few seeded tokens (suppress_sequences of every
other one; in encdec the same list as suppress_tokens), so that
hypotheses end at various lengths and their scores stand apart.

  tests/data/bart-golden/translator-options.json
    allowed   the tokens a case may generate
    texts     the sources as text (encdec: target language de)
    sources   their token lists as sentencepiece's source.spm segments
              them (>>de<< first, </s> last; every piece in the vocabulary)
    runs      name, options (translate_batch's keyword arguments but
              suppress_sequences and the target prefix), prefix (per source
              or null), results: per source the hypotheses (tokens, as
              translate_batch returns them) and their scores

A result is kept only where its scores (those compared) are 1e-3 or more
apart and none of its hypotheses reached the length limit before a
search could end it (a run is for what the option changes, not for which
of two near-equal candidates a float32 product prefers); a run keeps at
least 5 of its 24 sources. Each run is also run without its option, and
the script asserts the option changed some results (else it tests
nothing).

Nothing here reads the project's sources. Run from the repository root:

    .venv/bin/python tools/golden_translator_options.py
"""
import json
import os
import random

import ctranslate2
import sentencepiece as spm

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "tests", "data", "tiny-random-marian-ct2")
OUT = os.path.join(ROOT, "tests", "data", "bart-golden", "translator-options.json")
MAX = 24
WORDS = ["the", "cat", "was", "yes", "estate", "Hello", "world", "big", "and", "of", "from", "The",
         "which", "sun", "day", "water", "we", "are", "read", "speak", "house", "green", "time"]
N_SOURCES = 24
GAP = 1e-3


def runs(allowed):
    """(name, options, prefix kind, the option's off value)"""
    a, b = allowed[4], allowed[6]   # tokens this model ends on often enough
    return [
        ("patience-2", dict(beam_size=3, patience=2.0, num_hypotheses=6, length_penalty=1.0), None,
         dict(patience=1.0, num_hypotheses=3)),
        ("patience-0.5", dict(beam_size=4, patience=0.5, num_hypotheses=2, length_penalty=1.0), None,
         dict(patience=1.0)),
        ("length-penalty-0", dict(beam_size=4, num_hypotheses=2, length_penalty=0.0), None,
         dict(length_penalty=0.001)),
        ("end-token", dict(beam_size=4, num_hypotheses=2, end_token=a, return_end_token=True), None,
         dict(end_token=None)),
        ("end-tokens-greedy", dict(beam_size=1, end_token=[a, b], return_end_token=True), None,
         dict(end_token=None)),
        ("end-tokens-beam", dict(beam_size=3, num_hypotheses=2, end_token=[a, "</s>"]), None,
         dict(end_token=None)),
        ("alternatives-greedy", dict(beam_size=1, num_hypotheses=4, return_alternatives=True), "one",
         dict(return_alternatives=False, num_hypotheses=1)),
        ("alternatives-beam", dict(beam_size=2, num_hypotheses=3, return_alternatives=True,
                                   min_alternative_expansion_prob=0.05), "one",
         dict(return_alternatives=False, num_hypotheses=2, min_alternative_expansion_prob=0)),
        ("alternatives-noprefix", dict(beam_size=1, num_hypotheses=3, return_alternatives=True), None,
         dict(return_alternatives=False, num_hypotheses=1)),
        # composed (see alternatives_composed): CTranslate2's own is wrong here
        ("alternatives-prefix2", dict(beam_size=1, num_hypotheses=3, return_alternatives=True), "two",
         dict(return_alternatives=False, num_hypotheses=1)),
        ("prefix-bias", dict(beam_size=3, num_hypotheses=2, prefix_bias_beta=0.6), "three",
         dict(prefix_bias_beta=0.0)),
        ("prefix-bias-greedy", dict(beam_size=1, prefix_bias_beta=0.3), "two",
         dict(prefix_bias_beta=0.0)),
        ("coverage", dict(beam_size=4, num_hypotheses=3, coverage_penalty=0.4), None,
         dict(coverage_penalty=0.0)),
        # (return_attention: CTranslate2 4.8.5's greedy search crashes on a
        # coverage penalty with return_scores without it)
        ("coverage-greedy", dict(beam_size=1, coverage_penalty=0.3, return_attention=True), None,
         dict(coverage_penalty=0.0)),
    ]


def alternatives_composed(tr, src, prefix, base, opts):
    """return_alternatives after a target prefix of two tokens or more, as
    CTranslate2 defines it (decode_alternatives: the num_hypotheses most
    likely tokens after the prefix, </s> banned; each continued by a greedy
    search; the score the token's log-prob plus the continuation's log-probs
    over its length) from CTranslate2's own plain searches, which force the
    prefix a token a step: the distribution at the first free position
    (return_logits_vocab, the suppressions applied), then translate_batch of
    each alternative's prefix (its score the sum over the whole length: the
    prefix's tokens count 0). CTranslate2 4.8.5's return_alternatives reads
    the prefix in one pass there and its continuations' log-probs differ
    from the model's (transformers', and its own translate_batch's, which
    agree); with no prefix or one token it agrees, and those runs are its
    own."""
    import math
    import numpy
    n = opts["num_hypotheses"]
    first = tr.translate_batch([src], target_prefix=[prefix], beam_size=1,
                               **{**base, "max_decoding_length": len(prefix) + 1},
                               return_logits_vocab=True)[0]
    row = [float(x) for x in numpy.array(first.logits[0][len(prefix)])]
    row[0] = float("-inf")   # </s> (id 0): an alternative goes on
    mx = max(row)
    lse = mx + math.log(sum(math.exp(x - mx) for x in row if x > float("-inf")))
    best = sorted(range(len(row)), key=lambda v: (-row[v], v))[:n]
    vocab = json.load(open(os.path.join(MODEL, "shared_vocabulary.json"), encoding="utf-8"))
    hyps, scores = [], []
    for v in best:
        lp = row[v] - lse
        r = tr.translate_batch([src], target_prefix=[prefix + [vocab[v]]], beam_size=1, **base)[0]
        h = r.hypotheses[0]
        total = len(h) + 1   # </s> counted (length_penalty 1)
        cont = total - len(prefix) - 1
        s = r.scores[0] * total
        hyps.append(h)
        scores.append(lp + (s / cont if cont else 0.0))

    class R:
        pass
    out = R()
    out.hypotheses, out.scores = hyps, scores
    return out


def separated(scores):
    s = sorted(scores, reverse=True)
    return all(x - y >= GAP for x, y in zip(s, s[1:]))


def main():
    vocab = json.load(open(os.path.join(MODEL, "shared_vocabulary.json"), encoding="utf-8"))
    tr = ctranslate2.Translator(MODEL, device="cpu", compute_type="float32")
    rng = random.Random(20261204)
    normal = [t for t in vocab[3:] if not t.startswith(">>") and not t.startswith("<")]
    allowed = ["</s>"] + rng.sample(normal, 7)
    suppress = [[t] for t in vocab if t not in allowed]
    sp = spm.SentencePieceProcessor(model_file=os.path.join(MODEL, "source.spm"))
    texts, sources = [], []
    while len(texts) < N_SOURCES:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
        pieces = sp.encode(text, out_type=str)
        if all(p in vocab for p in pieces) and text not in texts:
            texts.append(text)
            sources.append([">>de<<"] + pieces + ["</s>"])
    prefixes = {"one": lambda: allowed[1:2], "two": lambda: [allowed[4], allowed[1]],
                "three": lambda: [allowed[5], allowed[6], allowed[4]]}
    out_runs = []
    for name, opts, pk, off in runs(allowed):
        base = dict(max_decoding_length=MAX, suppress_sequences=suppress, return_scores=True)
        prefix = [prefixes[pk]() for _ in sources] if pk else None
        kept, changed = [], 0
        for i, src in enumerate(sources):
            pre = [prefix[i]] if prefix else None
            if name == "alternatives-prefix2":
                r = alternatives_composed(tr, src, pre[0], base, opts)
            else:
                r = tr.translate_batch([src], target_prefix=pre, **base, **opts)[0]
            plain = tr.translate_batch([src], target_prefix=pre, **base, **{**opts, **off})[0]
            changed += r.hypotheses != plain.hypotheses or any(abs(x - y) > 1e-6 for x, y in zip(r.scores, plain.scores))
            ends = opts.get("end_token") or "</s>"
            ends = [ends] if isinstance(ends, str) else ends
            full = any(len(h) >= MAX and h[-1] not in ends for h in r.hypotheses)
            ok = separated(r.scores) and not full and r.hypotheses
            kept.append({"source": i, "hypotheses": r.hypotheses, "scores": r.scores} if ok else None)
        n = sum(k is not None for k in kept)
        print(f"{name}: {n} of {len(sources)} kept, the option changed {changed}")
        assert n >= 5 and changed >= 2, (name, n, changed)
        out_runs.append({"name": name, "options": opts, "prefix": prefix,
                         "results": [k for k in kept if k is not None]})
    out = {"source": "tools/golden_translator_options.py, ctranslate2 " + ctranslate2.__version__,
           "model_dir": os.path.relpath(MODEL, ROOT), "max_decoding_length": MAX, "allowed": allowed,
           "texts": texts, "sources": sources, "runs": out_runs}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
