#!/usr/bin/env python3
"""Writes Whisper tiny.en as a Hugging Face directory with float32 weights, the form the
hub's openai/whisper-tiny.en has (model.safetensors in f32), from the CTranslate2 float16
model this project can fetch (scripts/fetch-model.sh). For benchmarks of f32-stored
weights: there `--compute f32` reads 4 bytes per weight and bf16 / int8 modes read 2 / 1.

Usage (from the repository root, after scripts/venv.sh):

    .venv/bin/python tools/ct2_to_hf.py [OUT_DIR] [CT2_MODEL_DIR]

OUT_DIR defaults to ~/.cache/encdec/models/whisper-tiny.en-hf32, CT2_MODEL_DIR to
~/.cache/encdec/models/whisper-tiny.en. The CT2 -> HF mapping is golden_tiny_en.py's
(every tensor used once, fused projections split); the values are the f16 weights
widened exactly. The tokenizer, config and generation config are the Hugging Face files of
whisper-tiny.en in ../shared/assets.
"""
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_tiny_en as g  # noqa: E402


def main():
    cache = os.path.expanduser("~/.cache/encdec/models")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(cache, "whisper-tiny.en-hf32")
    ct2 = sys.argv[2] if len(sys.argv) > 2 else os.path.join(cache, "whisper-tiny.en")
    model, _, n_vars, _ = g.load_hf_model(ct2, torch.float32)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for name in sorted(os.listdir(g.HF_ASSETS)):
        if name != "config.json":
            shutil.copy(os.path.join(g.HF_ASSETS, name), os.path.join(out, name))
    size = os.path.getsize(os.path.join(out, "model.safetensors"))
    print("%s: %d CT2 tensors -> model.safetensors (f32, %.1f MB)" % (out, n_vars, size / 1e6))


if __name__ == "__main__":
    main()
