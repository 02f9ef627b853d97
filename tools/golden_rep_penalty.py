#!/usr/bin/env python3
"""Goldens of repetition_penalty where transformers and CTranslate2 differ.

transformers' generate() counts the decoder start token among the tokens it
penalizes, and its beam search applies the penalty to log-probs (after the
log-softmax); CTranslate2 penalizes the generated tokens only, on the logits
before the log-softmax. encdec follows either (encdec_generate_params
.ctranslate2_rules). This script runs both peers on the test models of
tools/golden_bart.py (tests/data/tiny-random-marian, -bart) and their
CTranslate2 conversions (tools/golden_bart_ct2.py: -marian-ct2, -bart-ct2),
greedy and beam 4, penalty 1.5, and writes what each peer generates (the
test also checks that each peer's rules, swapped, miss its tokens):

    .venv/bin/python tools/golden_rep_penalty.py   (after scripts/venv.sh)

-> tests/data/bart-golden/rep_penalty.json: per model the texts, and the
   token ids (decoder start removed, up to and with </s>) of transformers
   ("hf") and of CTranslate2 ("ct2", mapped through the conversion's
   shared_vocabulary.json), per search.
"""
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
OUT = os.path.join(DATA, "bart-golden", "rep_penalty.json")
PENALTY = 1.5
MAX_NEW = 16
TEXTS = ["The children walked to the old market.", "A cat sleeps on the warm stones today."]


def strip(seq, eos):
    s = [int(t) for t in seq[1:]]   # the decoder start
    return s[:s.index(eos) + 1] if eos in s else s


def hf_tokens(d, beams):
    import transformers  # noqa: F401 (before the auto classes: torch 1.13 on Python 3.11)
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    m = AutoModelForSeq2SeqLM.from_pretrained(d).eval()
    tok = AutoTokenizer.from_pretrained(d)
    x = tok(TEXTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        o = m.generate(**x, num_beams=beams, max_new_tokens=MAX_NEW, repetition_penalty=PENALTY,
                       do_sample=False, forced_eos_token_id=None, no_repeat_ngram_size=0, min_length=0,
                       length_penalty=1.0, early_stopping=True, bad_words_ids=None, synced_gpus=False)
    return [strip(r, m.config.eos_token_id) for r in o], tok


def ct2_tokens(d, tok, beams):
    import ctranslate2

    tr = ctranslate2.Translator(d, compute_type="float32")
    src = [tok.convert_ids_to_tokens(tok(t).input_ids) for t in TEXTS]
    res = tr.translate_batch(src, beam_size=beams, max_decoding_length=MAX_NEW,
                             repetition_penalty=PENALTY)
    vocab = json.load(open(os.path.join(d, "shared_vocabulary.json"), encoding="utf-8"))
    index = {t: i for i, t in reversed(list(enumerate(vocab)))}
    eos = index["</s>"]
    out = []
    for r in res:
        ids = [index[t] for t in r.hypotheses[0]]
        out.append(ids + [eos] if len(ids) < MAX_NEW else ids)   # CTranslate2 leaves </s> out
    return out


def main():
    g = {"penalty": PENALTY, "max_new_tokens": MAX_NEW, "texts": TEXTS, "models": {}}
    for name in ("tiny-random-marian", "tiny-random-bart"):
        d = os.path.join(DATA, name)
        e = {"hf_dir": os.path.relpath(d, ROOT), "ct2_dir": os.path.relpath(d + "-ct2", ROOT)}
        for beams in (1, 4):
            hf, tok = hf_tokens(d, beams)
            e[f"hf_beam{beams}"] = hf
            e[f"ct2_beam{beams}"] = ct2_tokens(d + "-ct2", tok, beams)
        g["models"][name] = e
        print(name, json.dumps(e))
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(g, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    sys.exit(main())
