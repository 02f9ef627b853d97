#!/usr/bin/env python3
"""A tiny Argos Translate package with seeded random weights, and what Argos
Translate's pipeline makes of it, so that encdec can be held to the packages
LibreTranslate and Argos users have installed:

  tests/data/tiny-random-argos/   as argos-train lays a package out:
      metadata.json (from_code en, to_code de), sentencepiece.model (one
      unigram model for both sides, trained here), model/ (a CTranslate2
      TransformerSpec as ct2-opennmt-py-converter writes an OpenNMT-py
      Transformer: pre-norm, ReLU, the position table stored, embeddings
      scaled by sqrt(d) (the spec's boolean), encoder, decoder and
      generator embeddings shared, a generator bias; int8 weights, as
      argos-train quantizes; config.json with <s> as the decoder's start;
      shared_vocabulary.json in OpenNMT's order: <unk> <blank> <s> </s>,
      then the pieces, a few of them left out so that they are <unk>)
  tests/data/tiny-random-argos-legacy/   the same as older conversions
      are (other weights, float16): no position table (CTranslate2
      computes its sinusoids) and no scale_embeddings flag (CTranslate2
      reads sqrt(d))
  tests/data/bart-golden/argos.json   per input: the pieces (the package's
      SentencePiece model), CTranslate2's hypotheses and scores for Argos
      Translate's search (beam 4, length_penalty 0.2, replace_unknowns,
      num_hypotheses 1 and 2) and a greedy one, at compute_type float32,
      and each hypothesis' text as Argos Translate decodes it
      (decode_pieces, U+2581 and "_" as spaces, one leading space dropped);
      "decodes": piece lists (underscores, spaces at the ends) and their texts

The spec is built with CTranslate2's own API (ctranslate2.specs), not
copied from any package; OpenNMT-py itself is not needed.

    .venv/bin/python tools/gen_tiny_argos.py
"""
import io
import json
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_bart as gb  # noqa: E402  (its English and German corpora)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "data", "tiny-random-argos")
OUT_LEGACY = OUT + "-legacy"
GOLD = os.path.join(ROOT, "tests", "data", "bart-golden", "argos.json")
SEED = 20261203
D, FFN, HEADS, LAYERS, POSITIONS = 64, 128, 4, 2, 128
LEFT_OUT = 6   # pieces the vocabulary lacks (every 23rd, from the 40th)

INPUTS = [
    "The house is wonderful.",
    "We walked to the station while the children played.",
    "A small cat sleeps on the warm windowsill every afternoon.",
    "Zebras quietly juggle xylophones_underwater!",
    "The weather was cold, but the garden stayed green.",
]


def train_spm():
    import sentencepiece as spm

    lines = [l for l in gb.CORPUS_EN + gb.CORPUS_DE if l.strip()]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 4), model_writer=buf, vocab_size=220,
                                   model_type="unigram", character_coverage=1.0, num_threads=1,
                                   unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                                   normalization_rule_name="identity", seed_sentencepiece_size=2000)
    return buf.getvalue()


def vocabulary(sp):
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
              if not (sp.is_control(i) or sp.is_unknown(i))]
    left = set(pieces[40::23][:LEFT_OUT])
    return ["<unk>", "<blank>", "<s>", "</s>"] + sorted(p for p in pieces if p not in left)


def sinusoids(n, d):
    """OpenNMT-py's position table: sines at even columns, cosines at odd."""
    pos = np.arange(n, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, d, 2, dtype=np.float32) * -(math.log(10000.0) / d))
    pe = np.zeros((n, d), dtype=np.float32)
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)
    return pe


