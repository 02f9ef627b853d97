"""encdec.T5Model against Hugging Face transformers' generate() on the
seeded random T5 v1.1 (tests/data/t5-golden/t5-v1_1.json, made by
tools/golden_t5.py)."""

import json

import pytest

import encdec
from conftest import DATA

GOLD = json.loads((DATA / "t5-golden" / "t5-v1_1.json").read_text())


@pytest.fixture(scope="module")
def t5():
    m = encdec.T5Model(str(DATA / "tiny-random-t5-v1_1"), cpu_threads=2)
    yield m
    m.close()


def test_greedy_as_transformers(t5):
    got = t5.generate(GOLD["inputs"], max_new_tokens=GOLD["max_new_tokens"])
    assert got == GOLD["greedy"]["text"]
    # one text in, one text out
    assert t5.generate(GOLD["inputs"][1], max_new_tokens=GOLD["max_new_tokens"]) == \
        GOLD["greedy"]["text"][1]


def test_beam_as_transformers(t5):
    b = GOLD["beam"]
    got = t5.generate(GOLD["inputs"], max_new_tokens=GOLD["max_new_tokens"],
                      num_beams=b["num_beams"], num_return_sequences=b["num_return_sequences"],
                      length_penalty=b["length_penalty"], early_stopping=b["early_stopping"])
    flat = [t for per_input in got for t in per_input]
    assert flat == b["text"]


def test_sampling_is_seeded(t5):
    kw = dict(max_new_tokens=12, do_sample=True, temperature=0.8, top_k=50, top_p=0.9)
    a = t5.generate(GOLD["inputs"], seed=1, **kw)
    assert a == t5.generate(GOLD["inputs"], seed=1, **kw)
    assert a != t5.generate(GOLD["inputs"], seed=2, **kw)


def test_errors(t5):
    with pytest.raises(encdec.ArgumentError, match="empty"):
        t5.generate([""])
    with pytest.raises(encdec.ArgumentError):
        t5.generate(["x"], num_beams=0)
    with pytest.raises(TypeError):
        t5.generate([1, 2])
    with pytest.raises(encdec.EncdecError, match="not t5"):
        encdec.T5Model(str(DATA / "tiny-random-whisper"))
