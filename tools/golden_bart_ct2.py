#!/usr/bin/env python3
"""CTranslate2 directories of seeded random BART-family models, converted by
CTranslate2's own converter, and transformers' generations of the same
weights, so that a CTranslate2 directory can be held to the Hugging Face
checkpoint it came from:

  tests/data/tiny-random-{marian,m2m100,bart}-ct2/   model.bin (bfloat16),
      config.json, shared_vocabulary.json (ct2-transformers-converter's
      TransformersConverter), and the tokenizer files as links to the
      Hugging Face test directory's (as --copy_files copies them)
  tests/data/bart-golden/ct2.json   per model: the inputs (as tokenized by
      transformers), transformers' greedy and beam tokens and texts, and
      CTranslate2's own greedy hypotheses (Translator.translate_batch), which
      the script requires to equal transformers' greedy tokens

The models are golden_bart.py's variants with two changes real checkpoints
share and CTranslate2's converter assumes: the decoder has the encoder's
head count (the converter writes one), and Marian's <pad> row is zero (its
decoder starts from a zero vector). Weights are rounded to bfloat16 first,
so that both libraries compute from the very values stored. The Hugging
Face checkpoints themselves are not kept (a temporary directory).

ctranslate2 4.8.5's converter calls from_pretrained(dtype=...), which
transformers 4.46 does not take (torch_dtype is given instead); the random
models' vocabularies run past their tokenizers (the rest is spelled as
placeholders: the converter requires a token per row); BART's loader reads
normalize_before, which real BART configs carry (false).

    .venv/bin/python tools/golden_bart_ct2.py
"""
import json
import os
import shutil
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_bart as gb  # noqa: E402

import torch  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data")
MAX = gb.MAX_NEW
TOKENIZER_FILES = ["source.spm", "target.spm", "vocab.json", "tokenizer_config.json", "merges.txt",
                   "special_tokens_map.json", "sentencepiece.bpe.model", "added_tokens.json"]
LANGS = {"m2m100": ("fr", "de")}
BEAM = {"num_beams": 4, "num_return_sequences": 2, "length_penalty": 1.0, "early_stopping": True}


def patch_converter():
    import ctranslate2.converters.transformers as T

    if getattr(T, "_encdec_patched", False):
        return T

    def load_model(self, model_class, path, **kw):
        if "dtype" in kw:
            kw["torch_dtype"] = kw.pop("dtype")
        model = model_class.from_pretrained(path, **kw)
        if not hasattr(model.config, "normalize_before"):
            model.config.normalize_before = False
        return model

    register = T.BartLoader.set_vocabulary

    def padded(self, spec, tokens):
        rows = spec.decoder.embeddings.weight.shape[0]
        register(self, spec, tokens + ["<placeholder_%d>" % i for i in range(rows - len(tokens))])

    T.TransformersConverter.load_model = load_model
    T.BartLoader.set_vocabulary = padded
    T._encdec_patched = True
    return T


def hf_model(variant, tmp):
    """The variant with equal head counts (and Marian's <pad> row zero), its
    weights rounded to bfloat16, saved with the test tokenizer into tmp."""
    gb.COMMON["decoder_attention_heads"] = gb.COMMON["encoder_attention_heads"]
    config, model = gb.build(variant, gb.SEEDS[variant], torch.float32)
    with torch.no_grad():
        for p in list(model.parameters()) + [b for b in model.buffers() if b.is_floating_point()]:
            p.copy_(p.to(torch.bfloat16).to(torch.float32))   # M2M100's sinusoids are a buffer
        if variant == "marian":
            model.get_input_embeddings().weight[gb.special_ids(variant)["pad"]].zero_()
    model.save_pretrained(tmp, safe_serialization=True)
    src = os.path.join(DATA, "tiny-random-" + variant)
    files = [f for f in TOKENIZER_FILES if os.path.exists(os.path.join(src, f))]
    for f in files:
        shutil.copy(os.path.join(src, f), tmp)
    return model, files


def golden(variant):
    import ctranslate2
    from transformers import AutoTokenizer

    T = patch_converter()
    out = os.path.join(DATA, "tiny-random-%s-ct2" % variant)
    with tempfile.TemporaryDirectory() as tmp:
        model, files = hf_model(variant, tmp)
        T.TransformersConverter(tmp, copy_files=files).convert(out, quantization="bfloat16", force=True)
        tok = AutoTokenizer.from_pretrained(tmp, use_fast=variant == "bart")
    for f in files:   # one copy in git: links to the Hugging Face test directory's
        os.remove(os.path.join(out, f))
        os.symlink(os.path.join("..", "tiny-random-" + variant, f), os.path.join(out, f))
    ids = gb.special_ids(variant)
    forced, prefix = None, None
    if variant in LANGS:
        tok.src_lang = LANGS[variant][0]
        forced = tok.get_lang_id(LANGS[variant][1])
        prefix = [[tok.lang_code_to_token[LANGS[variant][1]]]] * len(gb.MARIAN_TEXTS)
    enc = tok(gb.MARIAN_TEXTS, return_tensors="pt", padding=True)
    x, mask = enc["input_ids"], enc["attention_mask"]
    input_ids = [[int(t) for t, m in zip(r, mr) if m] for r, mr in zip(x, mask)]
    g = gb.greedy(model, x, mask, ids, forced)
    bt, bs = gb.beam(model, x, mask, ids, BEAM, forced)
    dec = lambda seqs: [tok.decode([t for t in s if t < len(tok)], skip_special_tokens=True) for s in seqs]
    # CTranslate2 on its directory: the same greedy tokens (</s> left out)
    tr = ctranslate2.Translator(out, device="cpu", compute_type="float32")
    source = [tok.convert_ids_to_tokens(s) for s in input_ids]
    res = tr.translate_batch(source, target_prefix=prefix, beam_size=1, max_decoding_length=MAX)
    vocab = json.load(open(os.path.join(out, "shared_vocabulary.json"), encoding="utf-8"))
    index = {t: i for i, t in reversed(list(enumerate(vocab)))}
    ct2 = [[index[t] for t in r.hypotheses[0]] for r in res]
    want = [[t for t in s if t != ids["eos"]] for s in g]
    print(f"{variant}: {os.path.relpath(out, ROOT)}; greedy {g}; CTranslate2 {ct2}")
    assert ct2 == want, (variant, ct2, want)
    return {"model_dir": os.path.relpath(out, ROOT), "inputs": gb.MARIAN_TEXTS, "input_ids": input_ids,
            "langs": LANGS.get(variant), "max_new_tokens": MAX, "eos": ids["eos"],
            "greedy": {"tokens": g, "text": dec(g)}, "ct2_greedy": ct2,
            "beam": dict(BEAM, tokens=bt, scores=bs, text=dec(bt))}


def main():
    warnings.filterwarnings("ignore")
    doc = {"source": "tools/golden_bart_ct2.py, ctranslate2 %s, transformers %s" % (
        __import__("ctranslate2").__version__, __import__("transformers").__version__),
           "models": {v: golden(v) for v in ("marian", "m2m100", "bart")}}
    with open(os.path.join(DATA, "bart-golden", "ct2.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
