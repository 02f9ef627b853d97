#!/usr/bin/env python3
"""A tiny multilingual Argos Translate package, one whose metadata.json names
a target_prefix (the token a multilingual model, NLLB or M2M100, is told its
target language by: Argos Translate hands [[target_prefix]] to CTranslate2's
translate_batch for every sentence), and CTranslate2's answers for it:

  tests/data/tiny-random-argos-prefix/   tiny-random-argos's SentencePiece
      model and pieces (read from that package, not trained again) with two
      language tokens after them, "__de__" and "__fr__", in the shared
      vocabulary; seeded random weights (float16) of gen_tiny_argos.py's
      shape (</s> biased to end sooner); metadata.json: en -> de, target_prefix "__de__"
  tests/data/bart-golden/argos-prefix.json   per input: the pieces, and
      CTranslate2 4.x's hypotheses and scores for Argos Translate's search
      (beam 4, length_penalty 0.2, replace_unknowns, num_hypotheses 1 and
      2) and greedily, each with target_prefix [["__de__"]] (the hypotheses
      begin with it, as CTranslate2 returns them), at compute_type float32;
      "texts": each hypothesis without its prefix token as Argos Translate
      decodes pieces (decode_pieces, U+2581 and "_" as spaces, one leading
      space dropped); "argos_texts": what Argos Translate 1.11 itself returns,
      which decodes the prefix token with the rest ("__de__" becomes spaces
      and "de", so its test for the prefix at the text's start never holds
      and the language tag stays in the translation): recorded, not what
      encdec gives; "other": the same searches with "__fr__" as the prefix,
      to show that the prefix steers the decode; "server": Argos Translate's
      own call (its options, max_decoding_length 127: what encdec serve
      allows a model of 128 positions) on SERVER's texts, each text without
      the prefix (tests/server/test_libretranslate.py)

    .venv/bin/python tools/gen_tiny_argos_prefix.py
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_tiny_argos as ga  # noqa: E402

SRC = ga.OUT
OUT = ga.OUT + "-prefix"
GOLD = os.path.join(ga.ROOT, "tests", "data", "bart-golden", "argos-prefix.json")
LANGS = ["__de__", "__fr__"]
SERVER = ["The house is wonderful.", "The weather was cold, but the garden stayed green.",
          "We walked to the station while the children played."]


def searches(t, sp, prefix):
    cases = []
    for text in ga.INPUTS:
        pieces = sp.encode(text, out_type=str)
        case = {"text": text, "pieces": pieces}
        for name, kw in [("beam", dict(beam_size=4, num_hypotheses=1)),
                         ("beam2", dict(beam_size=4, num_hypotheses=2)),
                         ("greedy", dict(beam_size=1))]:
            r = t.translate_batch([pieces], target_prefix=[[prefix]], replace_unknowns=True, length_penalty=0.2,
                                  return_scores=True, max_decoding_length=24, **kw)[0]
            case[name] = {"hypotheses": r.hypotheses, "scores": r.scores,
                          "texts": [ga.argos_text(sp, h[1:]) for h in r.hypotheses],
                          "argos_texts": [argos_own(sp, h, prefix) for h in r.hypotheses]}
        cases.append(case)
    return cases


def server_cases(t, sp, prefix):
    out = []
    for text in SERVER:
        r = t.translate_batch([sp.encode(text, out_type=str)], target_prefix=[[prefix]], replace_unknowns=True,
                              max_batch_size=32, batch_type="tokens", beam_size=4, num_hypotheses=1,
                              length_penalty=0.2, return_scores=True, max_decoding_length=127)[0]
        out.append({"text": text, "hypothesis": r.hypotheses[0], "translation": ga.argos_text(sp, r.hypotheses[0][1:])})
    return out


def argos_own(sp, tokens, prefix):
    """Argos Translate 1.11's translate: the pieces decoded (the prefix token
    too), the prefix cut where the text starts with it, one leading space dropped."""
    v = sp.decode_pieces(tokens).replace("\u2581", " ").replace("_", " ")
    if v.startswith(prefix):
        v = v[len(prefix):]
    return v[1:] if v.startswith(" ") else v


def main():
    import ctranslate2
    import sentencepiece as spm

    with open(os.path.join(SRC, "sentencepiece.model"), "rb") as f:
        blob = f.read()
    sp = spm.SentencePieceProcessor(model_proto=blob)
    with open(os.path.join(SRC, "model", "shared_vocabulary.json"), encoding="utf-8") as f:
        vocab = json.load(f) + LANGS
    spec = ga.build_spec(len(vocab), np.random.default_rng(ga.SEED + 7))
    spec.decoder.projection.bias[3] = 3.5   # </s> sooner: some hypotheses end before the limit
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.validate()
    spec.optimize(quantization="float16")
    ga.write_package(OUT, spec, blob)
    meta_path = os.path.join(OUT, "metadata.json")
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    meta["target_prefix"] = LANGS[0]
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
    t = ctranslate2.Translator(os.path.join(OUT, "model"), compute_type="float32")
    with open(GOLD, "w", encoding="utf-8") as f:
        json.dump({"ctranslate2": ctranslate2.__version__, "target_prefix": LANGS[0], "max_decoding_length": 24,
                   "cases": searches(t, sp, LANGS[0]), "other": searches(t, sp, LANGS[1]),
                   "server": server_cases(t, sp, LANGS[0])}, f,
                  ensure_ascii=False, indent=1)
    print("wrote %s and %s" % (OUT, GOLD))


if __name__ == "__main__":
    main()
