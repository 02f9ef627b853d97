#!/usr/bin/env python3
"""Golden values for the tiny random large-v3-shaped Whisper model
(tests/data/tiny-random-whisper-v3/, made by tools/gen_tiny_whisper_v3.py).

Usage (from the repository root, after tools/gen_tiny_whisper_v3.py):

    .venv/bin/python tools/golden_whisper_v3.py

Writes tests/data/tiny-random-whisper-v3-golden.safetensors (float32 / int32 tensors; the
metadata key "info" is a JSON string with notes):

  mel_frame_idx  int32 [120]        frames 0, 25, 50, ... 2975 of the 3000-frame window
  mel_frames     f32   [128, 120]   128-band log-mel of ../shared/audio/jfk.wav at those
                                    frames, by HF WhisperFeatureExtractor(feature_size=128)
                                    (audio read with `wave`, s16 / 32768, padded to 30 s)
  enc_row_idx    int32 [150]        encoder positions 0, 10, ... 1490
  encoder_out    f32   [150, 64]    encoder output (after the final LayerNorm) at those rows
                                    (the encoder ran on the full 128 x 3000 HF mel)
  cross_k.L      f32   [150, 64]    decoder layer L's encoder_attn.k_proj(encoder_out) (no bias)
  cross_v.L      f32   [150, 64]    and encoder_attn.v_proj(encoder_out); L = 0, 1; columns
                                    are 4 heads x 16
  then for each of the two decodes P = "en" (<|startoftranscript|><|en|><|transcribe|>
  <|notimestamps|>) and P = "de" (<|startoftranscript|><|de|><|translate|><|notimestamps|>):
  P.prompt       int32 [4]
  P.tokens       int32 [n]          greedy ids after the prompt (n = 20 unless eos comes first)
  P.logits       f32   [n, 342]     step i's FULL raw logits row (before suppression), given
                                    prompt + tokens[:i]
  P.margins      f32   [n]          top1 - top2 of that row after suppression
  P.raw_argmax   int32 [n]          argmax of the raw row

Greedy rule: suppress_tokens -> -inf at every step; begin_suppress_tokens (" " and
<|endoftext|>) -> -inf at the first generated position; argmax; stop at <|endoftext|> or
after 20 tokens. Each manual loop (full recompute, no cache) is cross-checked against
transformers' `model.generate(feats, language=..., task=...)` (KV cache, its own prompt
construction and logits processors) in f64 and f32; they must agree.

Independence: everything comes from Hugging Face transformers / PyTorch on exactly the
bf16 weights of the shards (upcast to float64; the model is also loaded through
`from_pretrained` on the sharded directory and must hold the same values). The goldens are
computed in float64 and stored as float32; the f32-vs-f64 deviation is printed as the f32
noise floor.
"""

import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402
from whisper_oracle import read_wav  # noqa: E402,F401  (used by gen_tiny_whisper_v3.py --scan)

MODEL_DIR = os.path.join("tests", "data", "tiny-random-whisper-v3")
OUT = os.path.join("tests", "data", "tiny-random-whisper-v3-golden.safetensors")
AUDIO = oracle.JFK_WAV
N_MELS = 128
MAX_NEW = 20
MIN_MARGIN = 1e-2
DECODES = (("en", "transcribe"), ("de", "translate"))


def hf_mel(audio):
    """128-band HF log-mel (large-v3: 128 bands, the tiny.en preprocessor file says 80)."""
    return oracle.log_mel(oracle.feature_extractor_from(oracle.TINY_EN_PREPROC, N_MELS), audio, N_MELS)


def model_from_weights(model, sd, dtype):
    """model with exactly the stored bf16 tensors sd, upcast to dtype."""
    return oracle.model_from_weights(model, sd, dtype, torch.bfloat16)


def read_shards():
    with open(os.path.join(MODEL_DIR, "model.safetensors.index.json")) as f:
        index = json.load(f)
    assert not os.path.exists(os.path.join(MODEL_DIR, "model.safetensors"))
    sd = {}
    for shard in sorted(set(index["weight_map"].values())):
        part = load_file(os.path.join(MODEL_DIR, shard))
        for k, v in part.items():
            assert index["weight_map"][k] == shard, k
            assert k not in sd, k
            sd[k] = v
    assert set(sd) == set(index["weight_map"])
    assert index["metadata"]["total_size"] == sum(v.numel() * 2 for v in sd.values())
    assert len(set(index["weight_map"].values())) == 2
    return sd


