"""encdec.langid against langdetect 1.0.9 and lexilang 1.0.7's own answers
(tests/data/langid/golden.json, tools/golden_langid.py: detect_langs at
seed 0 and detect, with and without a list of languages, on 138 texts of
40 languages, texts walking the detectors' rules and random strings)."""

import json
import os
import threading

import pytest

from conftest import CACHE, DATA, need

GOLD = json.loads((DATA / "langid" / "golden.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lid():
    from encdec.langid import LanguageIdentifier
    path = os.environ.get("ENCDEC_LANGID") or str(need(CACHE / "langdetect"))
    t = LanguageIdentifier(path)
    yield t
    t.close()


def test_langdetect_as_langdetect(lid):
    """detect_langs: every language and probability (within 1e-12) of
    langdetect's; detect its first; no known n-gram raises."""
    n = 0
    for c in GOLD["cases"]:
        want = c["langdetect"]
        if not want:
            with pytest.raises(ValueError, match="No features in text"):
                lid.detect_langs(c["text"])
            continue
        got = lid.detect_langs(c["text"])
        assert [g.lang for g in got] == [w[0] for w in want], c["text"]
        assert [g.prob for g in got] == pytest.approx([w[1] for w in want], abs=1e-12), c["text"]
        assert lid.detect(c["text"]) == want[0][0]
        n += 1
    assert n > 100
    assert str(lid.detect_langs(GOLD["cases"][1]["text"])[0]).startswith("fr:0.99")


def test_lexilang_as_lexilang(lid):
    """detect_words: lexilang's (code, confidence), with and without the
    golden's list of languages; ("en", 0) where it knows no word."""
    for c in GOLD["cases"]:
        assert lid.detect_words(c["text"]) == pytest.approx(tuple(c["lexilang"])), c["text"]
        assert lid.detect_words(c["text"], GOLD["allowed"]) == pytest.approx(tuple(c["lexilang_allowed"])), \
            c["text"]


def test_threads_share_one_identifier(lid):
    texts = [c["text"] for c in GOLD["cases"] if c["langdetect"]][:24]
    alone = [[(g.lang, g.prob) for g in lid.detect_langs(t)] for t in texts]
    got = [None] * len(texts)

    def run(i):
        got[i] = [(g.lang, g.prob) for g in lid.detect_langs(texts[i])]

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(texts))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == alone


def test_errors(lid, tmp_path):
    from encdec import EncdecError
    from encdec.langid import LanguageIdentifier
    with pytest.raises(EncdecError, match="fetch-model.sh langid"):
        LanguageIdentifier(tmp_path / "nothing")
    with pytest.raises(EncdecError):
        LanguageIdentifier(tmp_path)   # a directory without its files
    with pytest.raises(TypeError):
        lid.detect_langs(b"bytes")
    with pytest.raises(ValueError, match="NUL"):
        lid.detect("a\0b")
    with pytest.raises(EncdecError, match="UTF-8"):
        lid.detect_words("\ud800 oui")
    t = LanguageIdentifier(lid.path)
    t.close()
    with pytest.raises(ValueError, match="closed"):
        t.detect("Bonjour")
