#!/usr/bin/env python3
"""Generate the small random-weight T5-family test models in tests/data/.

Usage (from the repository root):

    .venv/bin/python tools/gen_tiny_t5.py                 # the four test models
    .venv/bin/python tools/gen_tiny_t5.py --scan VARIANT FIRST LAST
                                                          # how SEEDS below were picked
    .venv/bin/python tools/gen_tiny_t5.py --bench [OUTDIR]  # flan-t5-small-shaped model

Writes, in Hugging Face layout (what AutoModelForSeq2SeqLM / AutoTokenizer read),
tests/data/<dir>/ for each variant of tools/t5_oracle.py VARIANTS:

  config.json             as config.save_pretrained writes it (sorted keys, HF's defaults
                          left out: a tied model has no "tie_word_embeddings" key, as
                          t5-small's own config); pad 0, eos 1, decoder_start 0,
                          layer_norm_epsilon 1e-6, dropout_rate 0, an explicit n_positions
                          (HF ignores it; the engine's input limit).
  generation_config.json  GenerationConfig.from_model_config(config).save_pretrained.
  model.safetensors       every parameter HF save_pretrained stores (shared.weight, not its
                          encoder/decoder.embed_tokens aliases; lm_head.weight only when
                          untied), in the variant's dtype, metadata {"format": "pt"}.
  spiece.model / tokenizer.json   copies of tests/data/spm/ (made by gen_small_spm.py).

  variant  dir                  HF class / model_type              FFN         tied  dtype
  t5-v1_0  tiny-random-t5-v1_0  T5ForConditionalGeneration / t5    relu        yes   float32
  t5-v1_1  tiny-random-t5-v1_1  T5ForConditionalGeneration / t5    gated-gelu  no    bfloat16
  mt5      tiny-random-mt5      MT5ForConditionalGeneration / mt5  gated-gelu  no    float16
  umt5     tiny-random-umt5     UMT5ForConditionalGeneration / umt5 gated-gelu no    float16

  variant  d_model heads x d_kv  d_ff  layers (enc+dec)  vocab_size (known)  buckets/max_dist  n_positions
  t5-v1_0  64      4 x 16        128   2+2               904  (t5like 900)   32/128            512
  t5-v1_1  64      3 x 16 = 48   96    2+3               928  (t5like 900)   16/20             512
  mt5      64      4 x 16        128   2+2               1152 (bytefb 1100)  32/128            64
  umt5     64      4 x 16        128   2+3               928  (t5like 900)   16/20             512

  tokenizer files: t5-v1_0 spiece.model; t5-v1_1 spiece.model + tokenizer.json; mt5
  spiece.model; umt5 tokenizer.json. gated-gelu is HF's gelu_new (the tanh form). umT5 has
  a relative attention bias in every self-attention layer of both stacks, t5 / mt5 in
  layer 0 only. With 16/20 buckets the golden lengths reach the log-spaced buckets in both
  stacks (encoder |j - i| >= 4, decoder distance >= 8) and the saturated one in the
  encoder (|j - i| >= 20; the longest input is 24 tokens). mt5's n_positions 64 is
  deliberately small (a limit an engine can read; HF ignores the key).

Weights (t5_oracle.random_weights): one torch.Generator seeded with SEEDS[variant],
sorted parameter names, spreads SCALES[variant]: large on purpose so that the logits are
peaky (greedy top-1 margins well above float noise). Two rows of the output matrix
(lm_head, or the shared embedding when tied) are set by rule: rows of ids the tokenizer
does not know (vocabulary padding) are zero, and the </s> row is multiplied by
"eos_gain" so that some golden sequences end with </s> before max_new_tokens while others
run to the limit. SEEDS were picked with --scan over seeds 0..29 (see pick() for the
criteria: greedy margin, some but not all sequences ending with </s>, varied tokens, no
<pad>/<unk> generated, no beam candidate tie), preferring large margins and varied
sequence ends among the seeds that pass. After writing, each model is loaded back
with from_pretrained(dir, torch_dtype=float32) and its golden-batch decode is printed.

--bench writes a flan-t5-small-shaped model (the config of
../shared/assets/t5-tokenizer/flan-t5-small.config.json, vocab 32128, float32, ~300 MB;
NOT for the repository) to OUTDIR, default ${XDG_CACHE_HOME:-~/.cache}/encdec/models/
flan-t5-small-random, with that folder's spiece.model. Spreads are HF's own T5
initialisation (t5 _init_weights, factor 1); the </s> row of lm_head is zero so that greedy
decoding never stops (benchmarks generate a fixed number of tokens): checked by a 64-token
greedy decode.

Everything is deterministic: the same script and library versions give byte-identical
files. Golden values: tools/golden_t5.py.
"""

