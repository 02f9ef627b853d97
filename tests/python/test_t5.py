"""encdec.T5Model against Hugging Face transformers' generate() on the
seeded random T5 v1.1 (tests/data/t5-golden/t5-v1_1.json, made by
tools/golden_t5.py)."""

import json
import threading
import time

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


def test_on_token_streams_the_greedy_text(t5):
    """The pieces on_token gets, joined per text, are transformers' greedy
    texts; a true return stops; an exception in it comes out of generate."""
    got = {}
    calls = []

    def tell(i, k, piece):
        calls.append(threading.get_ident())
        got[i] = got.get(i, "") + piece

    out = t5.generate(GOLD["inputs"], max_new_tokens=GOLD["max_new_tokens"], on_token=tell)
    assert out == GOLD["greedy"]["text"]
    assert [got[i] for i in range(len(out))] == GOLD["greedy"]["text"]
    assert len(calls) > len(out) and set(calls) == {threading.get_ident()}
    with pytest.raises(encdec.EncdecError) as e:
        t5.generate(GOLD["inputs"][0], max_new_tokens=16, on_token=lambda i, k, p: True)
    assert e.value.status_name == "cancelled"

    def boom(i, k, p):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        t5.generate(GOLD["inputs"][0], max_new_tokens=16, on_token=boom)
    with pytest.raises(encdec.ArgumentError, match="beam"):
        t5.generate(GOLD["inputs"][0], num_beams=2, on_token=tell)


def test_threads_share_the_engine(t5):
    """Texts from several Python threads at once, one at a time each, are
    decoded in shared steps (the engine's counters say so), each as
    transformers' greedy;
    a call with more texts than it keeps in flight answers in order."""
    n_threads, reps = 4, 10
    texts = GOLD["inputs"] * reps
    want = GOLD["greedy"]["text"] * reps
    before = t5.stats()
    results, errors = [None] * n_threads, []

    def work(j):
        try:
            results[j] = [t5.generate(t, max_new_tokens=GOLD["max_new_tokens"]) for t in texts]
        except BaseException as e:
            errors.append(e)

    ths = [threading.Thread(target=work, args=(j,)) for j in range(n_threads)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert not errors
    assert results == [want] * n_threads
    after = t5.stats()
    steps, rows = after["steps"] - before["steps"], after["rows"] - before["rows"]
    # each thread has one text in flight: several rows a step only when
    # the threads' requests share steps (a lock around calls gives 1.0)
    assert rows > 1.2 * steps, (rows, steps)   # measured 1.9 (4 threads, 2-core VM)
    assert after["active"] == 0 and after["waiting"] == 0
    many = GOLD["inputs"] * 50          # more than a call keeps in flight (64)
    assert t5.generate(many, max_new_tokens=4) == \
        [t5.generate(t, max_new_tokens=4) for t in GOLD["inputs"]] * 50


def test_errors(t5):
    with pytest.raises(encdec.ArgumentError, match="empty"):
        t5.generate([""])
    with pytest.raises(encdec.ArgumentError, match="text 1: .*empty"):
        t5.generate(["fine", "", "fine"])
    assert t5.stats()["active"] == 0
    with pytest.raises(encdec.ArgumentError, match="over the engine's 512"):
        t5.generate("x", max_new_tokens=513)
    with pytest.raises(encdec.ArgumentError, match="max_active"):
        encdec.T5Model(str(DATA / "tiny-random-t5-v1_1"), num_workers=300)
    with pytest.raises(encdec.ArgumentError):
        t5.generate(["x"], num_beams=0)
    with pytest.raises(TypeError):
        t5.generate([1, 2])
    with pytest.raises(encdec.EncdecError, match="not t5"):
        encdec.T5Model(str(DATA / "tiny-random-whisper"))


def test_gil_is_released_during_generate(t5):
    """While a generate() waits for the engine, other Python threads go on
    (ctypes releases the GIL around the calls; a held GIL would stop this
    loop for the whole call)."""
    texts = GOLD["inputs"] * 50   # a call of seconds on 2 cores
    t0 = time.perf_counter()
    t5.generate(texts, max_new_tokens=64)
    alone_call = time.perf_counter() - t0
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.5:
        n += 1
    rate = n / (time.perf_counter() - t0)
    done = threading.Event()
    th = threading.Thread(target=lambda: (t5.generate(texts, max_new_tokens=64), done.set()))
    t0, n = time.perf_counter(), 0     # from before the start: a held GIL stops this
    th.start()                         # thread at once, for the whole call
    while not done.is_set():
        n += 1
    busy = n / (time.perf_counter() - t0)
    th.join()
    # measured (2-core Xeon VM): 0.9-1.1 of the rate alone; with the GIL held
    # (the same call through ctypes.PyDLL) 0.02-0.09. A busy machine (other
    # programs on every core) lowers both rates by a factor that moves
    # between the two samples: the bound sits between the two cases, not
    # near the first
    assert alone_call > 0.05
    assert busy > 0.15 * rate, (busy, rate, alone_call)
