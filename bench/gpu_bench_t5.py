#!/usr/bin/env python3
"""encdec's CUDA backend against Hugging Face transformers on a T5 model, on the
same GPU in one run, on the same weights: tokens/s at batch 1 and 64.

Usage (on the GPU machine, from the repository root, with the CUDA build of
scripts/test-cuda.sh build carried there; python3 with torch and transformers):

    python3 bench/gpu_bench_t5.py --encdec build-cuda/encdec \\
        [--shape flan-t5-base] [--batches 1,64] [--tokens 64] [--repeats 3] [--json OUT]

The model: a random-weight T5 v1.1 of the shape's config (flan-t5-base: d_model
768, 12 + 12 layers, 12 heads, gated GELU, untied output, 32128 tokens; or
flan-t5-small), seeded, made here by transformers and saved as safetensors
beside ../shared/assets/t5-tokenizer's spiece.model: both engines load the same
file. The </s> row of the output projection is zero, and both engines are told
min = max = --tokens new tokens, so every sequence has the same length.

Rows (medians over --repeats, after a warm-up): tokens/s of a batch of B copies
of one sentence, greedy: B x tokens over the call's time (encoder included).
encdec: `encdec generate --batch B --json` (its batch_timings: encoder_ms +
decode_ms of the second batch of two, the first warming up), --compute f32
and bf16; transformers: generate() in bfloat16 with sdpa attention. GPU MB:
encdec's process as nvidia-smi saw it at most; transformers'
torch.cuda.max_memory_allocated.

--cpu runs transformers on this machine's CPU instead, and encdec on
--encdec-device (default cuda): a check of the script itself, e.g. against
a build with -DENCDEC_CUDA_EMU=ON (build-emu/encdec); its figures mean nothing.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from gpu_bench import gpu_mb_of  # noqa: E402

SHAPES = {   # d_model, d_ff, layers (encoder = decoder), heads
    "flan-t5-small": (512, 1024, 8, 6),
    "flan-t5-base": (768, 2048, 12, 12),
}
SENTENCE = "translate English to German: The house is wonderful and the garden is large."


def make_model(shape, tok_dir, out, device):
    import torch
    from transformers import T5Config, T5ForConditionalGeneration
    d, ff, L, H = SHAPES[shape]
    cfg = json.load(open(os.path.join(tok_dir, "flan-t5-small.config.json")))
    cfg.update(d_model=d, d_ff=ff, num_layers=L, num_decoder_layers=L, num_heads=H, d_kv=64,
               torch_dtype="float32")
    cfg.pop("task_specific_params", None)
    torch.manual_seed(1234)
    m = T5ForConditionalGeneration(T5Config(**cfg)).eval()
    with torch.no_grad():
        m.lm_head.weight[cfg["eos_token_id"]].zero_()
    os.makedirs(out, exist_ok=True)
    m.save_pretrained(out, safe_serialization=True)
    shutil.copy(os.path.join(tok_dir, "spiece.model"), out)


def encdec_rows(exe, mdir, batch, n_tok, compute, repeats, device):
    """Tokens/s of `batch` inputs (the second of two batches in one process), and peak MB."""
    text = "\n".join([SENTENCE] * (2 * batch)) + "\n"
    cmd = [exe, "generate", "-m", mdir, "--device", device, "--compute", compute, "--batch",
           str(batch), "--max-new-tokens", str(n_tok), "--min-new-tokens", str(n_tok), "--json"]
    rates, peak = [], 0.0
    for _ in range(repeats):
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        p.stdin.write(text)
        p.stdin.close()
        while p.poll() is None:
            if device != "cpu" and shutil.which("nvidia-smi"):
                peak = max(peak, gpu_mb_of(p.pid))
            time.sleep(0.05)
        out = p.stdout.read()
        if p.returncode:
            raise RuntimeError("encdec generate failed: %s\n%s" % (" ".join(cmd), p.stderr.read()[-2000:]))
        lines = [json.loads(x) for x in out.splitlines() if x.strip()]
        last = lines[-1]["batch_timings"]
        toks = last["n_tokens"]
        if toks != batch * n_tok:
            raise RuntimeError("encdec generated %d tokens, not %d" % (toks, batch * n_tok))
        rates.append(toks / ((last["encoder_ms"] + last["decode_ms"]) / 1e3))
    return {"tokens_per_s": statistics.median(rates), "gpu_mb": peak}


def hf_rows(mdir, batch, n_tok, repeats, device):
    import torch
    from transformers import T5ForConditionalGeneration, T5TokenizerFast, T5Tokenizer
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    m = T5ForConditionalGeneration.from_pretrained(mdir, torch_dtype=dtype).to(device).eval()
    try:
        tok = T5TokenizerFast(vocab_file=os.path.join(mdir, "spiece.model"))
    except Exception:   # noqa: BLE001 - the slow tokenizer needs no conversion
        tok = T5Tokenizer(vocab_file=os.path.join(mdir, "spiece.model"))
    ids = tok([SENTENCE] * batch, return_tensors="pt").input_ids.to(device)

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    def run():
        sync()
        t0 = time.perf_counter()
        out = m.generate(input_ids=ids, max_new_tokens=n_tok, min_new_tokens=n_tok, do_sample=False,
                         num_beams=1, synced_gpus=False)
        sync()
        return time.perf_counter() - t0, out

    with torch.inference_mode():
        _, out = run()
        got = out.shape[1] - 1   # less the decoder's start
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times = [run()[0] for _ in range(repeats)]
        peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else 0.0
    return {"tokens_per_s": batch * got / statistics.median(times), "gpu_mb": peak, "tokens": got}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encdec", default=os.path.join(ROOT, "build-cuda", "encdec"))
    ap.add_argument("--shape", default="flan-t5-base", choices=sorted(SHAPES))
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "..", "shared", "assets", "t5-tokenizer"))
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="transformers on the CPU (a check of the script)")
    ap.add_argument("--encdec-device", default="cuda")
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import transformers
    device = "cpu" if a.cpu else "cuda"
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "the CPU (--cpu)"
    print("%s; torch %s, transformers %s; %s" % (gpu, torch.__version__, transformers.__version__,
                                                time.strftime("%Y-%m-%d")))
    work = tempfile.mkdtemp()
    mdir = os.path.join(work, a.shape)
    make_model(a.shape, a.tokenizer, mdir, device)
    rows = []
    print("%s, %d new tokens a sequence, greedy" % (a.shape, a.tokens))
    print("  %-6s %-20s %12s %9s %10s" % ("batch", "engine", "tokens/s", "x HF", "GPU MB"))
    for b in [int(x) for x in a.batches.split(",")]:
        hf = hf_rows(mdir, b, a.tokens, a.repeats, device)
        if hf["tokens"] != a.tokens:
            print("transformers generated %d tokens a sequence, not %d" % (hf["tokens"], a.tokens))
        row = {"batch": b, "transformers": hf}
        for comp in ("f32", "bf16"):
            try:
                row["encdec_" + comp] = encdec_rows(a.encdec, mdir, b, a.tokens, comp, a.repeats,
                                                    a.encdec_device)
            except RuntimeError as e:
                print("encdec %s, batch %d: %s" % (comp, b, e))
        for k in ("encdec_f32", "encdec_bf16", "transformers"):
            if k in row:
                r = row[k]
                print("  %-6d %-20s %12.1f %8.2fx %10.0f" % (b, k, r["tokens_per_s"],
                                                          r["tokens_per_s"] / hf["tokens_per_s"], r["gpu_mb"]))
        rows.append(row)
        sys.stdout.flush()
    shutil.rmtree(work, ignore_errors=True)
    if a.json:
        json.dump({"device": gpu, "date": time.strftime("%Y-%m-%d"), "shape": a.shape,
                   "tokens": a.tokens, "rows": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
