#!/usr/bin/env python3
"""Goldens for replace_unknowns on text (encdec_generate_params'
replace_unknowns, `encdec translate --replace-unknowns`, the LibreTranslate
endpoint): what LibreTranslate's engine, Argos Translate, gives for a text
with the CTranslate2 directory of tools/golden_bart_ct2.py
(tests/data/tiny-random-marian-ct2):

  the text segmented by the directory's source.spm as sentencepiece's
  encode(out_type=str) spells the pieces (a character the model lacks is
  its own piece, a piece the vocabulary lacks reads as <unk>), after the
  target language's token >>de<< and with </s> after them as the Hugging
  Face tokenizer adds them (the model has the token: encdec puts it first
  for the target language de); CTranslate2's
  translate_batch as Argos Translate calls it (beam_size 4, length_penalty
  0.2, replace_unknowns, 256 tokens at most: here the model's 63), one
  example a call; the hypothesis' tokens joined, U+2581 a space, the
  leading space dropped (Argos Translate's detokenizer).

A random model never generates <unk> on its own, so each case allows only
<unk>, </s> and a few seeded tokens (suppress_sequences of every other
token; in encdec, the same list as suppress_tokens, or a generation
config's bad_words_ids): the hypotheses mix them, and each <unk> becomes
the source piece it attends to most.

  tests/data/bart-golden/lt-unknowns.json
    allowed   the tokens a case may generate (the rest suppressed)
    cases     text; pieces (the source tokens); ids (transformers'
              MarianTokenizer's of the text: a piece the source model
              lacks looked up as it reads); greedy: the same greedy, where
              it is as stable (else null); hypotheses: CTranslate2's
              raw tokens, replaced tokens, score and Argos Translate's text,
              best first (num_hypotheses 2: LibreTranslate's alternatives 1)

Cases are kept where transformers' beam search in float64 over the same
weights (golden_bart_ct2.hf_model's, suppressing the same tokens before
its log-softmax) returns the same two hypotheses, and still does under
float32-sized rounding of every layer's output (the random model is
chaotic: a search rounding changes is no golden), where they hold an
<unk> that no special token
(</s>, >>de<<) is the most attended source token of, where every <unk>'s top two
attention weights are 0.05 or more apart and the two scores 1e-3 or more
apart (so that a float32 engine cannot order them otherwise), and where
the search ended before its length limit. Some must replace a character
the model lacks (a non-ASCII piece): the script asserts it.

Nothing here reads the project's sources. Run from the repository root:

    .venv/bin/python tools/golden_lt_unknowns.py
"""
import json
import os
import random
import sys
import tempfile

import ctranslate2
import sentencepiece as spm
import torch
from transformers import MarianTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_bart_ct2 as gc  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODEL = os.path.join(ROOT, "tests", "data", "tiny-random-marian-ct2")
OUT = os.path.join(ROOT, "tests", "data", "bart-golden", "lt-unknowns.json")
MAX = 63          # the model's 64 positions, the decoder's start among them
N_CASES = 16

WORDS = ["the", "cat", "was", "yes", "estate", "Hello", "world", "big", "and", "of", "from", "The",
         "which", "sun", "day", "water", "we", "are"]
ODD = ["\U0001F600", "\u5317\u4eac", "\u2713", "\u00dcberflu\u00df", "\u00df", "\u20ac", "\u03a9",
       "na\u00efve", "\u0416", "\u2603", "\u0394x"]


def argos_text(tokens):
    s = "".join(tokens).replace("\u2581", " ")
    return s[1:] if s.startswith(" ") else s


@torch.no_grad()
def stable_beams(model, ids, suppress, n, trials=4, beams=4):
    """hf_beams, and the same under float32-sized rounding (every Linear and
    LayerNorm output times 1 + 2^-24 N(0, 1), seeded: golden_bart's
    measure): these random models are chaotic (a near tie some layers down
    moves a later token's log-probability by nats between float32
    engines), and a search that rounding changes is no golden. None when
    a trial differs."""
    want = hf_beams(model, ids, suppress, n, beams)
    gen = torch.Generator().manual_seed(20261203)

    def hook(mod, inp, out):
        return out * (1 + 2.0 ** -24 * torch.randn(out.shape, generator=gen, dtype=out.dtype))

    hooks = [m.register_forward_hook(hook) for m in model.modules()
             if isinstance(m, (torch.nn.Linear, torch.nn.LayerNorm))]
    try:
        same = all(hf_beams(model, ids, suppress, n, beams) == want for _ in range(trials))
    finally:
        for h in hooks:
            h.remove()
    return want if same else None


@torch.no_grad()
def hf_beams(model, ids, suppress, n, beams=4):
    """transformers' beam search in float64 as CTranslate2 runs it: the
    suppressed tokens' logits out before the log-softmax (renormalize),
    4 beams ending with 4 finished, length_penalty 0.2, a token at least:
    the n best, as token ids without the start and </s> (beams 1: greedy)."""
    out = model.generate(torch.tensor([ids]), num_beams=beams, num_return_sequences=n, length_penalty=0.2,
                         early_stopping=True, min_new_tokens=1, max_new_tokens=MAX, do_sample=False,
                         bad_words_ids=[[i] for i in suppress], renormalize_logits=True,
                         no_repeat_ngram_size=0, repetition_penalty=1.0, synced_gpus=False)
    eos, pad = model.config.eos_token_id, model.config.pad_token_id
    return [[t for t in row[1:].tolist() if t not in (eos, pad)] for row in out]


