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
  tests/data/tiny-random-argos-ct2v4/   as CTranslate2 1.6 to 2.11 wrote
      a conversion (2020-2022): binary version 4, TransformerSpec revision
      3 (num_heads, pre_norm, activation and the alignment at the root, the
      encoder's embeddings unnumbered, each side's multiply_by_sqrt_depth,
      with_source_bos / with_target_bos flags), no config.json,
      shared_vocabulary.txt; other weights, int8
  tests/data/tiny-random-argos-ct2v2/   binary version 2 (item sizes, not
      dtype ids; no aliases: the shared embeddings and positions stored
      once per name) of a "TransformerBig" spec revision 2 (no attributes
      at all: 16 heads by the spec's name, pre-norm, ReLU); other weights
  tests/data/tiny-random-ct2-affixes/   a CTranslate2 directory (no package)
      whose config.json adds <s> and </s> to the source (add_source_bos,
      add_source_eos: ct2-marian-converter sets the second); "affixes" in
      argos.json: CTranslate2's translate_batch (beam 4, attention,
      replace_unknowns), its max_input_length cuts, and score_batch with a
      short max_input_length
  tests/data/tiny-random-ct2-marian/   a CTranslate2 directory as
      ct2-marian-converter writes one (post-norm, Swish, the decoder started
      from a zero embedding, add_source_eos) with separate source and
      target vocabularies (source_vocabulary.json, target_vocabulary.json:
      other orders and sizes); "marian" in argos.json: CTranslate2's
      translate_batch (beam 4 and greedy, attention) and score_batch
  The two older layouts are written here (write_old_model_bin: the layout
  CTranslate2's model.cc reads for those versions); CTranslate2 4.x loads
  them through its compatibility rules, and its answers are the goldens.
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
OUT_V4 = OUT + "-ct2v4"
OUT_V2 = OUT + "-ct2v2"
OUT_AFFIX = os.path.join(ROOT, "tests", "data", "tiny-random-ct2-affixes")
OUT_MARIAN = os.path.join(ROOT, "tests", "data", "tiny-random-ct2-marian")
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


def _init(rng):
    """Seeded initialisers: vec(n, s), norm(layer_norm_spec), lin(linear_spec, out, in)."""
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

    return vec, norm, lin


def _layers(spec, norm, lin):
    """Every encoder and decoder layer's weights."""
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


def build_spec(V, rng, legacy=False):
    """legacy: as older conversions are, no position table stored (CTranslate2
    computes its sinusoids) and no scale_embeddings flag (it means sqrt(d))."""
    from ctranslate2.specs import common_spec, transformer_spec

    spec = transformer_spec.TransformerSpec.from_config(LAYERS, HEADS, pre_norm=True,
                                                        activation=common_spec.Activation.RELU)

    vec, norm, lin = _init(rng)
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
    _layers(spec, norm, lin)
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


# Attributes the TransformerSpec revisions before 5 did not scope (they sat
# at the root, or were not there at all) and the ones that came later.
SCOPED = ("activation", "alibi", "alibi_use_positive_positions", "alignment_heads", "alignment_layer",
          "embeddings_merge", "multi_query_attention", "num_heads", "pre_norm", "scale_alibi",
          "scale_embeddings", "start_from_zero_embedding")


def old_variables(spec, revision):
    """spec's variables (name -> array, or str for an alias) as a revision 3
    (or 2: no attributes) TransformerSpec held them."""
    out = {}
    for name, v in spec.variables(ordered=True):
        if name.split("/")[-1] in SCOPED and name.count("/") == 1:
            continue
        name = name.replace("encoder/embeddings_0/", "encoder/embeddings/")
        out[name] = v.replace("encoder/embeddings_0/", "encoder/embeddings/") if isinstance(v, str) else v.numpy()
    if revision >= 3:
        out.update({"num_heads": np.int8(HEADS), "pre_norm": np.int8(1), "activation": np.int8(0),
                    "alignment_layer": np.int16(-1), "alignment_heads": np.int16(1),
                    "with_relative_position": np.int8(0), "with_source_bos": np.int8(0),
                    "with_source_eos": np.int8(0), "with_target_bos": np.int8(1),
                    "encoder/embeddings/multiply_by_sqrt_depth": np.int8(1),
                    "decoder/embeddings/multiply_by_sqrt_depth": np.int8(1)})
    return out


def write_old_model_bin(path, variables, version, spec_name, revision):
    """model.bin in binary version 2 to 4, as CTranslate2's model.cc reads
    them: a spec name and revision (from 2); aliases (from 3; before, each
    alias stored as a copy of its target); a dtype id and a byte count per
    variable (from 4; before, the item size and the element count)."""
    import struct

    def string(b):
        b = b.encode()
        return struct.pack("<H", len(b) + 1) + b + b"\0"

    resolved = {}
    for name, v in variables.items():
        if isinstance(v, str) and version < 3:
            resolved[name] = variables[v]
            if v + "_scale" in variables:
                resolved[name + "_scale"] = variables[v + "_scale"]
        else:
            resolved[name] = v
    arrays = sorted((n, np.asarray(v)) for n, v in resolved.items() if not isinstance(v, str))
    aliases = sorted((n, v) for n, v in resolved.items() if isinstance(v, str))
    ids = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
           np.dtype(np.float16): 4}
    out = struct.pack("<I", version)
    if version >= 2:
        out += string(spec_name) + struct.pack("<I", revision)
    out += struct.pack("<I", len(arrays))
    for name, a in arrays:
        out += string(name) + struct.pack("<B", a.ndim) + b"".join(struct.pack("<I", d) for d in a.shape)
        if version >= 4:
            out += struct.pack("<BI", ids[a.dtype], a.nbytes)
        else:
            assert a.dtype != np.float16, "float16 has no item size of its own before version 4"
            out += struct.pack("<BI", a.dtype.itemsize, a.size)
        out += a.tobytes()
    if version >= 3:
        out += struct.pack("<I", len(aliases))
        for alias, target in aliases:
            out += string(alias) + string(target)
    with open(path, "wb") as f:
        f.write(out)


