#!/usr/bin/env python3
"""encdec against Hugging Face transformers on one T5 model, same machine, same
thread count, in one run.

Usage (from the repository root, after scripts/venv.sh and a build):

    .venv/bin/python bench/t5_vs_transformers.py [--model DIR] [--threads 2]
        [--max-new 64] [--repeats 5] [--compute f32|bf16|int8] [--cross-kv f32|f16|bf16]
        [--hf-dtype auto|float32|bfloat16] [--json OUT]

The model defaults to a flan-t5-small-shaped random-weight model
(${XDG_CACHE_HOME:-~/.cache}/encdec/models/flan-t5-small-random), written by
tools/gen_tiny_t5.py --bench when missing; its </s> row is zero so that every
run generates exactly --max-new tokens.

Correctness first: build/bench/t5_bench refuses to report unless its three cache
modes agree; here encdec's greedy tokens for the first input are compared with
transformers' (the first difference is printed; float32 noise can flip a token on a
random-weight model where two logits are within ~1e-5, so agreement is reported, not
assumed). Then, medians over the repeats:

  encoder ms         one input (encdec: incl. filling the cross cache)
  greedy ms/token    encdec per cache mode; transformers with use_cache=True
  beam 4 ms/step     one decoder position for 4 beams, against greedy
  tokens/s           greedy, 1 input and 8 inputs batched (end to end: encoder + decoding)

transformers runs with torch.set_num_threads(threads), torch.inference_mode, in
--hf-dtype: auto (the default) is bfloat16 when encdec runs --compute bf16 (the same
precision on both sides), else float32.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_model():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "encdec", "models", "flan-t5-small-random")


def run_encdec(a):
    exe = os.path.join(ROOT, "build", "bench", "t5_bench")
    if not os.path.exists(exe):
        sys.exit(f"{exe} not found: build first (cmake -B build && cmake --build build)")
    out = subprocess.run([exe, "-m", a.model, "-t", str(a.threads), "-r", str(a.repeats), "-n",
                          str(a.max_new), "--compute", a.compute, "--cross-kv", a.cross_kv, "--json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_hf(a, inputs):
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration
    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[a.hf_dtype]
    model = T5ForConditionalGeneration.from_pretrained(a.model, torch_dtype=dtype).eval()
    one = tok(inputs[:1], return_tensors="pt")
    batch = tok(inputs, return_tensors="pt", padding=True)
    # synced_gpus=False: otherwise generate() imports torch.distributed, which fails on
    # Debian's torch 1.13 under Python 3.11
    gen = dict(max_new_tokens=a.max_new, min_new_tokens=a.max_new, do_sample=False, use_cache=True,
               synced_gpus=False)

    def timed(fn):
        ts, out = [], None
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            out = fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts), out

    with torch.inference_mode():
        model.generate(**one, **gen)   # warm-up
        enc_ms, _ = timed(lambda: model.encoder(**one))
        greedy_ms, g = timed(lambda: model.generate(**one, **gen))
        beam_ms, b = timed(lambda: model.generate(**one, num_beams=4, **gen))
        batch_ms, bt = timed(lambda: model.generate(**batch, **gen))
    n_greedy = g.shape[1] - 1
    n_batch = int((bt[:, 1:] != tok.pad_token_id).sum())
    return {
        "engine": "transformers", "torch": torch.__version__, "threads": a.threads,
        "dtype": a.hf_dtype,
        "encoder_ms": enc_ms,
        "greedy_ms_per_token": (greedy_ms - enc_ms) / n_greedy,
        "greedy_tokens": n_greedy,
        "greedy_tokens_per_s": 1e3 * n_greedy / greedy_ms,
        "beam4_ms_per_step": (beam_ms - enc_ms) / (b.shape[1] - 1),
        "greedy_ms_per_step": (greedy_ms - enc_ms) / n_greedy,
        "batch_tokens_per_s": 1e3 * n_batch / batch_ms,
        "greedy_ids": g[0, 1:].tolist(),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=default_model())
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-new", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--compute", default="f32", help="encdec --compute: f32, bf16 or int8")
    p.add_argument("--cross-kv", default="f32", help="encdec --cross-kv: f32, f16 or bf16")
    p.add_argument("--hf-dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                   help="transformers' dtype (auto: bfloat16 with --compute bf16, else float32)")
    p.add_argument("--json", help="also write both results to this file")
    a = p.parse_args()
    if a.hf_dtype == "auto":
        a.hf_dtype = "bfloat16" if a.compute == "bf16" else "float32"
    if not os.path.isdir(a.model):
        if a.model != default_model():
            sys.exit(f"{a.model}: no such model directory")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_tiny_t5.py"), "--bench",
                        a.model], check=True)
    sys.path.insert(0, ROOT)
    e = run_encdec(a)
    inputs = e["inputs"]   # the very inputs encdec ran
    h = run_hf(a, inputs)
    ours = e["greedy_ids"][:a.max_new]
    theirs = h["greedy_ids"][:a.max_new]
    diff = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), None)
    print(f"model {a.model}, {a.threads} threads, {a.max_new} new tokens, medians of {a.repeats}")
    print(f"encdec: {e['build']}, --compute {a.compute} --cross-kv {a.cross_kv}; "
          f"transformers on torch {h['torch']} in {h['dtype']}")
    print("greedy tokens vs transformers: " +
          ("identical" if diff is None and len(ours) == len(theirs) else f"first difference at token {diff}"))
    rows = [
        ("encoder ms (1 input)", e["encoder_ms"], h["encoder_ms"], True),
        ("greedy ms/token (full cache)", e["greedy_ms_per_token"]["full"], h["greedy_ms_per_token"], True),
        ("beam 4 ms/step", e["beam4_ms_per_step"], h["beam4_ms_per_step"], True),
        ("greedy tokens/s (1 input)", e["greedy_tokens_per_s"], h["greedy_tokens_per_s"], False),
        (f"greedy tokens/s ({e['batch_inputs']} inputs)", e["batch_tokens_per_s"], h["batch_tokens_per_s"], False),
    ]
    print(f"{'':34s} {'encdec':>10s} {'transformers':>13s} {'speed-up':>9s}")
    for name, x, y, lower in rows:
        print(f"{name:34s} {x:10.2f} {y:13.2f} {(y / x if lower else x / y):8.2f}x")
    pt = e["greedy_ms_per_token"]
    print(f"encdec greedy ms/token by cache mode: full {pt['full']:.3f}, self {pt['self']:.3f} "
          f"({pt['self'] / pt['full']:.1f}x), none {pt['none']:.3f} ({pt['none'] / pt['full']:.1f}x)")
    print(f"encdec beam 4 vs greedy per step: {e['beam4_ms_per_step'] / e['greedy_ms_per_step']:.2f}x "
          f"(transformers {h['beam4_ms_per_step'] / h['greedy_ms_per_step']:.2f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"encdec": e, "transformers": h}, f, indent=1)


if __name__ == "__main__":
    main()
