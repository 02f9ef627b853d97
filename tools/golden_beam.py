#!/usr/bin/env python3
"""Writes tests/data/beam_golden.json: what Hugging Face transformers'
generate() (beam search, and greedy) returns for a fake deterministic
"model", the independent reference for src/decode/beam.c and batch.c.

Re-run (from the repository root) after changing the cases:

    .venv/bin/python tools/golden_beam.py [tests/data/beam_golden.json]

The model (defined identically in tests/test_beam.c, fake_logits): the
logits after a token history are a function of a 64-bit hash of the whole
history. History = [group seed] + prompt + generated tokens; the seed
stands for the input a group decodes (the C side prepends it itself, so
the prompt the strategy sees is just `prompt`). For a history of length n
with hash h:

    a = h % 4001, b = 1 + (h >> 17) % 4000
    logit[v]   = (((a + b * v) % 4001) - 2000) / 512      distinct per row (4001 is prime)
    logit[eos] = (2 * ((h >> 40) % 2048) + 1 - 2048) / 1024 + n / 4

All values are exact in float32, and eos (an odd multiple of 1/1024) never
ties another token of its row (multiples of 1/512), so torch.topk's order
is unambiguous. Eos grows likelier with length, so hypotheses end at
different lengths. The hash: h = 0x9E3779B97F4A7C15; for each token t:
h = ((h ^ (t + 1)) * 0xBF58476D1CE4E5B9) mod 2^64; h ^= h >> 31.

torch.topk's order among exactly equal scores is unspecified, and beams of
different histories can tie exactly in float32; a case where two of a
group's top 2 * n_beams candidates tie at some step is ambiguous, so its
seeds are moved until none do.

Recorded per case: for every returned sequence, the generated tokens (eos
included when the hypothesis ended with it; HF's padding dropped), the
per-token processed log-probabilities (output_scores + beam_indices) and
sequences_scores. Greedy cases record tokens and the sum of
log_softmax(processed logits) of the chosen tokens.
"""
import json
import sys

import numpy as np
import torch
from transformers import GenerationConfig, PretrainedConfig, PreTrainedModel
from transformers.generation import GenerationMixin
from transformers.generation import beam_search
from transformers.modeling_outputs import CausalLMOutput

M64 = (1 << 64) - 1
EOS = 3
PAD = 2


def history_hash(tokens):
    h = 0x9E3779B97F4A7C15
    for t in tokens:
        h = ((h ^ (int(t) + 1)) * 0xBF58476D1CE4E5B9) & M64
        h ^= h >> 31
    return h


def fake_logits(tokens, vocab):
    h = history_hash(tokens)
    a, b = h % 4001, 1 + (h >> 17) % 4000
    row = (((a + b * np.arange(vocab, dtype=np.int64)) % 4001) - 2000) / 512.0
    row[EOS] = (2 * ((h >> 40) % 2048) + 1 - 2048) / 1024.0 + len(tokens) / 4.0
    return row


class FakeConfig(PretrainedConfig):
    model_type = "encdec_fake"


class FakeLM(PreTrainedModel, GenerationMixin):
    config_class = FakeConfig

    def __init__(self, config):
        super().__init__(config)
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids=None, **kwargs):
        B, T = input_ids.shape
        logits = torch.zeros(B, T, self.config.vocab_size, dtype=torch.float32)
        for i in range(B):
            logits[i, -1] = torch.tensor(fake_logits(input_ids[i].tolist(), self.config.vocab_size),
                                         dtype=torch.float32)
        return CausalLMOutput(logits=logits)


class TieWatch:
    """Wraps BeamSearchScorer.process: notes exact ties among each group's
    top candidates (next_scores rows come sorted)."""

    def __init__(self):
        self.tied = False
        self.orig = beam_search.BeamSearchScorer.process

    def __enter__(self):
        def process(scorer, input_ids, next_scores, *args, **kwargs):
            rows = next_scores.tolist()
            self.tied |= any(a == b for r in rows for a, b in zip(r, r[1:]) if a > -1e8)
            return self.orig(scorer, input_ids, next_scores, *args, **kwargs)
        beam_search.BeamSearchScorer.process = process
        return self

    def __exit__(self, *exc):
        beam_search.BeamSearchScorer.process = self.orig


def make_model(vocab):
    cfg = FakeConfig(vocab_size=vocab, eos_token_id=EOS, pad_token_id=PAD, bos_token_id=1)
    return FakeLM(cfg).eval()


def generated(seq, n_prompt):
    """HF's row -> our tokens: drop the prompt, cut after the first eos."""
    out = []
    for t in seq[n_prompt:]:
        out.append(int(t))
        if t == EOS:
            break
    return out


