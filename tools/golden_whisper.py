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
import wave

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

# ../shared beside the repository (override with $ENCDEC_SHARED)
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

MODEL_DIR = os.path.join("tests", "data", "tiny-random-whisper")
OUT = os.path.join("tests", "data", "tiny-random-whisper-golden.safetensors")
AUDIO = SHARED + "/audio/jfk.wav"
PREPROC = SHARED + "/assets/whisper-tiny.en-tokenizer/preprocessor_config.json"
MAX_NEW = 24
MEL_STRIDE = 25
ENC_STRIDE = 10
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


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def hf_mel(audio):
    from transformers import WhisperFeatureExtractor

    with open(PREPROC) as f:
        pp = json.load(f)
    fe = WhisperFeatureExtractor(
        feature_size=pp["feature_size"],
        sampling_rate=pp["sampling_rate"],
        hop_length=pp["hop_length"],
        chunk_length=pp["chunk_length"],
        n_fft=pp["n_fft"],
        padding_value=pp["padding_value"],
    )
    feats = fe(audio, sampling_rate=16000, return_tensors="np").input_features
    assert feats.shape == (1, 80, 3000), feats.shape
    return feats.astype(np.float32)


def load_model(dtype):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig.from_pretrained(MODEL_DIR)
    model = WhisperForConditionalGeneration(config)  # eager attention (torch 1.13)
    sd = load_file(os.path.join(MODEL_DIR, "model.safetensors"))
    assert all(v.dtype == torch.float16 for v in sd.values())
    sd = {k: v.to(dtype) for k, v in sd.items()}
    model = model.to(dtype)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert list(missing) == ["proj_out.weight"], missing
    assert not unexpected, unexpected
    model.tie_weights()
    assert torch.equal(model.proj_out.weight, model.model.decoder.embed_tokens.weight)
    for k, v in model.state_dict().items():  # everything is exactly the stored f16 value
        src = sd["model.decoder.embed_tokens.weight" if k == "proj_out.weight" else k]
        assert torch.equal(v, src), k
    model.eval()
    return model


@torch.no_grad()
def run(model, mel, gen):
    dtype = next(model.parameters()).dtype
    feats = torch.from_numpy(mel).to(dtype)
    enc = model.model.encoder(feats).last_hidden_state  # [1, 1500, d]
    assert enc.shape[1] == 1500
    cross = []
    for layer in model.model.decoder.layers:
        a = layer.encoder_attn
        assert a.k_proj.bias is None
        cross.append((a.k_proj(enc)[0], a.v_proj(enc)[0]))

    prompt = [gen["decoder_start_token_id"]]
    for pos, tid in sorted(gen["forced_decoder_ids"]):
        assert pos == len(prompt)
        prompt.append(tid)
    suppress = torch.tensor(gen["suppress_tokens"], dtype=torch.long)
    begin_suppress = torch.tensor(gen["begin_suppress_tokens"], dtype=torch.long)
    eos = gen["eos_token_id"]

    seq = list(prompt)
    tokens, rows, margins, raw_argmax = [], [], [], []
    for step in range(MAX_NEW):
        # full recompute every step (no KV cache): the plain definition of the model
        out = model(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([seq]), use_cache=False)
        row = out.logits[0, -1].clone()
        rows.append(row.clone())
        raw_argmax.append(int(row.argmax()))
        row[suppress] = -float("inf")
        if step == 0:
            row[begin_suppress] = -float("inf")
        top2 = torch.topk(row, 2).values
        margins.append(float(top2[0] - top2[1]))
        t = int(row.argmax())
        tokens.append(t)
        seq.append(t)
        if t == eos:
            break
    return {
        "enc": enc[0],
        "cross": cross,
        "prompt": prompt,
        "tokens": tokens,
        "logits": torch.stack(rows),
        "margins": margins,
        "raw_argmax": raw_argmax,
    }


@torch.no_grad()
def hf_generate(model, mel):
    from transformers import GenerationConfig

    gc = GenerationConfig.from_pretrained(MODEL_DIR)
    feats = torch.from_numpy(mel).to(next(model.parameters()).dtype)
    out = model.generate(feats, generation_config=gc, max_new_tokens=MAX_NEW, do_sample=False)
    return [int(x) for x in out[0]]


def main():
    torch.manual_seed(0)
    with open(os.path.join(MODEL_DIR, "generation_config.json")) as f:
        gen = json.load(f)

    audio = read_wav(AUDIO)
    mel = hf_mel(audio)

    # openai-whisper's log-mel, for information only (a second, independent mel)
    try:
        import whisper

        ow = whisper.log_mel_spectrogram(torch.from_numpy(audio), 80, padding=480000)[:, :3000].numpy()
        print("mel: max |HF - openai-whisper| = %.3g (HF range %.3f .. %.3f)"
              % (np.abs(ow - mel[0]).max(), mel.min(), mel.max()))
    except Exception as e:  # pragma: no cover
        print("openai-whisper mel comparison skipped:", e)

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
    for name, m in (("f64", m64), ("f32", m32)):
        g = hf_generate(m, mel)
        if g[: len(r64["prompt"])] == r64["prompt"]:
            g = g[len(r64["prompt"]):]
        # generate pads finished sequences; drop anything after eos
        if gen["eos_token_id"] in g:
            g = g[: g.index(gen["eos_token_id"]) + 1]
        print("generate (%s):" % name, g)
        assert g == r64["tokens"], ("generate disagrees", g, r64["tokens"])

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

    mel_idx = np.arange(0, 3000, MEL_STRIDE, dtype=np.int32)
    enc_idx = np.arange(0, 1500, ENC_STRIDE, dtype=np.int32)
    t = {
        "mel_frame_idx": mel_idx,
        "mel_frames": np.ascontiguousarray(mel[0][:, mel_idx]).astype(np.float32),
        "enc_row_idx": enc_idx,
        "encoder_out": r64["enc"][enc_idx].float().numpy(),
        "prompt": np.array(r64["prompt"], dtype=np.int32),
        "tokens": np.array(r64["tokens"], dtype=np.int32),
        "logits": r64["logits"].float().numpy(),
        "margins": margins,
        "raw_argmax": np.array(r64["raw_argmax"], dtype=np.int32),
        "text_bytes": np.frombuffer(text_bytes, dtype=np.uint8).copy(),
    }
    for li, (k, v) in enumerate(r64["cross"]):
        t["cross_k.%d" % li] = k[enc_idx].float().numpy()
        t["cross_v.%d" % li] = v[enc_idx].float().numpy()
    t = {k: np.ascontiguousarray(v) for k, v in t.items()}
    meta = {
        "source": "tools/golden_whisper.py: HF transformers, float64 compute from the f16 weights",
        "audio": "jfk.wav",
        "text": text,
        "mel_max": "%.9g" % float(mel.max()),
    }
    # one metadata key: safetensors writes __metadata__ from a hash map, so several keys
    # would come out in a run-dependent order (files not byte-identical)
    save_file(t, OUT, metadata={"info": json.dumps(meta, sort_keys=True, ensure_ascii=True)})
    print("wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))
    for k in sorted(t):
        print("  %-14s %-8s %s" % (k, t[k].dtype, list(t[k].shape)))


if __name__ == "__main__":
    sys.exit(main())
