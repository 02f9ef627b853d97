"""WhisperModel.stream(): live transcription from Python (encdec's own;
faster-whisper has none). The truth is jfk's reference transcript in
../shared/audio/TRANSCRIPTS.tsv: the final text of the stream has its
words, whatever the chunks' type (float32, int16, s16le bytes), size and
rate; the events keep their contract (each final the start of the partial
before it, finals in time order); bad options are refused."""

import re

import numpy as np
import pytest

import encdec

JFK_WORDS = ("and so my fellow americans ask not what your country can do for you ask what you "
             "can do for your country").split()


def words(text):
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def edits(a, b):
    """Word-level Levenshtein distance."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j - 1] + (x != y), prev[j] + 1, cur[j - 1] + 1))
        prev = cur
    return prev[-1]


def run(model, chunks, **kw):
    final, partial, last_end = "", "", -1.0
    for ev in model.stream(chunks, **kw):
        assert isinstance(ev, encdec.LiveEvent)
        if ev.type == "partial":
            partial = ev.text
        else:
            assert ev.type == "final" and ev.text
            assert partial.startswith(ev.text), (partial, ev.text)
            assert ev.start >= last_end - 0.5 and ev.end >= ev.start
            last_end = ev.end
            final += ev.text
    return final


@pytest.fixture(scope="module")
def jfk_pcm(jfk):
    return encdec.decode_audio(jfk)


@pytest.mark.parametrize("kind", ["float32", "int16", "bytes"])
def test_stream_jfk(tiny_en, jfk_pcm, kind):
    n = 8000   # half a second per chunk
    if kind == "float32":
        chunks = [jfk_pcm[i:i + n] for i in range(0, len(jfk_pcm), n)]
    else:
        s16 = np.clip(np.round(jfk_pcm * 32768), -32768, 32767).astype(np.int16)
        chunks = [s16[i:i + n] for i in range(0, len(s16), n)]
        if kind == "bytes":
            chunks = [c.astype("<i2").tobytes() for c in chunks]
    # int16 and bytes: the conversions; a longer step (fewer re-encodes)
    text = run(tiny_en, iter(chunks), **({} if kind == "float32" else {"step": 3.0}))
    assert edits(words(text), JFK_WORDS) <= 2, text


def test_stream_24k_and_odd_chunks(tiny_en, jfk_pcm):
    x = np.interp(np.arange(len(jfk_pcm) * 3 // 2) * 2 / 3, np.arange(len(jfk_pcm)),
                  jfk_pcm).astype(np.float32)
    rng = np.random.default_rng(0)
    cuts = np.cumsum(rng.integers(1, 9000, size=200))
    chunks = np.split(x, cuts[cuts < len(x)])   # pieces of 1 to 9000 samples
    text = run(tiny_en, chunks, sample_rate=24000, step=2.0)
    assert edits(words(text), JFK_WORDS) <= 2, text


def test_stream_all_at_once(tiny_en, jfk_pcm):
    # a source far ahead of the decodes (the whole recording in one chunk):
    # decoded max_step seconds at a time, every word there
    text = run(tiny_en, [jfk_pcm], max_step=2.0)
    assert edits(words(text), JFK_WORDS) <= 2, text


def test_stream_silence_gives_nothing(tiny_en):
    evs = list(tiny_en.stream([np.zeros(16000, np.float32)] * 20))
    assert not [e for e in evs if e.type == "final"]


def test_stream_bad_options(tiny_en, jfk_pcm):
    with pytest.raises(encdec.ArgumentError, match="step_s"):
        list(tiny_en.stream([jfk_pcm], step=0))
    with pytest.raises(encdec.ArgumentError, match="max_step_s"):
        list(tiny_en.stream([jfk_pcm], max_step=11))
    with pytest.raises(encdec.ArgumentError, match="agreement"):
        list(tiny_en.stream([jfk_pcm], agreement=9))
    with pytest.raises(ValueError, match="task"):
        list(tiny_en.stream([jfk_pcm], task="summarise"))
    with pytest.raises(ValueError, match="not a Whisper language"):
        list(tiny_en.stream([jfk_pcm], language="klingon"))
    with pytest.raises(ValueError, match="not audio"):
        list(tiny_en.stream([np.array(["a", "b"])]))
    with pytest.raises(encdec.ArgumentError, match="not finite"):
        list(tiny_en.stream([np.array([0.0, np.nan], np.float32)]))