import os
import shutil
import sys

import torch
from safetensors.torch import save_file

import t5_oracle as oracle

SEEDS = {"t5-v1_0": 18, "t5-v1_1": 9, "mt5": 22, "umt5": 20}  # picked by --scan 0 29 (see pick)
# Untied models: logits = lm_head . h, spread "head" x |h| ~ 3 x 8. The tied v1.0 model
# scores with the embedding itself; its logit scale comes from "final_gain" instead of a
# large embedding spread (which made every step predict its own input token), and its
# feed-forward dominates the residual stream for the same reason.
UNTIED = {"embed": 1.0, "head": 3.0, "qk": 0.15, "vo": 0.3, "ff": 0.6, "rel": 2.0, "ln": 0.1,
          "eos_gain": 1.6, "final_gain": 1.0}
SCALES = {
    "t5-v1_0": {"embed": 2.0, "qk": 0.15, "vo": 0.3, "ff": 0.6, "rel": 2.0, "ln": 0.1,
                "eos_gain": 1.6, "final_gain": 8.0},
    "t5-v1_1": UNTIED,
    "mt5": UNTIED,
    "umt5": UNTIED,
}
BENCH_SEED = 1234
# The configs above fix the sizes: t5-v1_0 (f32, tied 904 x 64 embedding) is the largest
# at ~0.91 MB; umt5 (f16, untied 928 x 64 embedding and lm_head, 75 KB tokenizer.json) ~0.83 MB.
MAX_DIR_BYTES = 1_000_000


def write_static(variant):
    """config.json, generation_config.json and the tokenizer files of variant's dir."""
    v = oracle.VARIANTS[variant]
    out = oracle.model_dir(variant)
    os.makedirs(out, exist_ok=True)
    config = oracle.hf_config(v["config"], v["dtype"])
    oracle.write_config_files(out, config)
    oracle.copy_tokenizer(out, v["spm"], v["tokenizer"])
    return config


def make_weights(variant, config, seed):
    v = oracle.VARIANTS[variant]
    model = oracle.new_model(config)
    return oracle.random_weights(model, v["config"]["tie_word_embeddings"], seed, v["dtype"],
                                 SCALES[variant], v["n_tok"])


def assess(variant, model, batch):
    """Decode the golden batch with model (f32); returns a dict of what pick() judges."""
    _, _, input_ids, mask = batch
    v = oracle.VARIANTS[variant]
    greedy, _ = oracle.hf_greedy(model, input_ids, mask)
    enc = oracle.encoder_out(model, input_ids, mask)
    logits = oracle.teacher_forced(model, enc, mask, greedy)
    margins = []
    for b, s in enumerate(greedy):
        top = torch.topk(logits[b, :len(s)], 2, dim=-1).values
        margins += (top[:, 0] - top[:, 1]).tolist()
    beam, scores = oracle.hf_beam(model, input_ids, mask, **v["beam"])
    _, _, gap = oracle.plain_beam(model, enc, mask, **v["beam"])
    seqs = greedy + beam
    return {
        "greedy": greedy, "beam": beam, "scores": scores, "margin": min(margins), "gap": gap,
        "eos_early": sum(1 for s in seqs if s[-1] == oracle.EOS and len(s) < oracle.MAX_NEW),
        "greedy_eos": sum(1 for s in greedy if s[-1] == oracle.EOS),
        "greedy_full": sum(1 for s in greedy if s[-1] != oracle.EOS),
        "min_distinct": min(len(set(s)) for s in seqs if len(s) >= 4) if any(len(s) >= 4 for s in seqs) else 0,
        "bad": sum(1 for s in seqs for t in s if t in (oracle.PAD, oracle.UNK)),
        "short": sum(1 for s in seqs if len(s) < 3),
    }


def pick(a):
    """The criteria a seed must meet: greedy margin > 0.05, beam candidates never within
    1e-4 of a tie, at least one greedy sequence ending with </s> and one running to the
    limit, no sequence a one- or two-token loop, no <pad>/<unk> generated, at most one
    sequence shorter than 3 tokens."""
    return (a["margin"] > 0.05 and a["gap"] > 1e-4 and a["greedy_eos"] >= 1 and a["greedy_full"] >= 1
            and a["min_distinct"] >= 3 and a["bad"] == 0 and a["short"] <= 1)


