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


@pytest.mark.parametrize("beam_size", [1, 3])
def test_alternatives_attention_is_each_hypothesis_own(tr, beam_size):
    """return_alternatives with return_attention: each hypothesis' rows (the
    engine's, kept along its alternative's beams) equal a teacher-forced
    pass over its tokens (what test_translate holds to transformers'), the
    end token's row included."""
    src = GOLD["sources"][:6]
    pre = [GOLD["allowed"][1:2]] * len(src)
    res = tr.translate_batch(src, target_prefix=pre, beam_size=beam_size, num_hypotheses=3,
                             return_alternatives=True, return_attention=True, return_end_token=True,
                             max_decoding_length=12, suppress_sequences=suppressed(tr))
    for s, r in zip(src, res):
        assert len(r.hypotheses) == 3 and len(r.attention) == 3
        for h, rows in zip(r.hypotheses, r.attention):
            want = tr._loaded()._attentions([(tr._ids(s, "s"), tr._ids(h, "h"))])[0]
            assert len(rows) == len(want) == len(h)
            for x, y in zip(rows, want):
                assert x == pytest.approx(y, abs=1e-4)


def test_end_token_streams(tr):
    """generate_tokens with end_token: the steps end with the end token, as
    translate_batch's hypothesis (return_end_token) does."""
    run = RUNS["end-tokens-greedy"]
    c = run["results"][0]
    src = GOLD["sources"][c["source"]]
    steps = list(tr.generate_tokens(src, end_token=run["options"]["end_token"],
                                    max_decoding_length=GOLD["max_decoding_length"],
                                    suppress_sequences=suppressed(tr)))
    assert [s.token for s in steps] == c["hypotheses"][0]
    assert steps[-1].is_last


def test_argos_package_as_ctranslate2():
    """An Argos Translate package (tests/data/tiny-random-argos, its
    CTranslate2 model/ beside metadata.json and sentencepiece.model) opened as
    the package: translate_batch of its pieces gives CTranslate2's own
    hypotheses and scores (tools/gen_tiny_argos.py, compute_type float32:
    scores within 0.3%, encdec reading the int8 weights as f16), beam and
    greedy, as Argos Translate searches."""
    g = json.load(open(DATA / "bart-golden" / "argos.json", encoding="utf-8"))
    t = encdec.Translator(str(DATA / "tiny-random-argos"))
    for c in g["cases"]:
        for name, kw in [("beam2", dict(beam_size=4, num_hypotheses=2)), ("greedy", dict(beam_size=1))]:
            r = t.translate_batch([c["pieces"]], length_penalty=0.2, replace_unknowns=True, return_scores=True,
                                  max_decoding_length=g["max_decoding_length"], **kw)[0]
            assert r.hypotheses == c[name]["hypotheses"], (c["text"], name)
            for a, b in zip(r.scores, c[name]["scores"]):
                assert abs(a - b) <= 3e-3 * abs(b), (c["text"], name, a, b)


AFFIX = json.loads((DATA / "bart-golden" / "argos.json").read_text(encoding="utf-8"))["affixes"]


@pytest.fixture(scope="module")
def affix_tr():
    t = encdec.Translator(str(DATA / "tiny-random-ct2-affixes"), intra_threads=2)
    yield t
    t.close()


