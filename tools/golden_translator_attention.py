#!/usr/bin/env python3
"""Goldens for encdec.Translator's return_attention, replace_unknowns,
min_decoding_length and scores, on the CTranslate2 directories of
tools/golden_bart_ct2.py (tests/data/tiny-random-{marian,m2m100,bart}-ct2):

  tests/data/bart-golden/ct2-attention.json, per model (and score_batch's
  values: "score" below):
    cases    source token lists (pieces both the vocabulary and the Hugging
             Face tokenizer know, m2m100's with its source language first;
             one with a piece the vocabulary lacks, read as <unk>) and a
             target prefix with two <unk> (CTranslate2's replace_unknowns
             replaces a prefix's <unk> as it does a generated one)
    runs     CTranslate2's translate_batch (ctranslate2 from PyPI, float32)
             under each option set: hypotheses with replace_unknowns, the
             same without it, scores (return_scores), and the lengths
             min_decoding_length gives. Beam runs translate one example
             per call: CTranslate2 4.8.5's beam search over a batch of
             several examples returns another row than the example's own
             as each hypothesis' first attention row (its gather of the
             first, unexpanded step), so a <unk> there is replaced from it;
             greedy runs are batches.
    attention for each run's hypotheses (without replacement): the
             cross-attention transformers computes (the model's last decoder
             layer, its first head: CTranslate2's alignment_layer -1 and
             alignment_heads 1, which its converter writes for these
             models), decoding the hypothesis after the decoder's start, in
             float64; per row its sensitivity (how far float32-sized
             rounding moves it); and CTranslate2's own largest distance
             from it, for the record.

The cases kept are those whose every replaced <unk> attends to one source
position by a margin (float64 top two apart by 0.05 or more), whose rows
all have a sensitivity of 1e-3 or less (these random models' attention is
sharp: a near-tie a few layers down makes a row chaotic, moving it by 0.1 to
1 between float32 engines), and whose hypotheses hold only pieces the
tokenizer spells (the random models' padding rows are spelled differently
by the two libraries).

Nothing here reads the project's sources. Run from the repository root:

    .venv/bin/python tools/golden_translator_attention.py
"""
import json
import os
import random
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_bart_ct2 as gc  # noqa: E402

import torch  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "tests", "data")
N_CASES = 16
MAX = 12
RUNS = [{"beam_size": 1, "min_decoding_length": 1}, {"beam_size": 1, "min_decoding_length": 6},
        {"beam_size": 3, "min_decoding_length": 1, "num_hypotheses": 2},
        {"beam_size": 1, "min_decoding_length": 1, "length_penalty": 0.2, "return_end_token": True}]


def cases(variant, vocab, tok, eos):
    ok = [t for i, t in enumerate(vocab) if i >= 4 and tok.convert_tokens_to_ids(t) == i
          and not t.startswith("__") and not t.startswith(">>") and not t.startswith("<")]
    rng = random.Random(7)
    out = []
    for _ in range(8 * N_CASES):
        src = [rng.choice(ok) for _ in range(rng.randint(3, 16))] + [eos]
        if variant == "m2m100":
            src = ["__en__"] + src
        out.append(src)
    out[1] = out[1][:2] + ["NOT_A_PIECE"] + out[1][2:]
    prefix = (["__de__"] if variant == "m2m100" else []) + ["<unk>", "<unk>"]
    return out, prefix


@torch.no_grad()
def forced_of(m, x, dec, nxt):
    """At each decoder step (one position at a time through transformers'
    cache, as CTranslate2 decodes; this torch cannot build a whole pass's
    float64 causal mask): the last layer's first head over the source
    [n, T], and the log-probability of the next token nxt[n] [n]."""
    enc = m.get_encoder()(input_ids=x)
    past, att, lp = None, [], []
    for n in range(len(dec)):
        o = m(encoder_outputs=enc, decoder_input_ids=torch.tensor([[dec[n]]]), past_key_values=past,
              use_cache=True, output_attentions=True)
        past = o.past_key_values
        att.append(o.cross_attentions[-1][0, 0, 0])
        lp.append(o.logits[0, 0].log_softmax(-1)[nxt[n]])
    return torch.stack(att), torch.stack(lp)