def build_spec(V, rng, legacy=False):
    """legacy: as older conversions are, no position table stored (CTranslate2
    computes its sinusoids) and no scale_embeddings flag (it means sqrt(d))."""
    from ctranslate2.specs import common_spec, transformer_spec

    spec = transformer_spec.TransformerSpec.from_config(LAYERS, HEADS, pre_norm=True,
                                                        activation=common_spec.Activation.RELU)

    def mat(o, i):
        return (rng.standard_normal((o, i)) * 2.0 / math.sqrt(i)).astype(np.float32)

    def vec(n, s=0.1):
        return (rng.standard_normal(n) * s).astype(np.float32)

    def norm(ln):
        ln.gamma = (1 + vec(D)).astype(np.float32)
        ln.beta = vec(D)

    def lin(l, o, i):
        l.weight = mat(o, i)
        l.bias = vec(o)

    emb = (rng.standard_normal((V, D)) * 0.2).astype(np.float32)
    pe = sinusoids(POSITIONS, D)
    for side in (spec.encoder, spec.decoder):
        if not legacy:
            side.position_encodings.encodings = pe
        norm(side.layer_norm)
    spec.encoder.embeddings[0].weight = emb
    spec.decoder.embeddings.weight = emb
    spec.decoder.projection.weight = emb
    bias = vec(V, 0.05)
    bias[1:3] = -20.0   # <blank> and <s> never win (a trained model's would not either)
    bias[3] = 1.5       # </s> after a while
    spec.decoder.projection.bias = bias
    for l in spec.encoder.layer:
        norm(l.self_attention.layer_norm)
        lin(l.self_attention.linear[0], 3 * D, D)
        lin(l.self_attention.linear[1], D, D)
        norm(l.ffn.layer_norm)
        lin(l.ffn.linear_0, FFN, D)
        lin(l.ffn.linear_1, D, FFN)
    for l in spec.decoder.layer:
        norm(l.self_attention.layer_norm)
        lin(l.self_attention.linear[0], 3 * D, D)
        lin(l.self_attention.linear[1], D, D)
        norm(l.attention.layer_norm)
        lin(l.attention.linear[0], D, D)
        lin(l.attention.linear[1], 2 * D, D)
        lin(l.attention.linear[2], D, D)
        norm(l.ffn.layer_norm)
        lin(l.ffn.linear_0, FFN, D)
        lin(l.ffn.linear_1, D, FFN)
    spec.config.decoder_start_token = "<s>"
    if legacy:
        del spec.encoder.scale_embeddings
        del spec.decoder.scale_embeddings
    return spec


def argos_text(sp, tokens):
    """Argos Translate's SentencePieceTokenizer.decode, then its leading space dropped."""
    v = sp.decode_pieces(tokens).replace("\u2581", " ").replace("_", " ")
    return v[1:] if v.startswith(" ") else v


def write_package(out, spec, blob):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "model"))
    spec.save(os.path.join(out, "model"))
    with open(os.path.join(out, "sentencepiece.model"), "wb") as f:
        f.write(blob)
    meta = {"package_version": "1.0", "argos_version": "1.0", "from_code": "en", "from_name": "English",
            "to_code": "de", "to_name": "German", "type": "translate"}
    with open(os.path.join(out, "metadata.json"), "w") as f:
        json.dump(meta, f, indent=2)


def searches(out, sp):
    """CTranslate2's answers (Argos Translate's options) for INPUTS."""
    import ctranslate2

    t = ctranslate2.Translator(os.path.join(out, "model"), compute_type="float32")
    cases = []
    for text in INPUTS:
        pieces = sp.encode(text, out_type=str)
        case = {"text": text, "pieces": pieces}
        for name, kw in [("beam", dict(beam_size=4, num_hypotheses=1)),
                         ("beam2", dict(beam_size=4, num_hypotheses=2)),
                         ("greedy", dict(beam_size=1))]:
            r = t.translate_batch([pieces], replace_unknowns=True, length_penalty=0.2, return_scores=True,
                                  max_decoding_length=24, **kw)[0]
            case[name] = {"hypotheses": r.hypotheses, "scores": r.scores,
                          "texts": [argos_text(sp, h) for h in r.hypotheses]}
        cases.append(case)
    return cases


def main():
    import ctranslate2
    import sentencepiece as spm

    rng = np.random.default_rng(SEED)
    blob = train_spm()
    sp = spm.SentencePieceProcessor(model_proto=blob)
    vocab = vocabulary(sp)
    specs = [build_spec(len(vocab), rng), build_spec(len(vocab), np.random.default_rng(SEED + 1), legacy=True)]
    for spec, out, q in zip(specs, (OUT, OUT_LEGACY), ("int8", "float16")):
        spec.register_source_vocabulary(vocab)
        spec.register_target_vocabulary(vocab)
        spec.validate()
        spec.optimize(quantization=q)
        write_package(out, spec, blob)
    cases = searches(OUT, sp)
    legacy = searches(OUT_LEGACY, sp)
    os.makedirs(os.path.dirname(GOLD), exist_ok=True)
    with open(GOLD, "w", encoding="utf-8") as f:
        decodes = [["_", "\u2581The"], ["\u2581wh", "_", "x", "!"], ["\u2581The", "\u2581"], ["\u2581", "\u2581A", "_"]]
        json.dump({"decodes": [[d, argos_text(sp, d)] for d in decodes],
                   "ctranslate2": ctranslate2.__version__, "vocab_size": len(vocab),
                   "left_out": sorted(set(p for c in cases for p in c["pieces"] if p not in vocab)),
                   "max_decoding_length": 24, "cases": cases, "legacy_cases": legacy}, f,
                  ensure_ascii=False, indent=1)
    print("wrote %s, %s and %s" % (OUT, OUT_LEGACY, GOLD))


if __name__ == "__main__":
    main()
