#!/usr/bin/env python3
"""Golden values for the tiny random Whisper model (tests/data/tiny-random-whisper/).

Usage (from the repository root, after tools/gen_tiny_whisper.py):

    .venv/bin/python tools/golden_whisper.py

Writes tests/data/tiny-random-whisper-golden.safetensors (float32 / int32 / uint8
tensors; the safetensors metadata key "info" is a JSON string with the decoded text and
notes):

  mel_frame_idx  int32 [120]       frames 0, 25, 50, ... 2975 of the 3000-frame window
  mel_frames     f32   [80, 120]   log-mel of ../shared/audio/jfk.wav at those frames,
                                   as computed by HF WhisperFeatureExtractor (audio read
                                   with the `wave` module, s16 / 32768, zero-padded to 30 s)
  enc_row_idx    int32 [150]       encoder positions 0, 10, 20, ... 1490
  encoder_out    f32   [150, 64]   encoder output (after the final LayerNorm) at those rows;
                                   the encoder ran on the FULL 80 x 3000 HF mel
  cross_k.L      f32   [150, 64]   decoder layer L's encoder_attn.k_proj(encoder_out) (no bias),
  cross_v.L      f32   [150, 64]   and encoder_attn.v_proj(encoder_out), same rows, L = 0, 1;
                                   the 64 columns are 4 heads x 16 (head h = cols 16h..16h+15)
  prompt         int32 [2]         [<|startoftranscript|>=401, <|notimestamps|>=408]
  tokens         int32 [n]         greedy ids generated after the prompt (incl. eos if emitted)
  logits         f32   [n, 460]    for step i, the FULL logits row predicting tokens[i] given
                                   prompt + tokens[:i], BEFORE any suppression (what
                                   model(...) returns)
  margins        f32   [n]         top1 - top2 of that row AFTER suppression (the greedy margin)
  raw_argmax     int32 [n]         argmax of the raw row (differs from tokens[i] where a
                                   suppression rule changed the choice)
  text_bytes     uint8 [m]         the detokenized output as raw bytes (byte-level BPE of
                                   random tokens is not valid UTF-8; metadata "text" is the
                                   tokenizers-library decode with U+FFFD replacements)

Greedy rule reproduced here: suppress_tokens -> -inf at every step; begin_suppress_tokens
(" " and <|endoftext|>) -> -inf at the first generated position only; argmax; stop at
<|endoftext|> or after 24 tokens. The token sequence is cross-checked against
transformers' own `model.generate(...)` (which uses its KV cache), and must agree.

Independence: every value is computed by Hugging Face transformers / PyTorch from the f16
weights in model.safetensors (upcast), not by this project's C code. The goldens are
computed in float64 (weights f16 -> f64, mel as f32 -> f64) and stored as float32, so
they carry no float32 rounding of their own; the script also runs the same model in
float32 and prints the f32-vs-f64 deviation: that is the rounding noise an f32
implementation is expected to show.

Tolerances to use in the C tests (see the printout for the measured f32 noise):
  mel_frames   |diff| <= 2e-4 absolute (after (x+4)/4 scaling; f32 FFT vs HF's)
               -- or compare the C mel against HF's with the same tolerance
  encoder_out  |diff| <= 2e-3 * max(1, |ref|)  (C mel -> C encoder: mel noise propagates)
  cross_k/v    |diff| <= 5e-3 * max(1, |ref|)
  logits       |diff| <= 5e-3 * max(1, |ref|) ; tokens must match exactly (margins below
               are orders of magnitude larger than the noise)
"""

import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file

import whisper_oracle as oracle

MODEL_DIR = os.path.join("tests", "data", "tiny-random-whisper")
OUT = os.path.join("tests", "data", "tiny-random-whisper-golden.safetensors")
MAX_NEW = 24
MIN_MARGIN = 1e-3


