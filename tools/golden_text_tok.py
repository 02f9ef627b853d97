#!/usr/bin/env python3
"""Writes the SentencePiece tokenizers of the BART family's translation models,
trained here, and their goldens from transformers' own tokenizer classes:

  tests/data/text-tok/nllb/      NllbTokenizer     (sentencepiece.bpe.model, BPE)
  tests/data/text-tok/mbart50/   MBart50Tokenizer  (sentencepiece.bpe.model, BPE)
  tests/data/text-tok/mbart/     MBartTokenizer    (sentencepiece.bpe.model, BPE; mBART-cc25)
  tests/data/text-tok/m2m100/    M2M100Tokenizer   (sentencepiece.bpe.model + vocab.json)
  tests/data/text-tok/pegasus/   PegasusTokenizer  (spiece.model, unigram, offset 103)
  tests/data/text-tok/nllb-fast/, mbart50-fast/, pegasus-fast/
                                 NllbTokenizerFast, MBart50TokenizerFast,
                                 PegasusTokenizerFast: the same models converted by
                                 transformers to tokenizer.json (BPE, BPE, Unigram)
                                 and saved without the SentencePiece file, as a fast
                                 tokenizer loaded from tokenizer.json saves itself
  tests/data/text-tok/golden.json

Each directory is what the class's save_pretrained writes (tokenizer_config.json
with added_tokens_decoder, special_tokens_map.json, the model files), as a
Hugging Face model directory holds them. The SentencePiece models are trained
here on a small multilingual corpus (no real tokenizer of these models is on
PyPI); vocab.json of M2M100 leaves a few pieces out, so that they map to <unk>
as in transformers.

golden.json, per tokenizer:
  lang_ids     {code as the user writes it: id} for a few languages
  cases        per text of golden_spm.py's corpus of tricky strings and its
               seeded random strings: input_ids of tok(text) with the
               tokenizer's default source language, and decode(ids,
               skip_special_tokens=True) of them
  src_cases    a few texts with another source language: [text, code, ids]
  decode       random id lists (special ids among them) and their decode

Run from the repository root with the oracle venv (deterministic):

    .venv/bin/python tools/golden_text_tok.py
"""
import io
import json
import os
import random
import shutil
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_bart import CORPUS_DE, CORPUS_EN  # noqa: E402
from golden_spm import CORPUS, random_strings  # noqa: E402

SEED = 20261128
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "data", "text-tok")
TRAIN = CORPUS_EN + CORPUS_DE + [
    "La maison est merveilleuse et le jardin était vert tout l'hiver.",
    "El río fluye rápidamente por el casco antiguo hacia el mar.",
    "Привет, как дела? Хорошо, спасибо.",
    "房子很好，花园是绿色的。",
]
# per tokenizer: the source language of the cases, others for src_cases and lang_ids
LANGS = {
    "nllb": ("eng_Latn", ["fra_Latn", "deu_Latn", "zho_Hans", "ace_Arab", "zul_Latn"]),
    "mbart50": ("en_XX", ["fr_XX", "de_DE", "ar_AR", "sl_SI"]),
    "mbart": ("en_XX", ["ro_RO", "de_DE", "ar_AR", "zh_CN"]),
    "m2m100": ("en", ["fr", "de", "af", "zu"]),
    "pegasus": (None, []),
    "nllb-fast": ("eng_Latn", ["fra_Latn", "deu_Latn", "zho_Hans", "ace_Arab", "zul_Latn"]),
    "mbart50-fast": ("en_XX", ["fr_XX", "de_DE", "ar_AR", "sl_SI"]),
    "pegasus-fast": (None, []),
}
SP_FILES = ("sentencepiece.bpe.model", "spiece.model", "added_tokens.json")


def train(model_type, **kw):
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(TRAIN * 4), model_writer=buf, vocab_size=300,
                                   model_type=model_type, character_coverage=1.0, hard_vocab_limit=False,
                                   minloglevel=2, **kw)
    return buf.getvalue()


def m2m_vocab(sp):
    """fairseq's dictionary over the pieces: <s> <pad> </s> <unk>, then the pieces,
    every 37th left out (they encode as <unk>)."""
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(3, sp.get_piece_size()):
        if i % 37:
            vocab[sp.id_to_piece(i)] = len(vocab)
    return vocab


