#!/usr/bin/env python3
"""A tiny Argos Translate package tokenized by bpe.model (Moses + subword-nmt
BPE, Argos Translate's BPETokenizer), and what Argos Translate's pipeline
makes of it:

  tests/data/tiny-random-argos-bpe/   metadata.json (en -> de), bpe.model
      (version 0.2 codes learned here from golden_bart's English and German
      corpora as Argos Translate's tokenizer splits them: Moses'
      normaliser and tokenizer, then characters; the most frequent pair
      merged 260 times), model/ (gen_tiny_argos.py's OpenNMT-py-style
      TransformerSpec, seeded random weights, int8) whose shared vocabulary
      is <unk> <blank> <s> </s> and the BPE units of those corpora, a few
      left out so that they are <unk>
  tests/data/bart-golden/argos-bpe.json   per input: the tokens Argos
      Translate 1.11's BPETokenizer.encode gives (sacremoses 0.1.1's
      MosesPunctNormalizer and MosesTokenizer for from_code, its apply_bpe),
      CTranslate2's hypotheses and scores for Argos Translate's search (beam
      4, length_penalty 0.2, replace_unknowns; one and two hypotheses) and
      greedily, at compute_type float32, and each hypothesis' text as
      BPETokenizer.decode gives it ("@@ " joined, sacremoses'
      MosesDetokenizer for to_code)

Argos Translate's and sacremoses' modules come from their wheels
(tools/oracle_wheel.py: argostranslate 1.11.0's tokenizer and apply_bpe,
sacremoses 0.1.1 with the joblib and tqdm wheels it imports); CTranslate2 and
sentencepiece from .venv.

    .venv/bin/python tools/gen_tiny_argos_bpe.py
"""
import collections
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tiny_argos as ga  # noqa: E402
import golden_bart as gb  # noqa: E402
from golden_bpe_nmt import learn  # noqa: E402
from oracle_wheel import wheel_package  # noqa: E402

OUT = ga.OUT + "-bpe"
GOLD = os.path.join(ga.ROOT, "tests", "data", "bart-golden", "argos-bpe.json")
SEED = ga.SEED + 11
MERGES = 260
INPUTS = ga.INPUTS + [
    "It's Mr. Smith's \u201chouse\u201d & garden...",
    "The children don't play -- they walk (slowly)!",
]


def main():
    import ctranslate2

    wheel_package("sacremoses==0.1.1", deps=("joblib==1.4.2", "tqdm==4.67.1"))
    wheel_package("argostranslate==1.11.0")
    from argostranslate.tokenizer import BPETokenizer
    from sacremoses.normalize import MosesPunctNormalizer
    from sacremoses.tokenize import MosesTokenizer

    words = collections.Counter()
    for lines, lang in ((gb.CORPUS_EN, "en"), (gb.CORPUS_DE, "de")):
        norm, tok = MosesPunctNormalizer(lang), MosesTokenizer(lang)
        for line in lines:
            if line.strip():
                words.update(tok.tokenize(norm.normalize(line)))
    codes = "#version: 0.2\n" + "".join("%s %s\n" % m for m in learn(words, MERGES, 2))

    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(os.path.join(OUT, "model"))
    with open(os.path.join(OUT, "bpe.model"), "w", encoding="utf-8") as f:
        f.write(codes)
    meta = {"package_version": "1.0", "argos_version": "1.9", "from_code": "en", "from_name": "English",
            "to_code": "de", "to_name": "German", "type": "translate"}
    with open(os.path.join(OUT, "metadata.json"), "w") as f:
        json.dump(meta, f, indent=2)
    src, tgt = BPETokenizer(os.path.join(OUT, "bpe.model"), "en", "de"), BPETokenizer(os.path.join(OUT, "bpe.model"), "de", "en")
    units = set()
    for lines, tk in ((gb.CORPUS_EN, src), (gb.CORPUS_DE, tgt)):
        for line in lines:
            if line.strip():
                units.update(tk.encode(line))
    units = sorted(units)
    left = set(units[30::29][:5])   # the vocabulary lacks these: <unk>
    vocab = ["<unk>", "<blank>", "<s>", "</s>"] + [u for u in units if u not in left]

    spec = ga.build_spec(len(vocab), np.random.default_rng(SEED))
    spec.decoder.projection.bias[3] = 2.2   # </s> sooner: some hypotheses end before the limit
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    spec.optimize(quantization="int8")
    spec.save(os.path.join(OUT, "model"))

    t = ctranslate2.Translator(os.path.join(OUT, "model"), compute_type="float32")
    cases = []
    for text in INPUTS:
        tokens = src.encode(text)
        case = {"text": text, "tokens": tokens}
        for name, kw in [("beam", dict(beam_size=4, num_hypotheses=1)),
                         ("beam2", dict(beam_size=4, num_hypotheses=2)),
                         ("greedy", dict(beam_size=1))]:
            r = t.translate_batch([tokens], replace_unknowns=True, length_penalty=0.2, return_scores=True,
                                  max_decoding_length=24, **kw)[0]
            case[name] = {"hypotheses": r.hypotheses, "scores": r.scores,
                          "texts": [src.decode(h) for h in r.hypotheses]}
        cases.append(case)
    # decodes: unit lists (joins across "@@", escapes, quotes, an <unk> left in) and their texts
    decodes = [["Hel@@", "lo", ",", "world", "!"], ["&quot;", "Hal@@", "lo", "&quot;", "&amp;", "x"],
               ["it", "&apos;s", "(", "a", ")", "..."], ["a@@", "@@", "b"], ["end@@"], ["Hal@@", "<unk>", "lo", "."]]
    with open(GOLD, "w", encoding="utf-8") as f:
        json.dump({"ctranslate2": ctranslate2.__version__, "vocab_size": len(vocab), "left_out": sorted(left),
                   "max_decoding_length": 24, "cases": cases,
                   "decodes": [[d, src.decode(d)] for d in decodes]}, f, ensure_ascii=False, indent=1)
    print("wrote %s and %s (%d tokens, %d codes)" % (OUT, GOLD, len(vocab), MERGES))


if __name__ == "__main__":
    main()
