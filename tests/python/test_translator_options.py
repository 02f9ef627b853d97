"""encdec.Translator's search options against CTranslate2's own
translate_batch on the same CTranslate2 directory
(tests/data/bart-golden/translator-options.json, written by
tools/golden_translator_options.py): patience, length_penalty 0
(CTranslate2's early exit), end_token, return_alternatives,
prefix_bias_beta and coverage_penalty, each run as the script ran it (the
same suppressed tokens, one example a call, and all examples of a run in
one call: the engine's shared steps give each the same hypotheses)."""

import json

import pytest

import encdec
from conftest import DATA

GOLD = json.loads((DATA / "bart-golden" / "translator-options.json").read_text(encoding="utf-8"))
RUNS = {r["name"]: r for r in GOLD["runs"]}


@pytest.fixture(scope="module")
def tr():
    t = encdec.Translator(str(DATA.parent.parent / GOLD["model_dir"]), intra_threads=2)
    yield t
    t.close()


def suppressed(tr):
    vocab = json.loads((DATA.parent.parent / GOLD["model_dir"] / "shared_vocabulary.json").read_text(encoding="utf-8"))
    return [[t] for t in vocab if t not in GOLD["allowed"]]


def run_all(tr, run, together):
    opts = dict(run["options"], max_decoding_length=GOLD["max_decoding_length"], return_scores=True,
                suppress_sequences=suppressed(tr))
    cases = run["results"]
    src = [GOLD["sources"][c["source"]] for c in cases]
    pre = [run["prefix"][c["source"]] for c in cases] if run["prefix"] else None
    if together:
        return tr.translate_batch(src, target_prefix=pre, **opts)
    return [tr.translate_batch([s], target_prefix=[p] if pre else None, **opts)[0]
            for s, p in zip(src, pre or [None] * len(src))]


@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize("name", ["patience-2", "patience-0.5", "length-penalty-0", "end-token",
                                  "end-tokens-greedy", "end-tokens-beam", "coverage",
                                  "coverage-greedy", "alternatives-greedy", "alternatives-beam",
                                  "alternatives-noprefix", "alternatives-prefix2", "prefix-bias",
                                  "prefix-bias-greedy"])
def test_translate_batch_option_as_ctranslate2(tr, name, together):
    run = RUNS[name]
    got = run_all(tr, run, together)
    for c, r in zip(run["results"], got):
        assert r.hypotheses == c["hypotheses"], (name, c["source"])
        assert r.scores == pytest.approx(c["scores"], rel=1e-2, abs=2e-3), (name, c["source"])


def test_patience_errors(tr):
    src = [GOLD["sources"][0]]
    with pytest.raises(ValueError, match="patience"):
        tr.translate_batch(src, patience=0)
    with pytest.raises(encdec.ArgumentError, match="num_return_sequences 3"):
        tr.translate_batch(src, beam_size=4, patience=0.5, num_hypotheses=3)
    with pytest.raises(encdec.ArgumentError, match="patience"):
        tr.translate_batch(src, beam_size=4, patience=65)
