#!/usr/bin/env python3
"""encdec's CUDA backend against Hugging Face transformers on the same GPU, in
one run, on the same weights.

Usage (on the GPU machine, from the repository root, with the CUDA build of
scripts/test-cuda.sh build carried there; python3 with torch and transformers):

    python3 bench/gpu_bench.py --encdec build-cuda/encdec --audio JFK.wav \\
        [--shapes tiny.en,base,small,large-v3] [--computes f32,bf16,int8] [--repeats 5]
        [--batch 64] [--json OUT]

Models: for each shape, a random-weight Whisper of that shape, seeded, made here
by transformers and saved as safetensors beside the English tokenizer of
../shared/assets/whisper-tiny.en-tokenizer (--tokenizer): both engines load the
same file. The <|endoftext|> and <|nocaptions|> rows of the embedding are zero,
so that neither ends a window early or calls it silence: every decode runs to
the same length, and transformers is told that length (min = max new tokens),
so that both produce the same number of tokens per window.

Rows (medians over --repeats, after a warm-up):
  encoder ms          one 30 s window. encdec: encoder + the cross cache's fill
                      (encdec bench); transformers: the encoder's forward
  decode ms/token     batch 1. encdec bench's full-cache figure; transformers:
                      (generate - encoder) / tokens
  window ms           the recording (one 30 s window) end to end. encdec: its
                      transcribe (mel on the CPU included); transformers:
                      feature extraction + generate
  tokens/s, batch B   B copies of the window at once. encdec: transcribe
                      --parallel B through its engine (one decode step for every
                      request), its wall time less the model's load; transformers:
                      generate on a batch of B
  GPU MB              encdec: the most nvidia-smi saw for its process during
                      the batch; transformers: torch.cuda.max_memory_allocated
transformers runs in bfloat16 with sdpa attention and its static cache where
generate accepts it (else its dynamic cache, said in the output); encdec runs
each --compute of --computes (f32, bf16 and int8: the int8 mode's products
are the CPU's, exact integer sums). The 10-minute recording (--long) is encdec's
long-form alone, on the first shape (transformers' long-form needs real timestamps).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHAPES = {   # d_model, layers (encoder = decoder), heads, mel bins
    "tiny.en": (384, 4, 6, 80),
    "base": (512, 6, 8, 80),
    "small": (768, 12, 12, 80),
    "large-v3": (1280, 32, 20, 128),
}


def make_model(shape, tok_dir, out):
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    d, L, H, mels = SHAPES[shape]
    cfg = json.load(open(os.path.join(tok_dir, "config.json")))
    cfg.update(d_model=d, encoder_layers=L, decoder_layers=L, encoder_attention_heads=H,
               decoder_attention_heads=H, encoder_ffn_dim=4 * d, decoder_ffn_dim=4 * d,
               num_hidden_layers=L, num_mel_bins=mels, torch_dtype="float32")
    cfg.pop("_name_or_path", None)
    torch.manual_seed(1234)
    with torch.device("cuda"):
        m = WhisperForConditionalGeneration(WhisperConfig(**cfg)).eval()
    tok = json.load(open(os.path.join(tok_dir, "tokenizer.json")))
    ids = {a["content"]: a["id"] for a in tok["added_tokens"]}
    with torch.no_grad():
        emb = m.model.decoder.embed_tokens.weight
        for name in ("<|endoftext|>", "<|nocaptions|>", "<|nospeech|>"):
            if name in ids:
                emb[ids[name]].zero_()
    os.makedirs(out, exist_ok=True)
    m.save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.json", "vocab.json", "merges.txt", "generation_config.json",
              "preprocessor_config.json", "special_tokens_map.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(tok_dir, f)):
            shutil.copy(os.path.join(tok_dir, f), out)
    return ids


def read_wav(path):
    """16-bit mono 16 kHz WAV as float32 (numpy), else None."""
    import numpy as np
    import wave
    with wave.open(path) as w:
        if w.getframerate() != 16000 or w.getsampwidth() != 2 or w.getnchannels() != 1:
            return None
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768


def make_long(src_dir, out, seconds=600):
    """The 16 kHz WAVs under src_dir end to end, 0.5 s apart, repeated to `seconds`."""
    import numpy as np
    import wave
    parts = []
    for root, _, files in sorted(os.walk(src_dir)):
        for f in sorted(files):
            if f.endswith(".wav"):
                x = read_wav(os.path.join(root, f))
                if x is not None:
                    parts += [x, np.zeros(8000, np.float32)]
    one = np.concatenate(parts)
    x = np.tile(one, int(seconds * 16000 // len(one)) + 1)[: seconds * 16000]
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return out


def med(xs):
    return statistics.median(xs)


def encdec_bench(exe, model, audio, compute, repeats):
    cmd = [exe, "bench", "-m", model, "--device", "cuda", "--compute", compute, "--json",
           "--modes", "full", "--no-fallback", "--no-timestamps", "-r", str(repeats), audio]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError("encdec bench failed: %s\n%s" % (" ".join(cmd), out.stderr[-2000:]))
    return json.loads(out.stdout)


def gpu_mb_of(pid):
    q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
    for line in q.splitlines():
        p, mb = [x.strip() for x in line.split(",")]
        if p == str(pid):
            return float(mb)
    return 0.0


def encdec_batch(exe, model, audio, compute, batch, repeats, load_ms):
    """Wall seconds of `batch` copies through transcribe --parallel, less the
    model's load (load_ms: encdec bench's, the weights' upload included); peak MB."""
    tmp = tempfile.mkdtemp()
    files = []
    for i in range(batch):
        f = os.path.join(tmp, "copy%03d.wav" % i)
        os.symlink(os.path.abspath(audio), f)
        files.append(f)
    times, peak = [], 0.0
    for _ in range(repeats + 1):
        cmd = [exe, "transcribe", "-m", model, "--device", "cuda", "--compute", compute,
               "--no-timestamps", "--temperature-increment", "0", "--parallel", str(batch),
               "-f", "txt", "-o",
               os.path.join(tmp, "out")] + files
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while p.poll() is None:
            peak = max(peak, gpu_mb_of(p.pid))
            time.sleep(0.05)
        dt = time.perf_counter() - t0 - load_ms / 1e3
        if p.returncode:
            raise RuntimeError("encdec transcribe --parallel failed: " + p.stderr.read()[-2000:])
        times.append(dt)
    shutil.rmtree(tmp, ignore_errors=True)
    return med(times[1:]), peak


