#!/usr/bin/env python3
"""encdec.Translator's calls besides plain translation against CTranslate2's, on
the CTranslate2 directory bench/text_vs_ctranslate2.py converts (run it once
per shape first: --shape opus-mt-en-de ...), the same threads, in one run:

    .venv/bin/python bench/translator_calls.py [--shape opus-mt-en-de] [--threads 2]
        [--pairs 64] [--batch 16] [--rounds 5] [--lib build/libencdec.so.0]

Rows (float32, tokens in and out on both):
  score      score_batch of --pairs (source, target) pairs, 24 target tokens
             each (the bench's inputs): pairs per second
  translate  translate_batch of --batch examples, greedy, 24 tokens: tokens/s
  +unknowns  the same with replace_unknowns=True (what Argos Translate passes;
             both engines keep the attention as they decode)
  +attention the same with return_attention=True (every hypothesis' attention)
  beam4      translate_batch of --batch examples, beam_size 4, 24 tokens
  +coverage  the same with coverage_penalty=0.2 (every finished hypothesis
             ranked with it, on the attention kept as the search decodes)
  alternatives  translate_batch of --batch examples with return_alternatives=True,
             num_hypotheses 4, greedy continuations, a one-token target
             prefix (the example's first source token; NLLB: fra_Latn):
             tokens/s over every returned hypothesis' tokens
Each (row, engine) runs in a fresh process per round, engines alternating;
the median over the rounds is reported (a warm-up call, then the best of 3
timed calls in each process). Translation rows ask both engines for exactly
24 tokens (min_decoding_length = max_decoding_length = 24).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "encdec", "models")
ROWS = ["score", "translate", "+unknowns", "+attention", "beam4", "+coverage", "alternatives"]
N_TOK = 24


def worker(a):
    d = os.path.join(MODELS, a.shape + "-random-ct2")
    _, toks = json.load(open(os.path.join(MODELS, a.shape + "-random-inputs.json")))
    prefix = [["fra_Latn"]] if a.shape.startswith("nllb") else None
    if a.engine == "ct2":
        import ctranslate2
        tr = ctranslate2.Translator(d, device="cpu", inter_threads=1, intra_threads=a.threads,
                                    compute_type="float32")
    else:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        os.environ["ENCDEC_LIBRARY"] = a.lib
        import encdec
        import encdec._native as N
        orig = N.lib.encdec_model_default_params

        def params():   # the random bench model's weights are not checked for sanity
            p = orig()
            p.no_weight_check = 1
            return p
        N.lib.encdec_model_default_params = params
        tr = encdec.Translator(d, compute_type="float32", intra_threads=a.threads)
    if a.row == "score":
        src = (toks * 64)[:a.pairs]
        tgt = [t[:N_TOK] for t in (toks * 64)[1:a.pairs + 1]]
        run = lambda: tr.score_batch(src, tgt)   # noqa: E731
        count = a.pairs
    else:
        src = (toks * 64)[:a.batch]
        kw = dict(beam_size=1, max_decoding_length=N_TOK, min_decoding_length=N_TOK,
                  target_prefix=prefix * a.batch if prefix else None)
        if a.row == "+unknowns":
            kw["replace_unknowns"] = True
        if a.row == "+attention":
            kw["return_attention"] = True
        if a.row in ("beam4", "+coverage"):
            kw["beam_size"] = 4
        if a.row == "+coverage":
            kw["coverage_penalty"] = 0.2
        if a.row == "alternatives":
            kw.update(return_alternatives=True, num_hypotheses=4,
                      target_prefix=prefix * a.batch if prefix else [t[:1] for t in src])
        run = lambda: tr.translate_batch(src, **kw)   # noqa: E731
        count = a.batch * N_TOK
        if a.row == "alternatives":   # every hypothesis' tokens
            count = sum(len(h) for r in run() for h in r.hypotheses)
    run()
    best = min(timed(run) for _ in range(3))
    print(json.dumps({"rate": count / best}))


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="opus-mt-en-de")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pairs", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--lib", default=os.path.join(ROOT, "build", "libencdec.so.0"))
    p.add_argument("--worker", action="store_true")
    p.add_argument("--engine")
    p.add_argument("--row")
    a = p.parse_args()
    if a.worker:
        return worker(a)
    if not os.path.isdir(os.path.join(MODELS, a.shape + "-random-ct2")):
        sys.exit(f"no {a.shape}-random-ct2 in {MODELS}: run bench/text_vs_ctranslate2.py --shape {a.shape} first")
    got = {}
    for _ in range(a.rounds):
        for row in a.rows.split(","):
            for eng in ("encdec", "ct2"):
                out = subprocess.run([sys.executable, __file__, "--worker", "--engine", eng, "--row", row,
                                      "--shape", a.shape, "--threads", str(a.threads), "--pairs",
                                      str(a.pairs), "--batch", str(a.batch), "--lib", a.lib],
                                     capture_output=True, text=True, check=True).stdout
                got.setdefault((row, eng), []).append(json.loads(out.strip().splitlines()[-1])["rate"])
    unit = {"score": "pairs/s"}
    print(f"{a.shape}, {a.threads} threads, float32, medians of {a.rounds} rounds")
    print("| row | encdec | CTranslate2 | encdec / CTranslate2 |")
    print("|---|---|---|---|")
    for row in a.rows.split(","):
        e, c = statistics.median(got[(row, "encdec")]), statistics.median(got[(row, "ct2")])
        print(f"| {row} ({unit.get(row, 'tokens/s')}) | {e:.1f} | {c:.1f} | {e / c:.2f}x |")


if __name__ == "__main__":
    main()
