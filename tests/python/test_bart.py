"""encdec.Seq2SeqModel (T5Model's other name) on a BART-family model: the
seeded random Marian model with its tokenizer (source.spm, target.spm,
vocab.json trained by tools/golden_bart.py), against transformers' generate()
and MarianTokenizer's decode (tests/data/bart-golden/marian.json's "api")."""

import json

import pytest

import encdec
from conftest import DATA

GOLD = json.loads((DATA / "bart-golden" / "marian.json").read_text(encoding="utf-8"))
API = GOLD["api"]


@pytest.fixture(scope="module")
def marian():
    m = encdec.Seq2SeqModel(str(DATA / "tiny-random-marian"), cpu_threads=2)
    yield m
    m.close()


def test_the_engine_is_sized_by_the_model_positions(marian):
    assert encdec.Seq2SeqModel is encdec.T5Model
    assert marian.max_new_tokens == 63   # max_position_embeddings 64, the start one of them
    with pytest.raises(encdec.EncdecError):
        encdec.Seq2SeqModel(str(DATA / "tiny-random-marian"), max_new_tokens=64)


def test_greedy_as_transformers(marian):
    got = marian.generate(API["inputs"], max_new_tokens=GOLD["max_new_tokens"])
    assert got == API["greedy"]["text"]


def test_beam_as_transformers(marian):
    b = GOLD["beam"]
    got = marian.generate(API["inputs"], max_new_tokens=GOLD["max_new_tokens"],
                          num_beams=b["num_beams"], num_return_sequences=b["num_return_sequences"],
                          length_penalty=b["length_penalty"], early_stopping=b["early_stopping"])
    assert [t for per_input in got for t in per_input] == API["beam"]["text"]


def test_bart_byte_level_bpe_as_transformers():
    gold = json.loads((DATA / "bart-golden" / "bart.json").read_text(encoding="utf-8"))
    m = encdec.Seq2SeqModel(str(DATA / "tiny-random-bart"), cpu_threads=2)
    try:
        got = m.generate(gold["api"]["inputs"], max_new_tokens=gold["max_new_tokens"])
        assert got == gold["api"]["greedy"]["text"]
    finally:
        m.close()