def hf_rows(model_dir, audio, n_tokens, ids, batch, repeats):
    import numpy as np
    import torch
    from transformers import GenerationMixin, WhisperFeatureExtractor, WhisperForConditionalGeneration
    m = WhisperForConditionalGeneration.from_pretrained(model_dir, torch_dtype=torch.bfloat16,
                                                        attn_implementation="sdpa").cuda().eval()
    mels = m.config.num_mel_bins
    fe = WhisperFeatureExtractor(feature_size=mels)
    pcm = read_wav(audio)
    assert pcm is not None, "the bench's audio is a 16 kHz mono 16-bit WAV"
    prompt = [ids["<|startoftranscript|>"], ids["<|notimestamps|>"]]

    def features():
        f = fe(pcm, sampling_rate=16000, return_tensors="pt").input_features
        return f.to("cuda", torch.bfloat16)

    def gen(feats, cache):
        B = feats.shape[0]
        dec = torch.tensor([prompt] * B, device="cuda")
        kw = dict(input_features=feats, decoder_input_ids=dec, max_new_tokens=n_tokens,
                  min_new_tokens=n_tokens, do_sample=False, num_beams=1)
        if cache:
            kw["cache_implementation"] = cache
        return GenerationMixin.generate(m, **kw)

    def timed(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        r = fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, r

    cache = "static"
    with torch.inference_mode():
        f1 = features()
        try:
            _, out = timed(lambda: gen(f1, cache))
        except Exception as e:   # noqa: BLE001 - the peer's own limits, reported
            print("transformers: static cache refused (%s): dynamic cache" % str(e).splitlines()[0][:160])
            cache = None
            _, out = timed(lambda: gen(f1, cache))
        got = out.shape[1] - len(prompt)
        enc = [timed(lambda: m.model.encoder(f1))[0] for _ in range(repeats)]
        win = [timed(lambda: gen(features(), cache))[0] for _ in range(repeats)]
        gen1 = [timed(lambda: gen(f1, cache))[0] for _ in range(repeats)]
        fb = f1.repeat(batch, 1, 1)
        timed(lambda: gen(fb, cache))
        torch.cuda.reset_peak_memory_stats()
        bt = [timed(lambda: gen(fb, cache))[0] for _ in range(max(1, repeats // 2))]
        peak = torch.cuda.max_memory_allocated() / 2**20
    e = med(enc)
    return {"encoder_ms": e * 1e3, "decode_ms_per_token": (med(gen1) - e) * 1e3 / max(1, got),
            "window_ms": med(win) * 1e3, "tokens": got,
            "batch_tokens_per_s": batch * got / med(bt), "gpu_mb": peak,
            "cache": cache or "dynamic"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encdec", default=os.path.join(ROOT, "build-cuda", "encdec"))
    ap.add_argument("--audio", required=True, help="a recording of at most 30 s, 16 kHz WAV")
    ap.add_argument("--long", help="a folder of 16 kHz WAVs: put end to end into a 10-minute "
                    "recording for encdec's long-form real-time factor (the first shape)")
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "..", "shared", "assets",
                                                        "whisper-tiny.en-tokenizer"))
    ap.add_argument("--shapes", default="tiny.en,base,small,large-v3")
    ap.add_argument("--computes", default="f32,bf16,int8", help="encdec's --compute modes, each a row")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import transformers
    gpu = torch.cuda.get_device_name(0)
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    print("GPU: %s, driver %s; torch %s, transformers %s; %s" % (
        gpu, drv, torch.__version__, transformers.__version__, time.strftime("%Y-%m-%d")))
    rows = []
    work = tempfile.mkdtemp()
    long_wav = make_long(a.long, os.path.join(work, "long10.wav")) if a.long else None
    for shape in a.shapes.split(","):
        mdir = os.path.join(work, shape)
        ids = make_model(shape, a.tokenizer, mdir)
        torch.cuda.empty_cache()
        row = {"shape": shape}
        for comp in a.computes.split(","):
            try:
                b = encdec_bench(a.encdec, mdir, a.audio, comp, a.repeats)
            except RuntimeError as e:
                print("%s %s: %s" % (shape, comp, e))
                continue
            bt, peak = encdec_batch(a.encdec, mdir, a.audio, comp, a.batch, max(1, a.repeats // 2),
                                    b["load_ms"])
            row["encdec_" + comp] = {
                "encoder_ms": b["encoder_ms"], "decode_ms_per_token": b["decode_ms_per_token"]["full"],
                "window_ms": b["transcribe_ms"], "tokens": b["n_tokens"],
                "batch_tokens_per_s": a.batch * b["n_tokens"] / bt, "gpu_mb": peak}
            if long_wav and comp == "bf16" and not rows:
                lb = encdec_bench(a.encdec, mdir, long_wav, comp, 1)
                row["encdec_long_rtf"] = lb["rtf"]
        first = next((k for k in row if k.startswith("encdec_") and k != "encdec_long_rtf"), None)
        if first is None:
            continue
        n_tok = row[first]["tokens"]
        if n_tok < 1:
            print("%s: encdec decoded no token (the random model ended the window at once): "
                  "no like-for-like transformers row" % shape)
            print(json.dumps(row))
            continue
        try:
            row["transformers_bf16"] = hf_rows(mdir, a.audio, n_tok, ids, a.batch, a.repeats)
        except Exception:   # noqa: BLE001 - encdec's rows still count; the peer's failure is shown
            import traceback
            traceback.print_exc()
            print("transformers failed on %s: its rows are missing" % shape)
            print(json.dumps(row))
            continue
        rows.append(row)
        print_row(row, a.batch)
        shutil.rmtree(mdir, ignore_errors=True)
    if a.json:
        json.dump({"gpu": gpu, "driver": drv, "date": time.strftime("%Y-%m-%d"), "rows": rows},
                  open(a.json, "w"), indent=1)


def print_row(row, batch):
    hf = row["transformers_bf16"]
    print("\n%s (%d tokens a window; transformers: %s cache)" % (row["shape"], hf["tokens"], hf["cache"]))
    print("  %-22s %12s %12s %12s %16s %10s" % ("", "encoder ms", "ms/token", "window ms",
                                               "tok/s batch %d" % batch, "GPU MB"))
    engines = [k for k in row if k.startswith("encdec_") and k != "encdec_long_rtf"]
    for k in engines + ["transformers_bf16"]:
        r = row[k]
        print("  %-22s %12.2f %12.3f %12.1f %16.0f %10.0f" % (
            k, r["encoder_ms"], r["decode_ms_per_token"], r["window_ms"], r["batch_tokens_per_s"],
            r["gpu_mb"]))
    for k in engines:
        r = row[k]
        print("  %-22s encoder %.2fx, ms/token %.2fx, window %.2fx, batch %.2fx transformers'" % (
            k + " speed:", hf["encoder_ms"] / r["encoder_ms"],
            hf["decode_ms_per_token"] / r["decode_ms_per_token"], hf["window_ms"] / r["window_ms"],
            r["batch_tokens_per_s"] / hf["batch_tokens_per_s"]))
    if "encdec_long_rtf" in row:
        print("  encdec bf16 long-form real-time factor: %.4f" % row["encdec_long_rtf"])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
