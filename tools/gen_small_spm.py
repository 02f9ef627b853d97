#!/usr/bin/env python3
"""Train the two small SentencePiece unigram models the T5 tests use.

Usage (from the repository root):

    .venv/bin/python tools/gen_small_spm.py

Writes tests/data/spm/:

  t5like.model     unigram, 800 pieces, no byte fallback, no normalisation rule
                   ("identity": keeps the file small): pad 0, eos 1, unk 2 (T5's
                   convention, no bos). Stands in for T5's 32000-piece spiece.model
                   in the small random-weight T5 v1.0 / v1.1 / umT5 test models.
  bytefb.model     unigram, 1000 pieces, byte_fallback on (the 256 <0xNN> pieces
                   are part of the vocabulary), nmt_nfkc normalisation (T5's, with
                   its precompiled character map), same special ids. Stands in for a
                   multilingual mT5/umT5-style vocabulary: characters it never saw
                   become bytes instead of <unk>.
  t5like.tokenizer.json, bytefb.tokenizer.json
                   the same models converted to the `tokenizers` JSON format by
                   transformers' T5TokenizerFast (which adds the 100 <extra_id_N>
                   sentinels after the pieces, as T5 does: <extra_id_0> is the
                   highest id).

The corpus is generated here from a seeded RNG (SEED) over built-in word lists in
English, German, French, Spanish and Chinese, plus digits and punctuation, so that
the result is the same on every run (sentencepiece trains deterministically with
one thread and a fixed input order).
"""
import os
import random
import shutil
import tempfile

import sentencepiece as spm

SEED = 20261121
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "spm")

WORDS = {
    "en": "the house is wonderful and the garden was green while we walked to the old "
          "station near a river where children played with dogs every summer morning "
          "translate english to german summarize question answer because people often "
          "think that small models cannot learn anything useful about language".split(),
    "de": "das Haus ist wunderbar und der Garten war grün während wir zum alten Bahnhof "
          "gingen nahe einem Fluss wo Kinder mit Hunden spielten jeden Sommermorgen "
          "Straße Mädchen über schön Größe".split(),
    "fr": "la maison est merveilleuse et le jardin était vert pendant que nous marchions "
          "vers la vieille gare près d'une rivière où les enfants jouaient été très "
          "garçon français déjà".split(),
    "es": "la casa es maravillosa y el jardín estaba verde mientras caminábamos hacia la "
          "vieja estación cerca de un río donde los niños jugaban año mañana".split(),
    "zh": "房子 很 好 花园 是 绿色 的 我们 走 到 老 车站 河 边 孩子 们 和 狗 玩 夏天 早上".split(),
}
PUNCT = [".", ",", "!", "?", ":", ";", "-", "(", ")", "'", '"']


def corpus(n_lines):
    rng = random.Random(SEED)
    langs = sorted(WORDS)
    lines = []
    for _ in range(n_lines):
        words = WORDS[rng.choice(langs)]
        toks = []
        for _ in range(rng.randint(4, 16)):
            r = rng.random()
            if r < 0.08:
                toks.append(str(rng.randint(0, 2000)))
            elif r < 0.15:
                toks.append(rng.choice(PUNCT))
            else:
                w = rng.choice(words)
                toks.append(w.capitalize() if rng.random() < 0.1 else w)
        lines.append(" ".join(toks))
    return lines


def train(prefix, vocab, byte_fallback, norm, text_path):
    # Relative paths (we run inside the temporary folder): the model file records
    # its training input and prefix, and must not depend on the temp folder's name.
    spm.SentencePieceTrainer.train(
        input=text_path, model_prefix=prefix, model_type="unigram", vocab_size=vocab,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, byte_fallback=byte_fallback,
        character_coverage=1.0 if byte_fallback else 0.9995, num_threads=1,
        input_sentence_size=0, shuffle_input_sentence=False, seed_sentencepiece_size=20000,
        normalization_rule_name=norm, minloglevel=2)


def to_json(model_path, json_path):
    from transformers import T5TokenizerFast
    tok = T5TokenizerFast(vocab_file=model_path, extra_ids=100, legacy=True)
    tmp = tempfile.mkdtemp()
    try:
        tok.save_pretrained(tmp)
        shutil.copyfile(os.path.join(tmp, "tokenizer.json"), json_path)
    finally:
        shutil.rmtree(tmp)


def main():
    os.makedirs(OUT, exist_ok=True)
    out = os.path.abspath(OUT)
    tmp = tempfile.mkdtemp()
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        with open("corpus.txt", "w", encoding="utf-8") as f:
            f.write("\n".join(corpus(6000)) + "\n")
        for name, vocab, bf, norm in (("t5like", 800, False, "identity"),
                                      ("bytefb", 1000, True, "nmt_nfkc")):
            train(name, vocab, bf, norm, "corpus.txt")
            dst = os.path.join(out, name + ".model")
            shutil.copyfile(name + ".model", dst)
            to_json(dst, os.path.join(out, name + ".tokenizer.json"))
            sp = spm.SentencePieceProcessor(model_file=dst)
            print(f"{dst}: {sp.get_piece_size()} pieces, "
                  f"'Das Haus ist wunderbar 😀' -> {sp.encode('Das Haus ist wunderbar 😀')}")
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