@pytest.mark.parametrize("name", ["beam", "greedy", "cut"])
def test_source_affixes_as_ctranslate2(affix_tr, name):
    """A CTranslate2 directory whose config adds <s> and </s> to the source
    (add_source_bos, add_source_eos, as ct2-marian-converter's add the
    second): the Translator adds them as CTranslate2 does, its attention
    leaves their columns out (replace_unknowns reads it so), and
    max_input_length counts them, keeping </s> last: CTranslate2's
    hypotheses, scores and attention (tools/gen_tiny_argos.py)."""
    assert affix_tr._model.info["source_bos"] == 1 and affix_tr._model.info["source_eos"] == 1
    kw = {"beam": dict(beam_size=4), "greedy": dict(beam_size=1),
          "cut": dict(beam_size=4, max_input_length=5)}[name]
    for c in AFFIX:
        r = affix_tr.translate_batch([c["pieces"]], return_scores=True, return_attention=True,
                                     replace_unknowns=True, max_decoding_length=12, **kw)[0]
        want = c[name]
        assert r.hypotheses == want["hypotheses"], c["pieces"]
        assert r.scores == pytest.approx(want["scores"], rel=1e-3, abs=1e-3)
        for a, b in zip(r.attention, want["attention"]):
            assert len(a) == len(b) and all(len(x) == len(y) == len(c["pieces"]) for x, y in zip(a, b))
            for x, y in zip(a, b):
                assert x == pytest.approx(y, abs=2e-3)


def test_source_affixes_score_batch_as_ctranslate2(affix_tr):
    """score_batch on that model: the source as translate_batch makes it,
    and max_input_length cutting "<s> target </s>" to max_input_length + 1
    (CTranslate2's count: the target's last tokens go, </s> stays)."""
    n = 0
    for c in AFFIX:
        hyp = c["beam"]["hypotheses"][0]
        for key in [k for k in c if k.startswith("score_")]:
            want = c[key]
            got = affix_tr.score_batch([c["pieces"]], [hyp], max_input_length=want["max_input_length"])[0]
            assert got.tokens == want["tokens"], key
            assert got.log_probs == pytest.approx(want["log_probs"], abs=2e-3), key
            n += 1
    assert n == 3 * len(AFFIX)


MARIAN = json.loads((DATA / "bart-golden" / "argos.json").read_text(encoding="utf-8"))["marian"]


@pytest.fixture(scope="module")
def marian_tr():
    t = encdec.Translator(str(DATA / "tiny-random-ct2-marian"), intra_threads=2)
    yield t
    t.close()


@pytest.mark.parametrize("name", ["beam", "greedy"])
def test_separate_vocabularies_as_ctranslate2(marian_tr, name):
    """A CTranslate2 directory as ct2-marian-converter writes one, with
    separate source and target vocabularies (other orders and sizes: the
    encoder's ids from source_vocabulary, the decoder's from
    target_vocabulary), a zero decoder start and add_source_eos:
    CTranslate2's hypotheses, scores and attention, and score_batch's."""
    info = marian_tr._model.info
    assert (info["model_type"], info["source_eos"]) == ("marian", 1)
    for c in MARIAN:
        r = marian_tr.translate_batch([c["pieces"]], beam_size={"beam": 4, "greedy": 1}[name],
                                      return_scores=True, return_attention=True, max_decoding_length=12)[0]
        want = c[name]
        assert r.hypotheses == want["hypotheses"], c["pieces"]
        assert r.scores == pytest.approx(want["scores"], rel=1e-3, abs=1e-3)
        for a, b in zip(r.attention, want["attention"]):
            assert [len(x) for x in a] == [len(y) for y in b]
            for x, y in zip(a, b):
                assert x == pytest.approx(y, abs=2e-3)
        if name == "beam":
            s = marian_tr.score_batch([c["pieces"]], [want["hypotheses"][0]])[0]
            assert s.tokens == c["score"]["tokens"]
            assert s.log_probs == pytest.approx(c["score"]["log_probs"], abs=2e-3)


