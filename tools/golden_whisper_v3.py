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
import wave

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file

SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

MODEL_DIR = os.path.join("tests", "data", "tiny-random-whisper-v3")
OUT = os.path.join("tests", "data", "tiny-random-whisper-v3-golden.safetensors")
AUDIO = SHARED + "/audio/jfk.wav"
PREPROC = SHARED + "/assets/whisper-tiny.en-tokenizer/preprocessor_config.json"
N_MELS = 128
MAX_NEW = 20
MEL_STRIDE = 25
ENC_STRIDE = 10
MIN_MARGIN = 1e-2
DECODES = (("en", "transcribe"), ("de", "translate"))


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
        feature_size=N_MELS,  # large-v3: 128 bands (the tiny.en file says 80)
        sampling_rate=pp["sampling_rate"],
        hop_length=pp["hop_length"],
        chunk_length=pp["chunk_length"],
        n_fft=pp["n_fft"],
        padding_value=pp["padding_value"],
    )
    feats = fe(audio, sampling_rate=16000, return_tensors="np").input_features
    assert feats.shape == (1, N_MELS, 3000), feats.shape
    return feats.astype(np.float32)


def model_from_weights(model, sd, dtype):
    """model with exactly the stored bf16 tensors sd, upcast to dtype."""
    assert all(v.dtype == torch.bfloat16 for v in sd.values())
    sd = {k: v.to(dtype) for k, v in sd.items()}
    model = model.to(dtype)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert list(missing) == ["proj_out.weight"], missing
    assert not unexpected, unexpected
    model.tie_weights()
    assert torch.equal(model.proj_out.weight, model.model.decoder.embed_tokens.weight)
    for k, v in model.state_dict().items():
        assert torch.equal(v, sd["model.decoder.embed_tokens.weight" if k == "proj_out.weight" else k]), k
    model.eval()
    return model


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


@torch.no_grad()
def greedy(model, enc, prompt, gen, max_new=MAX_NEW):
    suppress = torch.tensor(gen["suppress_tokens"], dtype=torch.long)
    begin_suppress = torch.tensor(gen["begin_suppress_tokens"], dtype=torch.long)
    eos = gen["eos_token_id"]
    seq = list(prompt)
    tokens, rows, margins, raw_argmax = [], [], [], []
    for step in range(max_new):
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
    return {"prompt": list(prompt), "tokens": tokens, "logits": torch.stack(rows),
            "margins": margins, "raw_argmax": raw_argmax}


def prompt_for(gen, lang, task):
    return [gen["decoder_start_token_id"], gen["lang_to_id"]["<|%s|>" % lang],
            gen["task_to_id"][task], gen["no_timestamps_token_id"]]


@torch.no_grad()
def run(model, mel, gen):
    dtype = next(model.parameters()).dtype
    enc = model.model.encoder(torch.from_numpy(mel).to(dtype)).last_hidden_state
    assert enc.shape[1] == 1500
    cross = []
    for layer in model.model.decoder.layers:
        a = layer.encoder_attn
        assert a.k_proj.bias is None
        cross.append((a.k_proj(enc)[0], a.v_proj(enc)[0]))
    dec = {lang: greedy(model, enc, prompt_for(gen, lang, task), gen) for lang, task in DECODES}
    return {"enc": enc[0], "cross": cross, "dec": dec}


@torch.no_grad()
def hf_generate(model, mel, lang, task):
    from transformers import GenerationConfig

    gc = GenerationConfig.from_pretrained(MODEL_DIR)
    feats = torch.from_numpy(mel).to(next(model.parameters()).dtype)
    out = model.generate(feats, generation_config=gc, language=lang, task=task,
                         max_new_tokens=MAX_NEW, do_sample=False)
    return [int(x) for x in out[0]]


def main():
    torch.manual_seed(0)
    with open(os.path.join(MODEL_DIR, "generation_config.json")) as f:
        gen = json.load(f)
    assert gen["is_multilingual"] is True

    audio = read_wav(AUDIO)
    mel = hf_mel(audio)
    try:  # openai-whisper's 128-band log-mel, for information (a second, independent mel)
        import whisper

        ow = whisper.log_mel_spectrogram(torch.from_numpy(audio), N_MELS, padding=480000)[:, :3000].numpy()
        print("mel: max |HF - openai-whisper| = %.3g (HF range %.3f .. %.3f)"
              % (np.abs(ow - mel[0]).max(), mel.min(), mel.max()))
    except Exception as e:  # pragma: no cover
        print("openai-whisper mel comparison skipped:", e)

    m64 = load_model(torch.float64)
    m32 = load_model(torch.float32)
    # the standard sharded layout loads through from_pretrained to the same values
    from transformers import WhisperForConditionalGeneration

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
    t = {}
    for lang, task in DECODES:
        d = r64["dec"][lang]
        assert r32["dec"][lang]["tokens"] == d["tokens"], (lang, r32["dec"][lang]["tokens"], d["tokens"])
        for name, m in (("f64", m64), ("f32", m32)):
            g = hf_generate(m, mel, lang, task)
            if g[: len(d["prompt"])] == d["prompt"]:
                g = g[len(d["prompt"]):]
            if gen["eos_token_id"] in g:
                g = g[: g.index(gen["eos_token_id"]) + 1]
            print("%s/%s generate (%s):" % (lang, task, name), g)
            assert g == d["tokens"], ("generate disagrees", lang, g, d["tokens"])
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

    mel_idx = np.arange(0, 3000, MEL_STRIDE, dtype=np.int32)
    enc_idx = np.arange(0, 1500, ENC_STRIDE, dtype=np.int32)
    t["mel_frame_idx"] = mel_idx
    t["mel_frames"] = mel[0][:, mel_idx].astype(np.float32)
    t["enc_row_idx"] = enc_idx
    t["encoder_out"] = r64["enc"][enc_idx].float().numpy()
    for li, (k, v) in enumerate(r64["cross"]):
        t["cross_k.%d" % li] = k[enc_idx].float().numpy()
        t["cross_v.%d" % li] = v[enc_idx].float().numpy()
    t = {k: np.ascontiguousarray(v) for k, v in t.items()}
    meta = {
        "source": "tools/golden_whisper_v3.py: HF transformers, float64 compute from the bf16 weights",
        "audio": "jfk.wav",
        "n_mels": N_MELS,
    }
    # one metadata key (several would be written in a run-dependent order)
    save_file(t, OUT, metadata={"info": json.dumps(meta, sort_keys=True, ensure_ascii=True)})
    print("wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))
    for k in sorted(t):
        print("  %-14s %-8s %s" % (k, t[k].dtype, list(t[k].shape)))
    assert os.path.getsize(OUT) < 400 * 1000


if __name__ == "__main__":
    sys.exit(main())
