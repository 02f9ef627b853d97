"""Translation from Python: Seq2SeqModel.generate with src_lang / tgt_lang and
encdec.Translator (CTranslate2's translate_batch) on the seeded random
mBART-50, M2M100 and Marian models with their tokenizers, against
transformers' generate() (tests/data/bart-golden/*.json: "api" and its
"langs", written by tools/golden_bart.py)."""

import json

import pytest

import encdec
from conftest import DATA


def gold(variant):
    return json.loads((DATA / "bart-golden" / f"{variant}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def mbart():
    m = encdec.Seq2SeqModel(str(DATA / "tiny-random-mbart"), cpu_threads=2)
    yield m
    m.close()


def test_languages_and_generate(mbart):
    g = gold("mbart")
    lj = g["api"]["langs"]
    assert mbart.languages[:3] == ["ar_AR", "cs_CZ", "de_DE"] and len(mbart.languages) == 52
    got = mbart.generate(g["api"]["inputs"], max_new_tokens=g["max_new_tokens"], src_lang=lj["src_lang"],
                         tgt_lang=lj["tgt_lang"])
    assert got == lj["greedy"]["text"]
    b = g["beam"]
    got = mbart.generate(g["api"]["inputs"], max_new_tokens=g["max_new_tokens"], src_lang=lj["src_lang"],
                         tgt_lang=lj["tgt_lang"], num_beams=b["num_beams"],
                         num_return_sequences=b["num_return_sequences"], length_penalty=b["length_penalty"],
                         early_stopping=b["early_stopping"])
    assert [t for per in got for t in per] == lj["beam"]["text"]


def test_unknown_language_lists_the_codes(mbart):
    with pytest.raises(encdec.ArgumentError, match=r'unknown target language "xx".*ar_AR cs_CZ'):
        mbart.generate("x", tgt_lang="xx")
    with pytest.raises(encdec.ArgumentError, match="unknown source language"):
        mbart.generate("x", src_lang="english")


def tokens(tr, ids):
    return [encdec._native.text(encdec._native.lib.encdec_model_token(tr._model._model.handle, i)) or "<unk>"
            for i in ids]


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("variant", ["mbart", "m2m100"])
def test_translate_batch_as_transformers(variant, screen, monkeypatch):
    """CTranslate2's usage: source tokens with the language token and </s>,
    the target language as target_prefix; hypotheses keep the prefix and
    leave out </s>. screen: these small models' output projections screened
    too (ENCDEC_LOGIT_SCREEN_MIN 0; m2m100's is f32, mbart's halves are not
    screened), the greedy hypotheses the same."""
    g = gold(variant)
    lj, n = g["api"]["langs"], g["max_new_tokens"]
    if screen:
        monkeypatch.setenv("ENCDEC_LOGIT_SCREEN_MIN", "0")
    tr = encdec.Translator(str(DATA / f"tiny-random-{variant}"), intra_threads=2, logit_screen=screen)
    monkeypatch.delenv("ENCDEC_LOGIT_SCREEN_MIN", raising=False)
    try:
        source = [tokens(tr, ids) for ids in lj["input_ids"]]
        prefix = [tokens(tr, [lj["forced"]])] * len(source)
        res = tr.translate_batch(source, target_prefix=prefix, beam_size=1, max_decoding_length=n)
        eos = g["ids"]["eos"]
        want = [tokens(tr, [t for t in s if t != eos]) for s in lj["greedy"]["tokens"]]
        assert [r.hypotheses[0] for r in res] == want
        assert all(r.scores == [] for r in res)
        b = g["beam"]
        if not b["early_stopping"]:
            return   # CTranslate2's beam stops as early_stopping=True does
        res = tr.translate_batch(source, target_prefix=prefix, beam_size=b["num_beams"],
                                 num_hypotheses=b["num_return_sequences"], length_penalty=b["length_penalty"],
                                 max_decoding_length=n, return_scores=True, return_end_token=True)
        want = [tokens(tr, s) for s in lj["beam"]["tokens"]]
        k = b["num_return_sequences"]
        assert [h for r in res for h in r.hypotheses] == want
        assert [s for r in res for s in r.scores] == pytest.approx(lj["beam"]["scores"], abs=2e-3)
        assert len(res) == len(source) and all(len(r.hypotheses) == k for r in res)
    finally:
        tr.close()


def test_translate_batch_options_and_errors():
    tr = encdec.Translator(str(DATA / "tiny-random-marian"), intra_threads=1)
    try:
        src = [["\u2581The", "</s>"]]
        base = tr.translate_batch(src, beam_size=1, max_decoding_length=8)[0].hypotheses[0]
        # a suppressed token never comes back; the unknown piece becomes <unk>
        banned = tr.translate_batch(src, beam_size=1, max_decoding_length=8,
                                    suppress_sequences=[[base[0]]])[0].hypotheses[0]
        assert base[0] not in banned
        assert tr.translate_batch([["no-such-piece", "</s>"]], beam_size=1, max_decoding_length=2)
        with pytest.raises(ValueError, match="return_logits_vocab: greedy search and sampling only"):
            tr.translate_batch(src, beam_size=2, return_logits_vocab=True)   # CTranslate2's beam rows: another beam's
        # use_vmap on a model without vmap.txt: its whole vocabulary, as CTranslate2
        assert tr.translate_batch(src, beam_size=1, max_decoding_length=8, use_vmap=True)[0].hypotheses[0] == base
        with pytest.raises(ValueError, match="beam_size 1"):
            tr.translate_batch(src, sampling_topk=5)
        with pytest.raises(TypeError, match="unexpected keyword"):
            tr.translate_batch(src, frobnicate=1)
        with pytest.raises(encdec.ArgumentError, match="target prefix"):
            tr.translate_batch(src, target_prefix=[["\u2581The"] * 20], max_decoding_length=8)
        assert tr.translate_batch([]) == []
        s = tr.translate_batch(src, beam_size=1, sampling_topk=4, sampling_temperature=0.7,
                               max_decoding_length=8)
        assert len(s[0].hypotheses) == 1
    finally:
        tr.close()


def test_generate_takes_the_model_generation_config(tmp_path):
    """A summarisation model's generation config (beams, length penalty,
    min_length, no_repeat_ngram_size, max_length): generate() with no search
    arguments gives what transformers' generate() gives with that config
    (bart.json's "gen_config"); an argument overrides its setting."""
    import shutil

    g = gold("bart")
    gc = g["api"]["gen_config"]
    src = DATA / "tiny-random-bart"
    for f in ("config.json", "model.safetensors", "vocab.json", "merges.txt", "special_tokens_map.json",
              "tokenizer_config.json"):
        shutil.copy(src / f, tmp_path / f)
    (tmp_path / "generation_config.json").write_text(json.dumps(gc["config"]))
    m = encdec.Seq2SeqModel(str(tmp_path), cpu_threads=2)
    try:
        assert m.generate(g["api"]["inputs"]) == gc["text"]
        assert m.generate(g["api"]["inputs"], num_beams=1) != gc["text"]
    finally:
        m.close()


@pytest.mark.parametrize("variant", ["m2m100", "marian", "bart"])
def test_translator_on_a_ctranslate2_directory(variant):
    """encdec.Translator on what CTranslate2's converter wrote (the
    tests/data/tiny-random-*-ct2 conversions of tools/golden_bart_ct2.py):
    the source tokens and target prefix a CTranslate2 user passes give
    CTranslate2's own greedy hypotheses (bart-golden/ct2.json)."""
    g = json.loads((DATA / "bart-golden" / "ct2.json").read_text(encoding="utf-8"))["models"][variant]
    tr = encdec.Translator(str(DATA.parent.parent / g["model_dir"]), intra_threads=2)
    try:
        source = [tokens(tr, ids) for ids in g["input_ids"]]
        prefix = [tokens(tr, [s[0]]) for s in g["greedy"]["tokens"]] if g["langs"] else None
        res = tr.translate_batch(source, target_prefix=prefix, beam_size=1,
                                 max_decoding_length=g["max_new_tokens"])   # as the script asked it
        # (ids past the tokenizer, the random model's padding rows, read as <unk> both ways)
        assert [r.hypotheses[0] for r in res] == [tokens(tr, ids) for ids in g["ct2_greedy"]]
    finally:
        tr.close()


def test_translator_devices():
    """CTranslate2's device spelling: "cpu" runs, an unknown device and (on a
    machine without a GPU) "cuda" are named errors; the text models take the
    GPU where the build and the machine have one (scripts/test-cuda.sh)."""
    d = str(DATA / "tiny-random-marian")
    tr = encdec.Translator(d, device="cpu", intra_threads=1)
    assert tr.device == "cpu"
    tr.close()
    with pytest.raises(ValueError, match="'auto', 'cpu', 'cuda'"):
        encdec.Translator(d, device="tpu")
    if encdec._native.lib.encdec_device_count(1) == 0:
        with pytest.raises(ValueError, match="have 0 CUDA devices"):
            encdec.Translator(d, device="cuda")
        with pytest.raises(ValueError, match="have 0 CUDA devices"):
            encdec.T5Model(d, device="cuda")


@pytest.mark.parametrize("variant", ["marian", "m2m100", "bart"])
def test_translator_attention_unknowns_and_lengths(variant):
    """return_attention, replace_unknowns, min_decoding_length and
    return_scores as CTranslate2 gives them (bart-golden/ct2-attention.json,
    tools/golden_translator_attention.py): its hypotheses with the <unk> of
    a target prefix replaced by the source token each attends to most, its
    lengths under a minimum, its scores (greedy ones over the length, as its
    beams'), in greedy batches and beam search with a prefix (its first
    free step's rule for an end token); each row of the attention within
    1e-4 + 10x the row's own sensitivity of transformers' float64 values
    (the last decoder layer's first head), a row per token, a column per
    source token."""
    g = json.loads((DATA / "bart-golden" / "ct2-attention.json").read_text(encoding="utf-8"))["models"][variant]
    tr = encdec.Translator(str(DATA.parent.parent / g["model_dir"]), intra_threads=2)
    try:
        source = [c["source"] for c in g["cases"]]
        prefix = [c["prefix"] for c in g["cases"]]
        for run in g["runs"]:
            res = tr.translate_batch(source, target_prefix=prefix, max_decoding_length=g["max_decoding_length"],
                                     replace_unknowns=True, return_attention=True, return_scores=True,
                                     **run["options"])
            for src, r, want in zip(source, res, run["results"]):
                assert r.hypotheses == want["hypotheses"], run["options"]
                assert r.scores == pytest.approx(want["scores"], abs=3e-3, rel=1e-3)
                assert len(r.attention) == len(want["raw"])
                for hyp, att, w in zip(r.hypotheses, r.attention, want["raw"]):
                    assert len(att) == len(hyp) == len(w["attention"])
                    for row, ref, sens in zip(att, w["attention"], w["sensitivity"]):
                        assert len(row) == len(src)
                        assert max(abs(a - b) for a, b in zip(row, ref)) <= 1e-4 + 10 * sens
            # replace_unknowns alone: no attention kept, the same hypotheses
            alone = tr.translate_batch(source, target_prefix=prefix, max_decoding_length=g["max_decoding_length"],
                                       replace_unknowns=True, **run["options"])
            assert [r.hypotheses for r in alone] == [w["hypotheses"] for w in run["results"]]
            assert all(r.attention == [] for r in alone)
        lengths = [[len(w["hypotheses"][0]) for w in run["results"]] for run in g["runs"][:2]]
        assert lengths[0] != lengths[1] and min(lengths[1]) >= 6   # the minimum took effect
    finally:
        tr.close()


def test_translator_attention_edges():
    """Attention over a source the model's positions cut (the engine keeps its
    first tokens and its last: those columns are the input's, the others 0),
    a one-token hypothesis, a T5 model (CTranslate2's alignment: the last
    layer's first head), and the options' errors."""
    tr = encdec.Translator(str(DATA / "tiny-random-marian"), intra_threads=1)
    try:
        src = ["\u2581The"] * 70 + ["</s>"]   # 64 positions
        r = tr.translate_batch([src], beam_size=1, max_decoding_length=4, return_attention=True)[0]
        for row in r.attention[0]:
            assert len(row) == 71 and abs(sum(row) - 1) < 1e-4
            assert all(v == 0 for v in row[63:70])   # the 64th column is the input's last
        r = tr.translate_batch([["\u2581The", "</s>"]], beam_size=1, max_decoding_length=1,
                               return_attention=True, replace_unknowns=True)[0]
        assert len(r.hypotheses[0]) == 1 and len(r.attention[0]) == 1 and len(r.attention[0][0]) == 2
        with pytest.raises(ValueError, match="min_decoding_length=9 is greater"):
            tr.translate_batch([src], min_decoding_length=9, max_decoding_length=8)
    finally:
        tr.close()
    t5 = encdec.Translator(str(DATA / "tiny-random-t5-v1_1"), intra_threads=1)
    try:
        src = ["\u2581The", "\u2581house", "</s>"]
        r = t5.translate_batch([src], beam_size=2, max_decoding_length=5, return_attention=True)[0]
        assert len(r.attention[0]) == len(r.hypotheses[0])
        assert all(len(row) == 3 and abs(sum(row) - 1) < 1e-4 for row in r.attention[0])
    finally:
        t5.close()


@pytest.mark.parametrize("variant", ["marian", "m2m100", "bart"])
def test_translator_score_batch(variant):
    """score_batch as CTranslate2 gives it (bart-golden/ct2-attention.json's
    "score"): the target tokens with </s> from the offset on, each one's
    log-probability within 1e-3 + 10x its sensitivity (transformers' float64
    under float32-sized perturbations) of CTranslate2's; score_iterable
    the same in chunks, and asynchronously."""
    g = json.loads((DATA / "bart-golden" / "ct2-attention.json").read_text(encoding="utf-8"))["models"][variant]
    sc = g["score"]
    tr = encdec.Translator(str(DATA.parent.parent / g["model_dir"]), intra_threads=2)
    try:
        for off, want in sc["offsets"].items():
            got = tr.score_batch(sc["source"], sc["target"], offset=int(off))
            assert [r.tokens for r in got] == [w["tokens"] for w in want]
            for r, w, sens in zip(got, want, sc["sensitivity"]):
                for a, b, s in zip(r.log_probs, w["log_probs"], sens[int(off):]):
                    assert abs(a - b) <= 1e-3 + 10 * s, (a, b, s)
        again = list(tr.score_iterable(iter(sc["source"]), iter(sc["target"]), max_batch_size=5))
        assert [r.log_probs for r in again] == [r.log_probs for r in tr.score_batch(sc["source"], sc["target"])]
        later = tr.score_batch(sc["source"][:3], sc["target"][:3], asynchronous=True)
        assert [a.result().log_probs for a in later] == [r.log_probs for r in again[:3]]
        with pytest.raises(ValueError, match="same length"):
            list(tr.score_iterable(iter(sc["source"]), iter(sc["target"][:2])))
    finally:
        tr.close()


def test_translator_streams_and_lifecycle():
    """The callback (a GenerationStepResult per token, the prefix's too; a
    true return ends that example there with the tokens so far, the others
    go on), generate_tokens (the same steps; closing it early ends the
    translation), translate_iterable (chunks by examples or tokens: the
    batch's results), asynchronous results, unload_model / load_model."""
    tr = encdec.Translator(str(DATA / "tiny-random-m2m100-ct2"), intra_threads=2)
    try:
        src = [["__en__", "\u2581d", "er", "he", "</s>"], ["__en__", "er", "</s>"], ["__en__", "he", "</s>"]]
        pre = [["__de__"]] * 3
        whole = tr.translate_batch(src, target_prefix=pre, beam_size=1, max_decoding_length=8,
                                   return_scores=True)
        seen = []

        def cb(step):
            seen.append(step)
            return step.batch_id == 1 and step.step == 2

        cut = tr.translate_batch(src, target_prefix=pre, beam_size=1, max_decoding_length=8,
                                 return_scores=True, callback=cb)
        assert cut[0].hypotheses == whole[0].hypotheses and cut[2].hypotheses == whole[2].hypotheses
        assert cut[1].hypotheses[0] == whole[1].hypotheses[0][:3]
        mine = [s for s in seen if s.batch_id == 0]
        assert [s.step for s in mine] == list(range(len(mine)))
        assert mine[0].token == "__de__" and mine[0].log_prob == 0
        assert [s.token for s in mine if s.token != "</s>"] == whole[0].hypotheses[0]
        assert mine[-1].is_last and not any(s.is_last for s in mine[:-1])
        steps = list(tr.generate_tokens(src[0], pre[0], max_decoding_length=8, return_log_prob=True))
        assert [(s.token_id, s.is_last) for s in steps] == [(s.token_id, s.is_last) for s in mine]
        assert all(s.log_prob is not None for s in steps)
        it = tr.generate_tokens(src[0], pre[0], max_decoding_length=8)
        first = next(it)
        assert first.token == "__de__" and first.log_prob is None
        it.close()
        with pytest.raises(ValueError, match="beam_size 1"):
            tr.translate_batch(src, beam_size=2, callback=cb)
        for kw in ({"max_batch_size": 2}, {"max_batch_size": 12, "batch_type": "tokens"}):
            got = list(tr.translate_iterable(iter(src), iter(pre), beam_size=1, max_decoding_length=8, **kw))
            assert [r.hypotheses for r in got] == [r.hypotheses for r in whole]
        later = tr.translate_batch(src, target_prefix=pre, beam_size=1, max_decoding_length=8, asynchronous=True)
        assert [a.result().hypotheses for a in later] == [r.hypotheses for r in whole]
        assert all(a.done() for a in later)
        assert tr.num_active_batches == 0 and tr.num_queued_batches == 0 and tr.num_translators == 1
        tr.unload_model()
        assert not tr.model_is_loaded and tr.num_active_batches == 0
        with pytest.raises(ValueError, match="unloaded"):
            tr.translate_batch(src, target_prefix=pre)
        tr.load_model()
        assert tr.translate_batch(src, target_prefix=pre, beam_size=1, max_decoding_length=8)[0].hypotheses == \
            whole[0].hypotheses
    finally:
        tr.close()


def test_generate_replaces_unknowns():
    """generate(replace_unknowns=True): each <unk> written as the input piece
    it attends to most, as Argos Translate's pipeline on CTranslate2 gives it
    (tools/golden_lt_unknowns.py's greedy searches of the random Marian's
    CTranslate2 directory, every token but <unk>, </s> and six suppressed);
    without it, the <unk> left out."""
    g = json.loads((DATA / "bart-golden" / "lt-unknowns.json").read_text(encoding="utf-8"))
    root = DATA.parent.parent
    vocab = json.loads((root / g["model_dir"] / "shared_vocabulary.json").read_text(encoding="utf-8"))
    sup = [i for i, t in enumerate(vocab) if t not in g["allowed"]]
    cases = [c for c in g["cases"] if c["greedy"] and "<unk>" in c["greedy"]["raw"]]
    assert len(cases) >= 3
    m = encdec.Seq2SeqModel(str(root / g["model_dir"]), cpu_threads=2)
    try:
        kw = dict(num_beams=1, max_new_tokens=g["max_decoding_length"], min_new_tokens=1, suppress_tokens=sup,
                  tgt_lang=g["tgt_lang"])
        got = m.generate([c["text"] for c in cases], replace_unknowns=True, **kw)
        assert got == [c["greedy"]["text"].strip() for c in cases]
        plain = m.generate([c["text"] for c in cases], **kw)
        assert plain == ["".join(t for t in c["greedy"]["raw"] if t != "<unk>").replace("\u2581", " ").strip()
                         for c in cases]
        with pytest.raises(encdec.ArgumentError, match="on_token"):
            m.generate(cases[0]["text"], replace_unknowns=True, on_token=lambda *a: None, **kw)
    finally:
        m.close()