def test_separate_vocabularies_ids(marian_tr):
    """Input tokens take the source vocabulary's ids, a target prefix the
    target's: a token only the target has is the source's <unk>, and an
    input id past the source vocabulary (but inside the target's) is
    refused rather than read past the encoder's embeddings."""
    import encdec._native as N
    h = marian_tr._model._model.handle
    src = json.loads((DATA / "tiny-random-ct2-marian" / "source_vocabulary.json").read_text(encoding="utf-8"))
    tgt = json.loads((DATA / "tiny-random-ct2-marian" / "target_vocabulary.json").read_text(encoding="utf-8"))
    only_tgt = next(t for t in tgt if t not in src)
    assert N.lib.encdec_model_source_token_id(h, only_tgt.encode()) == -1
    assert N.lib.encdec_model_token_id(h, only_tgt.encode()) == tgt.index(only_tgt)
    assert N.lib.encdec_model_source_token_id(h, src[5].encode()) == 5
    assert marian_tr._source_ids([only_tgt, src[5]], "s", 0) == [1, 5, 0]   # <unk>, the piece, </s>
    import ctypes
    ids = (ctypes.c_int * 2)(len(src) + 1, 0)
    req = ctypes.c_void_p()
    gp = N.lib.encdec_generate_default_params()
    gp.max_new_tokens = 8
    st = N.lib.encdec_engine_generate_ids(marian_tr._model._engine, ids, 2, None, 0, ctypes.byref(gp),
                                          ctypes.byref(req))
    assert st != 0 and b"source vocabulary size" in N.lib.encdec_last_error()