def write_old_package(out, spec, blob, vocab, version, spec_name, revision):
    write_package(out, spec, blob)
    model = os.path.join(out, "model")
    for f in os.listdir(model):
        os.remove(os.path.join(model, f))
    write_old_model_bin(os.path.join(model, "model.bin"), old_variables(spec, revision), version, spec_name,
                        revision)
    with open(os.path.join(model, "shared_vocabulary.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")


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


def build_marian_spec(Vs, Vt, rng):
    """A Marian-native conversion's shape: post-norm, Swish, a zero start,
    the encoder's embeddings its own (another vocabulary), the decoder's
    tied to the output projection."""
    from ctranslate2.specs import common_spec, transformer_spec

    spec = transformer_spec.TransformerSpec.from_config(LAYERS, HEADS, pre_norm=False,
                                                        activation=common_spec.Activation.SWISH)

    vec, norm, lin = _init(rng)
    pe = sinusoids(POSITIONS, D)
    for side in (spec.encoder, spec.decoder):
        side.position_encodings.encodings = pe
    spec.encoder.embeddings[0].weight = (rng.standard_normal((Vs, D)) * 0.2).astype(np.float32)
    emb = (rng.standard_normal((Vt, D)) * 0.2).astype(np.float32)
    spec.decoder.embeddings.weight = emb
    spec.decoder.projection.weight = emb
    bias = vec(Vt, 0.05)
    bias[0] = 1.0   # </s> after a while
    spec.decoder.projection.bias = bias
    spec.decoder.start_from_zero_embedding = True
    _layers(spec, norm, lin)
    spec.config.add_source_eos = True
    return spec


def marian_cases(out, sp, src_vocab):
    """CTranslate2's answers on the Marian-shaped model with its two vocabularies."""
    import ctranslate2

    t = ctranslate2.Translator(out, compute_type="float32")
    cases = []
    for text in INPUTS:
        pieces = sp.encode(text, out_type=str)
        case = {"pieces": pieces}
        for name, kw in [("beam", dict(beam_size=4)), ("greedy", dict(beam_size=1))]:
            r = t.translate_batch([pieces], return_scores=True, return_attention=True, max_decoding_length=12,
                                  **kw)[0]
            case[name] = {"hypotheses": r.hypotheses, "scores": r.scores,
                          "attention": [[list(map(float, row)) for row in a] for a in r.attention]}
        s = t.score_batch([pieces], [case["beam"]["hypotheses"][0]])[0]
        case["score"] = {"tokens": s.tokens, "log_probs": s.log_probs}
        cases.append(case)
    return cases


def affix_cases(out, sp):
    """CTranslate2's answers on the model that adds <s> and </s> to its inputs."""
    import ctranslate2

    t = ctranslate2.Translator(out, compute_type="float32")
    cases = []
    for text in INPUTS:
        pieces = sp.encode(text, out_type=str)
        case = {"pieces": pieces}
        for name, kw in [("beam", dict(beam_size=4)), ("greedy", dict(beam_size=1)),
                         ("cut", dict(beam_size=4, max_input_length=5))]:
            r = t.translate_batch([pieces], return_scores=True, return_attention=True, replace_unknowns=True,
                                  max_decoding_length=12, **kw)[0]
            case[name] = {"hypotheses": r.hypotheses, "scores": r.scores,
                          "attention": [[list(map(float, row)) for row in a] for a in r.attention]}
        hyp = case["beam"]["hypotheses"][0]
        for n in (0, 4, len(hyp)):
            s = t.score_batch([pieces], [hyp], max_input_length=n)[0]
            case["score_%d" % n] = {"max_input_length": n, "tokens": s.tokens, "log_probs": s.log_probs}
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
    for seed, out, version, name, revision in ((SEED + 2, OUT_V4, 4, "TransformerSpec", 3),
                                                (SEED + 4, OUT_V2, 2, "TransformerBig", 2)):
        spec = build_spec(len(vocab), np.random.default_rng(seed), legacy=True)
        spec.register_source_vocabulary(vocab)
        spec.register_target_vocabulary(vocab)
        spec.validate()
        spec.optimize(quantization="int8")
        write_old_package(out, spec, blob, vocab, version, name, revision)
    spec = build_spec(len(vocab), np.random.default_rng(SEED + 5))
    spec.register_source_vocabulary(vocab)
    spec.register_target_vocabulary(vocab)
    spec.config.add_source_bos = True
    spec.config.add_source_eos = True
    spec.validate()
    spec.optimize(quantization="float16")
    shutil.rmtree(OUT_AFFIX, ignore_errors=True)
    os.makedirs(OUT_AFFIX)
    spec.save(OUT_AFFIX)
    # Marian's vocabularies: </s> and <unk> first, no <s>; the source's pieces
    # in reverse order with every 7th left out, the target's sorted
    pieces = vocab[4:]
    src_vocab = ["</s>", "<unk>"] + [q for k, q in enumerate(reversed(pieces)) if k % 7 != 3]
    tgt_vocab = ["</s>", "<unk>"] + pieces
    spec = build_marian_spec(len(src_vocab), len(tgt_vocab), np.random.default_rng(SEED + 6))
    spec.register_source_vocabulary(src_vocab)
    spec.register_target_vocabulary(tgt_vocab)
    spec.validate()
    spec.optimize(quantization="float16")
    shutil.rmtree(OUT_MARIAN, ignore_errors=True)
    os.makedirs(OUT_MARIAN)
    spec.save(OUT_MARIAN)
    cases = searches(OUT, sp)
    legacy = searches(OUT_LEGACY, sp)
    old = {"ct2v4": searches(OUT_V4, sp), "ct2v2": searches(OUT_V2, sp)}
    os.makedirs(os.path.dirname(GOLD), exist_ok=True)
    with open(GOLD, "w", encoding="utf-8") as f:
        decodes = [["_", "\u2581The"], ["\u2581wh", "_", "x", "!"], ["\u2581The", "\u2581"], ["\u2581", "\u2581A", "_"]]
        json.dump({"decodes": [[d, argos_text(sp, d)] for d in decodes],
                   "ctranslate2": ctranslate2.__version__, "vocab_size": len(vocab),
                   "left_out": sorted(set(p for c in cases for p in c["pieces"] if p not in vocab)),
                   "max_decoding_length": 24, "cases": cases, "legacy_cases": legacy,
                   "ct2v4_cases": old["ct2v4"], "ct2v2_cases": old["ct2v2"],
                   "affixes": affix_cases(OUT_AFFIX, sp), "marian": marian_cases(OUT_MARIAN, sp, src_vocab)}, f,
                  ensure_ascii=False, indent=1)
    print("wrote %s, %s, %s, %s and %s" % (OUT, OUT_LEGACY, OUT_V4, OUT_V2, GOLD))


if __name__ == "__main__":
    main()