def gpt2_bytes_to_unicode():
    """GPT-2's byte -> printable character table used by ByteLevel BPE."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def load_model(dtype):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig.from_pretrained(MODEL_DIR)
    model = WhisperForConditionalGeneration(config)  # eager attention (torch 1.13)
    sd = load_file(os.path.join(MODEL_DIR, "model.safetensors"))
    return oracle.model_from_weights(model, sd, dtype, torch.float16)


@torch.no_grad()
def run(model, mel, gen):
    enc = oracle.encode(model, mel)  # [1, 1500, d]
    assert enc.shape[1] == 1500
    prompt = [gen["decoder_start_token_id"]]
    for pos, tid in sorted(gen["forced_decoder_ids"]):
        assert pos == len(prompt)
        prompt.append(tid)
    res = oracle.greedy(model, enc, prompt, gen["suppress_tokens"], gen["begin_suppress_tokens"],
                        gen["eos_token_id"], MAX_NEW)
    res.update({"enc": enc[0], "cross": oracle.cross_kv(model, enc)})
    return res


def main():
    from transformers import GenerationConfig

    torch.manual_seed(0)
    with open(os.path.join(MODEL_DIR, "generation_config.json")) as f:
        gen = json.load(f)

    audio = oracle.read_wav(oracle.JFK_WAV)
    mel = oracle.log_mel(oracle.feature_extractor_from(oracle.TINY_EN_PREPROC), audio)
    oracle.compare_openai_mel(audio, mel)

    m64 = load_model(torch.float64)
    m32 = load_model(torch.float32)
    r64 = run(m64, mel, gen)
    r32 = run(m32, mel, gen)

    # f32 run: same tokens, and its deviation from the f64 golden is the f32 noise floor
    assert r32["tokens"] == r64["tokens"], (r32["tokens"], r64["tokens"])
    def dev(a, b):
        a = a.double(); b = b.double()
        return float(((a - b).abs() / b.abs().clamp(min=1.0)).max())
    print("f32 vs f64 (max |diff| / max(1,|ref|)): encoder_out %.2e  cross_k %.2e  cross_v %.2e  logits %.2e"
          % (dev(r32["enc"], r64["enc"]),
             max(dev(a[0], b[0]) for a, b in zip(r32["cross"], r64["cross"])),
             max(dev(a[1], b[1]) for a, b in zip(r32["cross"], r64["cross"])),
             dev(r32["logits"], r64["logits"])))

    # transformers' own generate (KV cache, its logits processors) must agree
    oracle.check_generate((("f64", m64), ("f32", m32)), mel, GenerationConfig.from_pretrained(MODEL_DIR),
                          r64, max_new_tokens=MAX_NEW)
    margins = np.array(r64["margins"], dtype=np.float32)
    print("prompt", r64["prompt"])
    print("tokens (%d)" % len(r64["tokens"]), r64["tokens"])
    print("raw argmax   ", r64["raw_argmax"])
    print("margins min %.4f  per step: %s" % (margins.min(), " ".join("%.3f" % m for m in margins)))
    assert margins.min() >= MIN_MARGIN, "greedy margin too small: change SEED/std in gen_tiny_whisper.py"

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(MODEL_DIR, "tokenizer.json"))
    text = tok.decode(r64["tokens"], skip_special_tokens=True)
    # byte-level BPE: the exact output bytes (random tokens need not form valid UTF-8,
    # so compare bytes, not the replacement-character string the library returns)
    inv = {c: b for b, c in gpt2_bytes_to_unicode().items()}
    text_bytes = bytes(inv[c] for t in r64["tokens"] if t < gen["eos_token_id"]
                       for c in tok.id_to_token(t))
    assert text_bytes.decode("utf-8", errors="replace") == text
    print("text %r" % text)
    print("text bytes %r" % text_bytes)

    t = oracle.encoder_goldens(mel, r64["enc"], r64["cross"])
    t.update({
        "prompt": np.array(r64["prompt"], dtype=np.int32),
        "tokens": np.array(r64["tokens"], dtype=np.int32),
        "logits": r64["logits"].float().numpy(),
        "margins": margins,
        "raw_argmax": np.array(r64["raw_argmax"], dtype=np.int32),
        "text_bytes": np.frombuffer(text_bytes, dtype=np.uint8).copy(),
    })
    meta = {
        "source": "tools/golden_whisper.py: HF transformers, float64 compute from the f16 weights",
        "audio": "jfk.wav",
        "text": text,
        "mel_max": "%.9g" % float(mel.max()),
    }
    oracle.save_golden(t, OUT, meta)


if __name__ == "__main__":
    sys.exit(main())
