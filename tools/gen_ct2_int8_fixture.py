#!/usr/bin/env python3
"""tests/data/tiny-random-ct2-int8/: the random Whisper of tests/data/tiny-random-whisper
(widened to float32, as hub checkpoints are) converted by CTranslate2's own converter
with --quantization int8 (other tensors stay f32) and int8_float16 (they become f16),
and CTranslate2's own outputs for them (the golden the C loader is checked against).

Usage (from the repository root; .venv from scripts/venv.sh):

    .venv/bin/python tools/gen_ct2_int8_fixture.py

Writes
  int8/, int8_float16/   model.bin, config.json, vocabulary.json as the converter writes
                         them (its TransformersConverter; only its model loading is adapted:
                         ctranslate2 4.8.5 passes `dtype=` where transformers 4.46 takes
                         `torch_dtype=`)
  golden.safetensors     per type, CTranslate2 running that model.bin (compute_type float32:
                         the int8 weights dequantized by CTranslate2) on jfk.wav's log-mel
                         (whisper_oracle.log_mel): greedy from [<|startoftranscript|>,
                         <|notimestamps|>] without suppression, 8 tokens (<type>.tokens) and
                         each step's log-probabilities over the vocabulary
                         (<type>.logits [n, 460]: return_logits_vocab's raw logits).
The C test (tests/test_ct2_int8.c) teacher-forces those tokens and compares its logits
with CTranslate2's.
"""

import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402

SRC = os.path.join("tests", "data", "tiny-random-whisper")
OUT = os.path.join("tests", "data", "tiny-random-ct2-int8")
TYPES = ["int8", "int8_float16"]
SOT, NOTIMESTAMPS = 401, 408
MAX_NEW = 8


def convert(src, q, out):
    from ctranslate2.converters import transformers as T

    class Converter(T.TransformersConverter):
        def load_model(self, model_class, path, **kw):
            if "dtype" in kw:
                kw["torch_dtype"] = kw.pop("dtype")
            return model_class.from_pretrained(path, **kw)

    Converter(src).convert(out, quantization=q, force=True)


def f32_source(tmp):
    """The model in float32 (its f16 values widened): so that int8 keeps the other
    tensors f32 and int8_float16 makes them f16, as from a hub checkpoint."""
    import torch
    from transformers import WhisperForConditionalGeneration

    m = WhisperForConditionalGeneration.from_pretrained(SRC, torch_dtype=torch.float32)
    m.config.torch_dtype = "float32"
    m.save_pretrained(tmp, safe_serialization=True)
    for f in ("generation_config.json", "tokenizer.json"):
        shutil.copy(os.path.join(SRC, f), tmp)
    return tmp


def main():
    import ctranslate2

    os.makedirs(OUT, exist_ok=True)
    audio = oracle.read_wav(oracle.JFK_WAV)
    mel = oracle.log_mel(oracle.feature_extractor_from(oracle.TINY_EN_PREPROC), audio)
    tensors = {}
    import tempfile
    tmp = tempfile.mkdtemp()
    src = f32_source(tmp)
    for q in TYPES:
        d = os.path.join(OUT, q)
        if os.path.isdir(d):
            shutil.rmtree(d)
        convert(src, q, d)
        shutil.copy(os.path.join(SRC, "tokenizer.json"), d)
        m = ctranslate2.models.Whisper(d, device="cpu", compute_type="float32")
        res = m.generate(ctranslate2.StorageView.from_array(mel.astype(np.float32)),
                         [[SOT, NOTIMESTAMPS]], beam_size=1, max_length=MAX_NEW + 2,
                         return_scores=True, return_logits_vocab=True, suppress_blank=False,
                         suppress_tokens=[])[0]
        toks = res.sequences_ids[0]
        rows = [np.asarray(r, dtype=np.float32).reshape(-1) for r in res.logits[0]]
        n = min(MAX_NEW, len(toks), len(rows))
        tensors["%s.tokens" % q] = np.array(toks[:n], dtype=np.int32)
        tensors["%s.logits" % q] = np.stack(rows[:n])
        print(q, "tokens", toks[:n], "rows", len(rows), rows[0].shape,
              "row 0 sums to %.4f (exp)" % float(np.exp(rows[0].astype(np.float64)).sum()))
    shutil.rmtree(tmp)
    tensors["prompt"] = np.array([SOT, NOTIMESTAMPS], dtype=np.int32)
    oracle.save_golden(tensors, os.path.join(OUT, "golden.safetensors"),
                       {"reference": "ctranslate2 %s, compute_type float32, greedy, no suppression"
                                     % ctranslate2.__version__})
    for root, _, files in sorted(os.walk(OUT)):
        for f in sorted(files):
            p = os.path.join(root, f)
            print("%-50s %8d bytes" % (p, os.path.getsize(p)))


if __name__ == "__main__":
    main()