def sensitive(m64, src_ids, start, seq, trials=4):
    """forced_of over seq (the tokens after the decoder's start) in float64,
    and how far float32-sized rounding moves each row and log-probability
    (golden_bart.row_sensitivity's measure: every Linear and LayerNorm
    output times 1 + 2^-24 N(0, 1), seeded, the largest change over the
    trials): these random models are sharp, and a row that a near-tie
    several layers down makes chaotic is told apart from one a float32
    engine must reproduce."""
    x, dec = torch.tensor([src_ids]), [start] + seq[:-1]
    att, lp = forced_of(m64, x, dec, seq)
    gen = torch.Generator().manual_seed(20261203)

    def hook(mod, inp, out):
        return out * (1 + 2.0 ** -24 * torch.randn(out.shape, generator=gen, dtype=out.dtype))

    hooks = [mod.register_forward_hook(hook) for mod in m64.modules()
             if isinstance(mod, (torch.nn.Linear, torch.nn.LayerNorm))]
    s_att = torch.zeros(len(dec), dtype=torch.float64)
    s_lp = torch.zeros(len(dec), dtype=torch.float64)
    try:
        for _ in range(trials):
            a, p = forced_of(m64, x, dec, seq)
            s_att = torch.maximum(s_att, (a - att).abs().max(dim=1).values)
            s_lp = torch.maximum(s_lp, (p - lp).abs())
    finally:
        for h in hooks:
            h.remove()
    r6 = lambda v: float("%.6g" % v)   # noqa: E731
    return ([[r6(v) for v in r] for r in att.tolist()], [r6(v) for v in s_att.tolist()],
            [r6(v) for v in lp.tolist()], [r6(v) for v in s_lp.tolist()])


def attention(m64, src_ids, start, hyp_ids):
    """Row t: the attention at the step that chose hyp_ids[t], float64, and
    each row's sensitivity."""
    att, s_att, _, _ = sensitive(m64, src_ids, start, hyp_ids)
    return att, s_att


