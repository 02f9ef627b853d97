#!/usr/bin/env python3
"""Goldens for the attention encdec returns for T5 models (return_attention,
encdec_text_attention): CTranslate2 reads a T5 model's last decoder layer's
first head as its alignment, so the rows are that head's cross-attention
over the input, at the step that chose each token.

  tests/data/t5-golden/attention.json: for the seeded random T5 v1.1 of
  tests/data (tiny-random-t5-v1_1), per case the input ids (</s> last), a
  sequence of ids (the tokens after the decoder's start, </s> last), the
  rows transformers computes in float64 (T5ForConditionalGeneration,
  output_attentions, the decoder fed its start and the sequence but its
  last token, causal), and each row's sensitivity: how far float32-sized
  rounding moves it (every Linear and T5LayerNorm output times
  1 + 2^-24 N(0, 1), seeded, the largest change over 4 trials). Cases are
  drawn at random (seeded) and kept where every row moves by 1e-3 or less.

Nothing here reads the project's sources. Run from the repository root:

    .venv/bin/python tools/golden_t5_attention.py
"""
import json
import os
import random

import torch
from transformers import T5ForConditionalGeneration

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data")
MODEL = os.path.join(DATA, "tiny-random-t5-v1_1")
OUT = os.path.join(DATA, "t5-golden", "attention.json")
N_CASES = 6


@torch.no_grad()
def rows(m, ids, seq):
    start = m.config.decoder_start_token_id
    o = m(input_ids=torch.tensor([ids]), decoder_input_ids=torch.tensor([[start] + seq[:-1]]),
          output_attentions=True)
    return o.cross_attentions[-1][0, 0]   # [len(seq), len(ids)]


def sensitivity(m, ids, seq, ref, trials=4):
    gen = torch.Generator().manual_seed(20261203)

    def hook(mod, inp, out):
        return out * (1 + 2.0 ** -24 * torch.randn(out.shape, generator=gen, dtype=out.dtype))

    hooks = [mod.register_forward_hook(hook) for mod in m.modules()
             if isinstance(mod, torch.nn.Linear) or type(mod).__name__ == "T5LayerNorm"]
    s = torch.zeros(ref.shape[0], dtype=torch.float64)
    try:
        for _ in range(trials):
            s = torch.maximum(s, (rows(m, ids, seq) - ref).abs().max(dim=1).values)
    finally:
        for h in hooks:
            h.remove()
    return s


def main():
    m = T5ForConditionalGeneration.from_pretrained(MODEL, torch_dtype=torch.float64).eval()
    V, eos = m.config.vocab_size, m.config.eos_token_id
    rng = random.Random(11)
    cases = []
    for _ in range(20 * N_CASES):
        ids = [rng.randrange(3, min(V, 1000)) for _ in range(rng.randint(3, 20))] + [eos]
        seq = [rng.randrange(3, min(V, 1000)) for _ in range(rng.randint(1, 14))] + [eos]
        ref = rows(m, ids, seq)
        s = sensitivity(m, ids, seq, ref)
        if float(s.max()) > 1e-3:
            continue
        r6 = lambda v: float("%.7g" % v)   # noqa: E731
        cases.append({"ids": ids, "seq": seq, "attention": [[r6(v) for v in r] for r in ref.tolist()],
                      "sensitivity": [r6(v) for v in s.tolist()]})
        if len(cases) == N_CASES:
            break
    with open(OUT, "w") as f:
        json.dump({"model": "tiny-random-t5-v1_1", "layer": -1, "head": 0, "cases": cases}, f)
        f.write("\n")
    print("%s: %d cases" % (OUT, len(cases)))


if __name__ == "__main__":
    main()