def load_model(dtype):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig.from_pretrained(MODEL_DIR)
    assert config.num_mel_bins == N_MELS
    return model_from_weights(WhisperForConditionalGeneration(config), read_shards(), dtype)


def greedy(model, enc, prompt, gen, max_new=MAX_NEW):
    return oracle.greedy(model, enc, prompt, gen["suppress_tokens"], gen["begin_suppress_tokens"],
                         gen["eos_token_id"], max_new)


def prompt_for(gen, lang, task):
    return [gen["decoder_start_token_id"], gen["lang_to_id"]["<|%s|>" % lang],
            gen["task_to_id"][task], gen["no_timestamps_token_id"]]


def run(model, mel, gen):
    enc = oracle.encode(model, mel)
    assert enc.shape[1] == 1500
    dec = {lang: greedy(model, enc, prompt_for(gen, lang, task), gen) for lang, task in DECODES}
    return {"enc": enc[0], "cross": oracle.cross_kv(model, enc), "dec": dec}


def main():
    torch.manual_seed(0)
    with open(os.path.join(MODEL_DIR, "generation_config.json")) as f:
        gen = json.load(f)
    assert gen["is_multilingual"] is True

    audio = read_wav(AUDIO)
    mel = hf_mel(audio)
    oracle.compare_openai_mel(audio, mel)  # openai-whisper's 128-band log-mel, for information

    m64 = load_model(torch.float64)
    m32 = load_model(torch.float32)
    # the standard sharded layout loads through from_pretrained to the same values
    from transformers import GenerationConfig, WhisperForConditionalGeneration

    mp = WhisperForConditionalGeneration.from_pretrained(MODEL_DIR, torch_dtype=torch.float64)
    for k, v in m64.state_dict().items():
        assert torch.equal(mp.state_dict()[k], v), k
    del mp

    r64 = run(m64, mel, gen)
    r32 = run(m32, mel, gen)

    def dev(a, b):
        return float((a.double() - b.double()).abs().max())
    print("f32 vs f64 max |diff|: encoder_out %.2e  cross_k %.2e  cross_v %.2e  logits %.2e"
          % (dev(r32["enc"], r64["enc"]),
             max(dev(a[0], b[0]) for a, b in zip(r32["cross"], r64["cross"])),
             max(dev(a[1], b[1]) for a, b in zip(r32["cross"], r64["cross"])),
             max(dev(r32["dec"][l]["logits"], r64["dec"][l]["logits"]) for l, _ in DECODES)))

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(MODEL_DIR, "tokenizer.json"))
    gc = GenerationConfig.from_pretrained(MODEL_DIR)
    t = {}
    for lang, task in DECODES:
        d = r64["dec"][lang]
        assert r32["dec"][lang]["tokens"] == d["tokens"], (lang, r32["dec"][lang]["tokens"], d["tokens"])
        oracle.check_generate((("f64", m64), ("f32", m32)), mel, gc, d, "%s/%s " % (lang, task),
                              language=lang, task=task, max_new_tokens=MAX_NEW)
        margins = np.array(d["margins"], dtype=np.float32)
        print("%s/%s prompt %s" % (lang, task, d["prompt"]))
        print("  tokens (%d) %s" % (len(d["tokens"]), d["tokens"]))
        print("  raw argmax  %s" % d["raw_argmax"])
        print("  margins min %.4f: %s" % (margins.min(), " ".join("%.3f" % x for x in margins)))
        print("  text %r" % tok.decode(d["tokens"], skip_special_tokens=True))
        assert margins.min() >= MIN_MARGIN, "greedy margin too small: change SEED in gen_tiny_whisper_v3.py"
        t[lang + ".prompt"] = np.array(d["prompt"], dtype=np.int32)
        t[lang + ".tokens"] = np.array(d["tokens"], dtype=np.int32)
        t[lang + ".logits"] = d["logits"].float().numpy()
        t[lang + ".margins"] = margins
        t[lang + ".raw_argmax"] = np.array(d["raw_argmax"], dtype=np.int32)
    assert t["en.tokens"].tolist() != t["de.tokens"].tolist()

    t.update(oracle.encoder_goldens(mel, r64["enc"], r64["cross"]))
    meta = {
        "source": "tools/golden_whisper_v3.py: HF transformers, float64 compute from the bf16 weights",
        "audio": "jfk.wav",
        "n_mels": N_MELS,
    }
    oracle.save_golden(t, OUT, meta)
    assert os.path.getsize(OUT) < 400 * 1000


if __name__ == "__main__":
    sys.exit(main())