VMAP = json.loads((DATA / "bart-golden" / "translator-vmap.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["batch", "alone", "groups", "prefix"])
def test_vmap_as_ctranslate2(tr, name):
    """use_vmap with the model's vmap.txt (tools/golden_translator_vmap.py):
    CTranslate2's hypotheses and scores, a batch's target tokens those its
    sources' n-grams map to (all sources in one call; each alone; CTranslate2's
    length-sorted batches of max_batch_size 3; a target prefix's token added)."""
    run = {r["name"]: r for r in VMAP["runs"]}[name]
    opts = dict(run["options"], max_decoding_length=VMAP["max_decoding_length"], return_scores=True, use_vmap=True)
    src = VMAP["sources"]
    if name in ("batch", "groups"):
        got = tr.translate_batch(src, **opts)
    else:
        got = [tr.translate_batch([s], target_prefix=[run["prefix"][i]] if run["prefix"] else None, **opts)[0]
               for i, s in enumerate(src)]
    for c in run["results"]:
        r = got[c["source"]]
        assert r.hypotheses == c["hypotheses"], (name, c["source"])
        assert r.scores == pytest.approx(c["scores"], rel=1e-3, abs=1e-3), (name, c["source"])


def test_vmap_off_and_absent(tr, affix_tr):
    """Without use_vmap the map is not read; a model without vmap.txt
    decodes over its whole vocabulary with it (as CTranslate2)."""
    src = VMAP["sources"][:3]
    plain = tr.translate_batch(src, beam_size=2, max_decoding_length=8, return_scores=True)
    mapped = tr.translate_batch(src, beam_size=2, max_decoding_length=8, return_scores=True, use_vmap=True)
    assert [r.hypotheses for r in plain] != [r.hypotheses for r in mapped]
    a = affix_tr.translate_batch([["▁a", "b"]], beam_size=2, max_decoding_length=8, return_scores=True)
    b = affix_tr.translate_batch([["▁a", "b"]], beam_size=2, max_decoding_length=8, return_scores=True, use_vmap=True)
    assert a[0].hypotheses == b[0].hypotheses and a[0].scores == b[0].scores


LOGITS = json.loads((DATA / "bart-golden" / "translator-logits.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["plain", "batch", "prefix", "rules", "ends"])
def test_logits_vocab_as_ctranslate2(tr, name):
    """return_logits_vocab (tools/golden_translator_logits.py): CTranslate2's
    greedy hypotheses, and at every step (the target prefix's and the end
    token's too) its logits over the vocabulary: the 8 largest and 40 sampled
    values of a row within 1e-3 of CTranslate2's for the median row, 0.1
    for every row (logits of up to 21 on this random model, a few of whose
    steps the two engines' float sums move by up to 0.07 and the next step
    by 1e-4 again: an ill-conditioned step, not drift), each row's largest
    the token chosen at that step (a prefix's step aside), the banned tokens
    (min_decoding_length's end token, the repetition rules,
    suppress_sequences) at float32's lowest value."""
    import numpy as np

    run = {r["name"]: r for r in LOGITS["runs"]}[name]
    opts = dict(run["options"], beam_size=1, max_decoding_length=LOGITS["max_decoding_length"], return_scores=True,
                return_logits_vocab=True)
    src = LOGITS["sources"]
    if name == "batch":
        got = tr.translate_batch(src, **opts)
    else:
        got = [tr.translate_batch([s], target_prefix=[run["prefix"][i]] if run["prefix"] else None, **opts)[0]
               for i, s in enumerate(src)]
    low = np.finfo(np.float32).min
    vocab = json.loads((DATA.parent.parent / LOGITS["model_dir"] / "shared_vocabulary.json").read_text(encoding="utf-8"))
    diffs = []
    for i, (r, c) in enumerate(zip(got, run["results"])):
        assert r.hypotheses == c["hypotheses"], (name, i)
        assert r.scores == pytest.approx(c["scores"], rel=1e-3, abs=1e-3), (name, i)
        rows = r.logits[0]
        assert len(r.logits) == 1 and len(rows) == c["steps"], (name, i)
        for j, (row, want) in enumerate(zip(rows, c["rows"])):
            assert row.dtype == np.float32 and row.shape == (LOGITS["vocab_size"],)
            ids = [k for k, _ in want["top"]] + LOGITS["sample"]
            ref = np.array([v for _, v in want["top"]] + want["sample"], dtype=np.float32)
            kept = ref > low
            assert (row[ids][~kept] == low).all(), (name, i, j)
            diffs.append(float(np.abs(row[ids][kept] - ref[kept]).max()))
            assert diffs[-1] < 0.1, (name, i, j, diffs[-1])
            if j < len(r.hypotheses[0]) and not (run["prefix"] and j < len(run["prefix"][i])):
                assert int(row.argmax()) == vocab.index(r.hypotheses[0][j]), (name, i, j)
            assert list(np.nonzero(row == low)[0]) == want["lowest"], (name, i, j)
    assert sorted(diffs)[len(diffs) // 2] < 1e-3, sorted(diffs)


def test_logits_vocab_refusals_and_sampling(tr):
    """Beam search, return_alternatives and callback with return_logits_vocab
    raise ValueError; sampled hypotheses get their steps' logits (the chosen
    token never a banned one); without the option logits is empty."""
    import numpy as np

    src = LOGITS["sources"][:2]
    for kw in (dict(beam_size=2), dict(beam_size=1, return_alternatives=True),
               dict(beam_size=1, callback=lambda step: False)):
        with pytest.raises(ValueError, match="return_logits_vocab"):
            tr.translate_batch(src, return_logits_vocab=True, **kw)
    vocab = json.loads((DATA.parent.parent / LOGITS["model_dir"] / "shared_vocabulary.json").read_text(encoding="utf-8"))
    res = tr.translate_batch(src, beam_size=1, sampling_topk=5, num_hypotheses=2, max_decoding_length=6,
                             min_decoding_length=2, return_logits_vocab=True, return_end_token=True)
    for r in res:
        assert len(r.logits) == 2
        for hyp, rows in zip(r.hypotheses, r.logits):
            assert len(rows) == len(hyp)
            for j, (tok, row) in enumerate(zip(hyp, rows)):
                assert row[vocab.index(tok)] > np.finfo(np.float32).min
                top5 = set(np.argsort(-row)[:5])
                assert vocab.index(tok) in top5
            assert rows[0][vocab.index("</s>")] == np.finfo(np.float32).min   # min_decoding_length
    plain = tr.translate_batch(src, beam_size=1, max_decoding_length=6)
    assert all(r.logits == [] for r in plain)