def greedy(tr, model, pieces, ids, suppress, hf_suppress, vocab):
    """CTranslate2's greedy search of the case (beam_size 1, the rest as the
    beams'): its raw and replaced tokens and Argos Translate's text, where
    every <unk>'s attention has a margin of 0.05 and transformers' float64
    greedy search agrees under rounding; else None. (Greedy choices do not
    depend on where the suppressed tokens leave the log-softmax: the
    Python test runs it through generate(), without CTranslate2's rules.)"""
    opts = dict(beam_size=1, max_decoding_length=MAX, suppress_sequences=suppress)
    rep = tr.translate_batch([pieces], replace_unknowns=True, **opts)[0]
    raw = tr.translate_batch([pieces], return_attention=True, **opts)[0]
    h, att = raw.hypotheses[0], raw.attention[0]
    if len(h) >= MAX - 1:
        return None
    for t, tok in enumerate(h):
        if tok == "<unk>":
            top = sorted(att[t][:len(pieces)], reverse=True)
            pos = att[t].index(top[0])
            if top[0] - top[1] < 0.05 or pieces[pos] in ("</s>", ">>de<<"):
                return None
    if stable_beams(model, ids, hf_suppress, 1, beams=1) != [[vocab.index(t) for t in h]]:
        return None
    return {"raw": h, "tokens": rep.hypotheses[0], "text": argos_text(rep.hypotheses[0])}


def main():
    sp = spm.SentencePieceProcessor(model_file=os.path.join(MODEL, "source.spm"))
    vocab = json.load(open(os.path.join(MODEL, "shared_vocabulary.json"), encoding="utf-8"))
    tr = ctranslate2.Translator(MODEL, device="cpu", compute_type="float32")
    hf = MarianTokenizer.from_pretrained(os.path.join(ROOT, "tests", "data", "tiny-random-marian"))
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = gc.hf_model("marian", tmp)   # the weights the directory was converted from
    model = model.to(torch.float64).eval()
    rng = random.Random(20261203)
    normal = [t for t in vocab[3:] if not t.startswith(">>") and not t.startswith("<")]
    allowed = ["</s>", "<unk>"] + rng.sample(normal, 6)
    suppress = [[t] for t in vocab if t not in allowed]
    hf_suppress = [i for i in range(model.config.vocab_size) if i >= len(vocab) or vocab[i] not in allowed]
    opts = dict(beam_size=4, num_hypotheses=2, length_penalty=0.2, max_decoding_length=MAX,
                suppress_sequences=suppress, return_scores=True)
    cases, odd_replaced = [], 0
    for _ in range(2000):
        if len(cases) >= N_CASES:
            break
        text = " ".join(rng.choice(WORDS if rng.random() < 0.4 else ODD) for _ in range(rng.randint(2, 8)))
        pieces = [">>de<<"] + sp.encode(text, out_type=str) + ["</s>"]
        rep = tr.translate_batch([pieces], replace_unknowns=True, **opts)[0]
        raw = tr.translate_batch([pieces], return_attention=True, **opts)[0]
        hyps, good, odd = [], True, 0
        for k in range(2):
            h, att = raw.hypotheses[k], raw.attention[k]
            if len(h) >= MAX - 1:
                good = False
            for t, tok in enumerate(h):
                if tok != "<unk>":
                    continue
                row = att[t][:len(pieces)]
                top = sorted(row, reverse=True)
                pos = row.index(top[0])
                good = good and top[0] - top[1] >= 0.05 and pieces[pos] not in ("</s>", ">>de<<")
                odd += not pieces[pos].lstrip("\u2581").isascii()
            hyps.append({"raw": h, "tokens": rep.hypotheses[k], "score": rep.scores[k],
                         "text": argos_text(rep.hypotheses[k])})
        s = [h["score"] for h in hyps]
        good = good and s[0] - s[1] >= 1e-3
        good = good and any("<unk>" in h["raw"] for h in hyps)
        ids = hf(">>de<< " + text).input_ids
        # transformers in float64 finds the same two: no near tie a float32 engine could break
        good = good and stable_beams(model, ids, hf_suppress, 2) == [[vocab.index(t) for t in h["raw"]]
                                                                    for h in hyps]
        if good:
            assert [vocab.index(p) if p in vocab else 1 for p in pieces] == ids, (text, pieces, ids)
            cases.append({"text": text, "pieces": pieces, "ids": ids, "hypotheses": hyps,
                          "greedy": greedy(tr, model, pieces, ids, suppress, hf_suppress, vocab)})
            odd_replaced += odd
    n_greedy = sum(c["greedy"] is not None and "<unk>" in c["greedy"]["raw"] for c in cases)
    print(f"{len(cases)} cases; {odd_replaced} <unk> replaced by a character the model lacks; "
          f"{n_greedy} greedy hypotheses with <unk>")
    assert len(cases) >= 8 and odd_replaced >= 3 and n_greedy >= 3, (len(cases), odd_replaced, n_greedy)
    out = {"model_dir": os.path.relpath(MODEL, ROOT), "tgt_lang": "de", "max_decoding_length": MAX, "beam_size": 4,
           "length_penalty": 0.2, "allowed": allowed, "cases": cases}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