def make(name, tmp):
    import sentencepiece as spm
    from transformers import (M2M100Tokenizer, MBart50Tokenizer, MBartTokenizer, NllbTokenizer,
                              PegasusTokenizer)

    src = LANGS[name][0]
    if name == "pegasus":
        path = os.path.join(tmp, "pegasus.model")
        with open(path, "wb") as f:   # pegasus's layout: <pad> 0, </s> 1, <unk> 2
            f.write(train("unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1))
        return PegasusTokenizer(path)
    path = os.path.join(tmp, "bpe.model")
    with open(path, "wb") as f:
        f.write(train("bpe"))
    if name == "nllb":
        return NllbTokenizer(path, src_lang=src)
    if name == "mbart50":
        return MBart50Tokenizer(path, src_lang=src)
    if name == "mbart":
        return MBartTokenizer(path, src_lang=src)
    vp = os.path.join(tmp, "vocab.json")
    with open(vp, "w", encoding="utf-8") as f:
        json.dump(m2m_vocab(spm.SentencePieceProcessor(model_file=path)), f, ensure_ascii=False)
    # the language tokens as special tokens, as the hub's M2M100 directories list
    # them (transformers 4.46 no longer adds them by itself)
    codes = M2M100Tokenizer(vp, path).lang_code_to_token.values()
    return M2M100Tokenizer(vp, path, src_lang=src, additional_special_tokens=list(codes))


def share(d):
    """A model file equal to nllb's becomes a link to it (one copy in git)."""
    mine, first = os.path.join(d, "sentencepiece.bpe.model"), os.path.join(OUT, "nllb", "sentencepiece.bpe.model")
    if d.endswith("nllb") or not os.path.exists(mine):
        return
    with open(mine, "rb") as a, open(first, "rb") as b:
        if a.read() == b.read():
            os.remove(mine)
            os.symlink(os.path.join("..", "nllb", "sentencepiece.bpe.model"), mine)


def lang_token(name, code):
    return "__%s__" % code if name == "m2m100" else code   # (m2m100 has no fast class)


def save_fast(name, tmp, d):
    """The slow class's directory converted to the fast class by transformers,
    saved, and the SentencePiece files removed: tokenizer.json alone."""
    from transformers import AutoTokenizer

    slow_dir = os.path.join(tmp, "slow")
    make(name, tmp).save_pretrained(slow_dir)
    fast = AutoTokenizer.from_pretrained(slow_dir, use_fast=True)
    assert fast.is_fast, name
    fast.save_pretrained(d)
    for f in SP_FILES:
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))


def golden(name, texts, rng):
    import tempfile

    from transformers import AutoTokenizer

    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    fast = name.endswith("-fast")
    with tempfile.TemporaryDirectory() as tmp:
        if fast:
            save_fast(name[:-5], tmp, d)
        else:
            make(name, tmp).save_pretrained(d)
    share(d)
    tok = AutoTokenizer.from_pretrained(d, use_fast=fast)   # back from the directory
    assert tok.is_fast == fast and not any(os.path.exists(os.path.join(d, f)) for f in SP_FILES[:2]
                                           if fast), name
    src, others = LANGS[name]
    out = {"class": type(tok).__name__, "src_lang": src, "eos": tok.eos_token_id,
           "n_vocab": len(tok), "lang_ids": {}, "cases": [], "src_cases": [], "decode": []}
    for code in ([src] + others if src else []):
        out["lang_ids"][code] = tok.convert_tokens_to_ids(lang_token(name, code))
        assert out["lang_ids"][code] != tok.unk_token_id, (name, code)
    dec = lambda ids: tok.decode(ids, skip_special_tokens=True)
    for t in texts:
        ids = tok(t).input_ids
        out["cases"].append({"ids": ids, "text": dec(ids)})
    for t, code in zip(CORPUS_EN[:3] + ["<mask> and fra_Latn", "über 😀 ø"], others * 2):
        tok.src_lang = code
        out["src_cases"].append([t, code, tok(t).input_ids])
    if src:
        tok.src_lang = src
    specials = sorted(set(tok.all_special_ids))
    for _ in range(30):
        ids = [rng.choice(specials) if rng.random() < 0.2 else rng.randrange(len(tok))
               for _ in range(rng.randint(1, 12))]
        out["decode"].append([ids, dec(ids)])
    return out


def main():
    warnings.filterwarnings("ignore")
    rng = random.Random(SEED)
    texts = CORPUS + random_strings(random.Random(SEED)) + TRAIN[:3]
    # transformers' slow tokenizers drop what sentencepiece maps to nothing; a NUL
    # byte is kept out (the C API takes C strings)
    texts = [t for t in texts if "\x00" not in t]
    doc = {"source": "tools/golden_text_tok.py, transformers " + __import__("transformers").__version__,
           "texts": texts, "tokenizers": {}}
    for name in LANGS:
        doc["tokenizers"][name] = golden(name, texts, rng)
        g = doc["tokenizers"][name]
        print(name, g["class"], "vocab", g["n_vocab"], "langs", g["lang_ids"])
    with open(os.path.join(OUT, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