def run(case, beams):
    model = make_model(case["vocab"])
    prompts = [[s] + case["prompt"] for s in case["seeds"]]
    ids = torch.tensor(prompts, dtype=torch.long)
    gc = GenerationConfig(
        max_new_tokens=case["max_new"], do_sample=False, use_cache=False,
        eos_token_id=EOS, pad_token_id=PAD, bos_token_id=1,
        return_dict_in_generate=True, output_scores=True,
        suppress_tokens=case["suppress"] or None,
        begin_suppress_tokens=case["begin_suppress"] or None,
        num_beams=case.get("n_beams", 1),
        num_return_sequences=case.get("n_return", 1),
        length_penalty=case.get("length_penalty", 1.0),
        early_stopping={0: False, 1: True, 2: "never"}[case.get("early_stopping", 0)])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gc,
                             synced_gpus=False)
    n_prompt = ids.shape[1]
    res = []
    for i, seq in enumerate(out.sequences.tolist()):
        toks = generated(seq, n_prompt)
        if beams:
            bi = out.beam_indices[i].tolist()
            lps = [float(out.scores[t][bi[t], tok]) for t, tok in enumerate(toks)]
            score = float(out.sequences_scores[i])
        else:
            lps = [float(torch.log_softmax(out.scores[t][i], -1)[tok]) for t, tok in enumerate(toks)]
            score = sum(lps)
        # 7 decimals: far inside the test's 1e-4
        res.append({"tokens": toks, "lps": [round(x, 7) for x in lps], "score": round(score, 7)})
    return res


def beam_cases():
    cases = []

    def add(vocab, n_beams, lp, es, n_return, max_new, seeds, suppress=(), begin=(), prompt=(1,)):
        cases.append({"vocab": vocab, "n_beams": n_beams, "length_penalty": lp,
                      "early_stopping": es, "n_return": n_return, "max_new": max_new,
                      "seeds": list(seeds), "suppress": list(suppress),
                      "begin_suppress": list(begin), "prompt": list(prompt)})

    for vocab in (50, 1000):
        for n_beams in (2, 4, 5):
            for lp in (1.0, 0.6, 2.0, -0.5):
                for es in (1, 0):
                    n_return = min(n_beams, 1 + (len(cases) % 4))
                    max_new = 5 + (len(cases) * 7) % 16
                    seeds = [1000 + 17 * len(cases) + g for g in range(2 + len(cases) % 2)]
                    add(vocab, n_beams, lp, es, n_return, max_new, seeds)
    # early_stopping "never", rules (suppressed and begin-suppressed tokens,
    # eos among them), a longer prompt, a single group, wide beams
    add(50, 4, 1.0, 2, 2, 12, [501, 502, 503])
    add(50, 4, 2.0, 2, 4, 14, [511, 512])
    add(1000, 3, -0.5, 2, 1, 10, [521, 522])
    add(50, 3, -0.5, 2, 2, 14, [581, 582, 583])
    add(50, 5, -1.0, 2, 3, 16, [591, 592])
    add(50, 2, 0.0, 2, 1, 12, [601, 602, 603])
    add(50, 4, 1.0, 0, 2, 12, [531, 532], suppress=[7, 11], begin=[EOS, 5], prompt=[1, 9, 4])
    add(1000, 5, 0.6, 1, 3, 16, [541, 542, 543], suppress=[0, 999], begin=[EOS])
    add(50, 3, 1.0, 1, 3, 8, [551, 552], suppress=[EOS])
    add(50, 1 * 8, 1.0, 0, 4, 20, [561])
    add(1000, 16, 0.6, 0, 5, 20, [571, 572])
    return cases


def greedy_cases():
    cases = []
    for k, (vocab, max_new, sup, begin) in enumerate([
            (50, 20, [], []), (1000, 15, [], []), (50, 12, [7, 11], [EOS]),
            (1000, 20, [0], [EOS, 5]), (50, 5, [], [])]):
        cases.append({"vocab": vocab, "max_new": max_new, "suppress": sup, "begin_suppress": begin,
                      "prompt": [1], "seeds": [2000 + 10 * k + g for g in range(3)]})
    return cases


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/beam_golden.json"
    doc = {"eos": EOS, "beam": [], "greedy": []}
    for c in beam_cases():
        while True:
            with TieWatch() as w:
                c["results"] = run(c, True)
            if not w.tied:
                break
            print(f"seeds {c['seeds']}: tied candidates, moving on")
            c["seeds"] = [s + 100 for s in c["seeds"]]
        doc["beam"].append(c)
    for c in greedy_cases():
        c["results"] = run(c, False)
        doc["greedy"].append(c)
    with open(out_path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    nb = sum(len(c["results"]) for c in doc["beam"])
    print(f"{out_path}: {len(doc['beam'])} beam cases ({nb} sequences), {len(doc['greedy'])} greedy cases")


if __name__ == "__main__":
    main()