def golden(variant):
    import ctranslate2
    from transformers import AutoTokenizer

    out_dir = os.path.join(DATA, "tiny-random-%s-ct2" % variant)
    vocab = json.load(open(os.path.join(out_dir, "shared_vocabulary.json"), encoding="utf-8"))
    index = {t: i for i, t in reversed(list(enumerate(vocab)))}
    cfg = json.load(open(os.path.join(out_dir, "config.json"), encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = gc.hf_model(variant, tmp)   # the weights the directory was converted from
        tok = AutoTokenizer.from_pretrained(tmp, use_fast=variant == "bart")
    model = model.to(torch.float64).eval()
    srcs, prefix = cases(variant, vocab, tok, cfg["eos_token"])
    tr = ctranslate2.Translator(out_dir, device="cpu", compute_type="float32")
    # transformers' ids of the pieces (Marian's directory leaves out its <pad> row, so its
    # indices are not the model's)
    start, unk = model.config.decoder_start_token_id, tok.convert_tokens_to_ids("<unk>")
    hf_id = lambda t: tok.convert_tokens_to_ids(t) if t in index else unk   # noqa: E731
    ids_of = lambda toks: [hf_id(t) for t in toks]   # noqa: E731

    def translate(batch, opts, **kw):
        if opts["beam_size"] > 1:
            return [tr.translate_batch([s], target_prefix=[prefix], max_decoding_length=MAX, **opts, **kw)[0]
                    for s in batch]
        return tr.translate_batch(batch, target_prefix=[prefix] * len(batch), max_decoding_length=MAX,
                                  **opts, **kw)

    keep = []
    runs = []
    for opts in RUNS:
        rep = translate(srcs, opts, replace_unknowns=True, return_scores=True)
        raw = translate(srcs, opts, return_scores=True, return_attention=True)
        run = []
        for i, (r, w) in enumerate(zip(rep, raw)):
            hyps = []
            good = True
            for k, h in enumerate(w.hypotheses):
                if any(t not in index or tok.convert_tokens_to_ids(t) in (None, unk) and t != "<unk>"
                       for t in h):
                    good = False
                rows, dist = attention(model, ids_of(srcs[i]), start, ids_of(h)) if good else ([], [])
                for t, piece in enumerate(h):
                    if good and piece == "<unk>":
                        top = sorted(rows[t][:len(srcs[i])], reverse=True)
                        good = good and top[0] - top[1] >= 0.05
                # CTranslate2's own attention, for the record of how far apart two float32 runs are
                ct2_dev = max((abs(a - b) for ra, rb in zip(w.attention[k], rows) for a, b in zip(ra, rb)),
                              default=0.0)
                good = good and all(d <= 1e-3 for d in dist)
                hyps.append({"raw": h, "attention": rows, "sensitivity": dist, "ct2_dist": ct2_dev})
            run.append({"hypotheses": r.hypotheses, "scores": r.scores, "raw": hyps, "good": good})
        runs.append({"options": opts, "results": run})
    keep = [i for i in range(len(srcs)) if all(run["results"][i]["good"] for run in runs)][:N_CASES]
    print(f"{variant}: {len(keep)} cases of {len(srcs)} kept")
    assert len(keep) >= 8, (variant, len(keep))
    for run in runs:
        run["results"] = [{k: v for k, v in run["results"][i].items() if k != "good"} for i in keep]
        replaced = sum(h != w["raw"] for res in run["results"] for h, w in zip(res["hypotheses"], res["raw"]))
        print(f"  {run['options']}: {replaced} hypotheses with replacements")
    return {"model_dir": os.path.relpath(out_dir, ROOT), "max_decoding_length": MAX,
            "cases": [{"source": srcs[i], "prefix": prefix} for i in keep], "runs": runs,
            "score": scoring(variant, tr, model, tok, vocab, cfg, ids_of, start)}


def scoring(variant, tr, model, tok, vocab, cfg, ids_of, start):
    """score_batch: CTranslate2's tokens and log-probabilities of targets
    (pieces both tokenizers spell; one empty, scoring the end token alone)
    under offsets 0 and 2, and each position's sensitivity (transformers'
    float64, perturbed as above); the pairs kept are those whose every
    position moves by 1e-3 or less."""
    srcs, _ = cases(variant, vocab, tok, cfg["eos_token"])
    tgts, _ = cases(variant, vocab, tok, cfg["eos_token"])
    rng = random.Random(11)
    rng.shuffle(tgts)
    tgts = [t[:-1] for t in tgts]   # without </s>: score_batch appends it
    tgts[0] = ["__de__"] if variant == "m2m100" else []
    if variant == "m2m100":
        tgts = [["__de__"] + t[1:] for t in tgts]
    keep, sens = [], []
    for src, tgt in zip(srcs, tgts):
        _, _, _, s_lp = sensitive(model, ids_of(src), start, ids_of(tgt + [cfg["eos_token"]]))
        if max(s_lp) <= 1e-3:
            keep.append((src, tgt))
            sens.append(s_lp)
        if len(keep) == N_CASES:
            break
    print(f"  score: {len(keep)} pairs kept")
    assert len(keep) >= 8, (variant, len(keep))
    src, tgt = [k[0] for k in keep], [k[1] for k in keep]
    runs = {str(off): [{"tokens": r.tokens, "log_probs": r.log_probs}
                       for r in tr.score_batch(src, tgt, offset=off)] for off in (0, 2)}
    return {"source": src, "target": tgt, "sensitivity": sens, "offsets": runs}


def main():
    warnings.filterwarnings("ignore")
    doc = {"source": "tools/golden_translator_attention.py, ctranslate2 %s, transformers %s" % (
        __import__("ctranslate2").__version__, __import__("transformers").__version__),
           "models": {v: golden(v) for v in ("marian", "m2m100", "bart")}}
    path = os.path.join(DATA, "bart-golden", "ct2-attention.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT), os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
