#!/usr/bin/env python3
"""Writes Whisper tiny.en or base as a Hugging Face directory with float32 weights, the form
the hub's openai/whisper-* repositories have (model.safetensors in f32), from the
CTranslate2 float16 models this project can fetch (scripts/fetch-model.sh). For benchmarks:
on f32-stored weights `--compute f32` reads 4 bytes per weight and bf16 / int8 modes read
2 / 1; and for peers that convert from Hugging Face directories (whisper.cpp's
models/convert-h5-to-ggml.py reads model.safetensors, vocab.json, added_tokens.json).

Usage (from the repository root, after scripts/venv.sh):

    .venv/bin/python tools/ct2_to_hf.py [--base] [OUT_DIR] [CT2_MODEL_DIR]

OUT_DIR defaults to ~/.cache/encdec/models/whisper-tiny.en-hf32 (whisper-base-hf32 with
--base), CT2_MODEL_DIR to the CT2 model beside it. The CT2 -> HF mapping is
golden_tiny_en.py's (every tensor used once, fused projections split; base's config is
golden_base.py's); the values are the f16 weights widened exactly. tiny.en gets the
Hugging Face tokenizer, config and generation config files of ../shared/assets; both get
vocab.json and added_tokens.json written from the CT2 model's tokenizer.json.
"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_tiny_en as g  # noqa: E402


def vocab_files(ct2, out):
    """vocab.json (the BPE pieces) and added_tokens.json (the specials) of tokenizer.json."""
    with open(os.path.join(ct2, "tokenizer.json"), encoding="utf8") as fh:
        tok = json.load(fh)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf8") as fh:
        json.dump(tok["model"]["vocab"], fh, ensure_ascii=False)
    with open(os.path.join(out, "added_tokens.json"), "w", encoding="utf8") as fh:
        json.dump({t["content"]: t["id"] for t in tok["added_tokens"]}, fh, ensure_ascii=False)


def main():
    args = sys.argv[1:]
    base = "--base" in args
    args = [x for x in args if x != "--base"]
    name = "whisper-base" if base else "whisper-tiny.en"
    cache = os.path.expanduser("~/.cache/encdec/models")
    out = args[0] if args else os.path.join(cache, name + "-hf32")
    ct2 = args[1] if len(args) > 1 else os.path.join(cache, name)
    if base:
        import golden_base
        model, _, n_vars = golden_base.load_hf(ct2, torch.float32)
    else:
        model, _, n_vars, _ = g.load_hf_model(ct2, torch.float32)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    if not base:
        for name in sorted(os.listdir(g.HF_ASSETS)):
            if name != "config.json":
                dst = os.path.join(out, name)
                if os.path.exists(dst):
                    os.remove(dst)
                shutil.copy(os.path.join(g.HF_ASSETS, name), dst)
    vocab_files(ct2, out)
    size = os.path.getsize(os.path.join(out, "model.safetensors"))
    print("%s: %d CT2 tensors -> model.safetensors (f32, %.1f MB)" % (out, n_vars, size / 1e6))


if __name__ == "__main__":
    main()