def describe(a):
    return ("margin %.3f gap %.2e eos(greedy) %d full(greedy) %d eos-early(all) %d min-distinct %d bad %d short %d"
            % (a["margin"], a["gap"], a["greedy_eos"], a["greedy_full"], a["eos_early"], a["min_distinct"],
               a["bad"], a["short"]))


def scan(variant, first, last):
    config = write_static(variant)
    batch = oracle.encode(variant)
    for seed in range(first, last + 1):
        w = make_weights(variant, config, seed)
        a = assess(variant, oracle.model_with(config, w), batch)
        print("seed %3d %s %s" % (seed, "OK  " if pick(a) else "    ", describe(a)), flush=True)


def generate(variant):
    config = write_static(variant)
    out = oracle.model_dir(variant)
    w = make_weights(variant, config, SEEDS[variant])
    save_file(w, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    total = 0
    for fn in sorted(os.listdir(out)):
        sz = os.path.getsize(os.path.join(out, fn))
        total += sz
        print("  %-24s %8d bytes" % (fn, sz))
    print("  total %d bytes, %d tensors, %d parameters" % (total, len(w), sum(t.numel() for t in w.values())))
    assert total < MAX_DIR_BYTES, total
    model = oracle.load_model(variant)  # the saved files, read back by transformers
    a = assess(variant, model, oracle.encode(variant))
    print("  " + describe(a))
    for s in a["greedy"]:
        print("  greedy", s)
    for s, sc in zip(a["beam"], a["scores"]):
        print("  beam   %.4f %s" % (sc, s))
    assert pick(a), "seed %d no longer meets the criteria" % SEEDS[variant]


def bench(out):
    """flan-t5-small-shaped random model (see the docstring)."""
    from transformers import AutoTokenizer, GenerationConfig, T5Config, T5ForConditionalGeneration

    os.makedirs(out, exist_ok=True)
    shutil.copyfile(os.path.join(oracle.T5_ASSETS, "flan-t5-small.config.json"), os.path.join(out, "config.json"))
    shutil.copyfile(os.path.join(oracle.T5_ASSETS, "spiece.model"), os.path.join(out, "spiece.model"))
    config = T5Config.from_pretrained(out)
    GenerationConfig.from_model_config(config).save_pretrained(out)
    model = T5ForConditionalGeneration(config)
    # HF's T5 _init_weights spreads (factor 1), drawn from one seeded generator in sorted order
    d, dkv, H, dff = config.d_model, config.d_kv, config.num_heads, config.d_ff
    std = {"shared": 1.0, "lm_head": 1.0, "q": (d * dkv) ** -0.5, "k": d ** -0.5, "v": d ** -0.5,
           "o": (H * dkv) ** -0.5, "wi": d ** -0.5, "wi_0": d ** -0.5, "wi_1": d ** -0.5, "wo": dff ** -0.5,
           "relative_attention_bias": d ** -0.5}
    g = torch.Generator().manual_seed(BENCH_SEED)
    w = {}
    for name in oracle.stored_names(model, config.tie_word_embeddings):
        shape = tuple(model.state_dict()[name].shape)
        if name.endswith("layer_norm.weight"):
            v = torch.ones(shape)
        else:
            v = std[name.split(".")[-2]] * torch.randn(shape, generator=g)
        if name == "lm_head.weight":
            v[oracle.EOS] = 0.0  # </s> logit exactly 0: never the max of 32128 random logits
        w[name] = v.contiguous()
    save_file(w, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    model.load_state_dict(w, strict=False)
    model.tie_weights()
    model.eval()
    tok = AutoTokenizer.from_pretrained(out)
    enc = tok(["translate English to German: The house is wonderful."], return_tensors="pt")
    with torch.no_grad():
        seq = model.generate(**enc, do_sample=False, max_new_tokens=64, synced_gpus=False)[0].tolist()
    print("bench greedy (%d tokens): %s" % (len(seq) - 1, seq[1:]))
    assert len(seq) - 1 == 64 and oracle.EOS not in seq
    for fn in sorted(os.listdir(out)):
        print("  %-24s %10d bytes" % (fn, os.path.getsize(os.path.join(out, fn))))


def main(argv):
    if argv[:1] == ["--scan"]:
        scan(argv[1], int(argv[2]), int(argv[3]))
    elif argv[:1] == ["--bench"]:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        bench(argv[1] if len(argv) > 1 else os.path.join(cache, "encdec", "models", "flan-t5-small-random"))
    else:
        for variant in oracle.VARIANTS:
            print(variant, "->", oracle.model_dir(variant))
            generate(variant)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
