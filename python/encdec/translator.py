"""Translator: CTranslate2's Translator API over encdec, for the BART family
(Marian / OPUS-MT, NLLB-200, M2M100, mBART) and the T5 family, so that code
written for ctranslate2.Translator switches by its import:

    tokenizer = transformers.AutoTokenizer.from_pretrained(path, src_lang="eng_Latn")
    translator = encdec.Translator(path)
    source = tokenizer.convert_ids_to_tokens(tokenizer.encode("Hello world!"))
    results = translator.translate_batch([source], target_prefix=[["fra_Latn"]])
    target = results[0].hypotheses[0][1:]
    print(tokenizer.decode(tokenizer.convert_tokens_to_ids(target)))

Inputs and outputs are token lists spelled as the model's tokenizer spells
its vocabulary ("\u2581Hello", "eng_Latn", "</s>"). The model is a Hugging
Face directory (safetensors and its tokenizer files) or a CTranslate2
directory encdec reads. Every example of every call is one request on one
engine: all of them share its encoder passes and decode steps.

What CTranslate2 has and this does not (an option given a value other than
its default raises ValueError naming it): coverage_penalty, prefix_bias_beta,
patience, return_alternatives, end_token, callback, asynchronous, use_vmap,
and beam search combined with sampling. Hypotheses leave out the end token
unless return_end_token; they include the target prefix, as CTranslate2's do.
Beam search stops once beam_size hypotheses are finished (CTranslate2's
patience 1; transformers' early_stopping=True).

return_attention and replace_unknowns read the decoder's attention as
CTranslate2 returns it (its alignment layer's first heads, from a
CTranslate2 directory's spec; else its defaults, the last layer's first
head), computed after the search by one teacher-forced pass per hypothesis
(encdec_text_attention): with replace_unknowns alone, only for hypotheses
that hold an <unk>, so it costs nothing where none does.
"""

from . import _native as N
from .t5 import T5Model, _Call, _rules

import ctypes


class TranslationResult:
    """One example's results: hypotheses (token lists, best first), scores
    (with return_scores: the hypothesis' log-probability over its length to
    the power length_penalty, as CTranslate2 scores beams, greedy search
    and samples alike; the length counts the end token), attention
    (with return_attention: per hypothesis, per token, the attention over
    the source tokens; else empty)."""

    __slots__ = ("hypotheses", "scores", "attention")

    def __init__(self, hypotheses, scores, attention=None):
        self.hypotheses, self.scores, self.attention = hypotheses, scores, attention or []

    def __repr__(self):
        return f"TranslationResult(hypotheses={self.hypotheses!r}, scores={self.scores!r})"


# CTranslate2's options this does not implement, with the value that means "off"
_UNSUPPORTED = {"coverage_penalty": 0, "prefix_bias_beta": 0, "patience": 1,
                "return_alternatives": False, "end_token": None,
                "callback": None, "asynchronous": False, "use_vmap": False,
                "min_alternative_expansion_prob": 0}


class Translator:
    """device, device_index: "cpu", "cuda" (device_index: which GPU) or
    "auto", as CTranslate2 takes them.
    compute_type: "default", "float32", "int8", "bfloat16" ... as encdec's
    models take them. intra_threads: the engine's threads (0: every core
    this process may use); inter_threads: accepted, the engine decodes
    every request together. max_decoding_length bounds each call below the
    engine's limit, max_new_tokens (default 512, or the BART family's
    positions). logit_screen: as Seq2SeqModel's (f32 greedy steps read an
    int8 copy of the output projection; the same hypotheses)."""

    def __init__(self, model_path, device="cpu", device_index=0, compute_type="default",
                 inter_threads=1, intra_threads=0, max_queued_batches=0, files=None,
                 max_new_tokens=None, num_workers=16, logit_screen=True):
        if files:
            raise ValueError("files: give the model's directory")
        self._model = T5Model(model_path, compute_type=compute_type, cpu_threads=intra_threads,
                              num_workers=num_workers, max_new_tokens=max_new_tokens,
                              device=device, device_index=device_index, logit_screen=logit_screen)
        self.device = "cuda" if self._model._model.info.get("device", "cpu") != "cpu" else "cpu"
        self.compute_type = compute_type
        h = self._model._model.handle
        self._unk = N.lib.encdec_model_token_id(h, b"<unk>")

    @property
    def model_is_loaded(self):
        return self._model._engine is not None

    def close(self):
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ids(self, tokens, what):
        h, out = self._model._model.handle, []
        for t in tokens:
            if not isinstance(t, str):
                raise TypeError(f"{what}: tokens must be str, not {type(t).__name__}")
            i = N.lib.encdec_model_token_id(h, t.encode("utf-8"))
            if i < 0:
                if self._unk < 0:
                    raise ValueError(f"{what}: {t!r} is not a token of the model (and it has no <unk>)")
                i = self._unk
            out.append(i)
        return out

    def translate_batch(self, source, target_prefix=None, max_batch_size=0, batch_type="examples",
                        beam_size=2, num_hypotheses=1, length_penalty=1, repetition_penalty=1,
                        no_repeat_ngram_size=0, disable_unk=False, suppress_sequences=None,
                        return_end_token=False, max_input_length=1024, max_decoding_length=256,
                        min_decoding_length=1, return_scores=False, return_attention=False,
                        replace_unknowns=False, sampling_topk=1, sampling_topp=1,
                        sampling_temperature=1, **unsupported):
        """Translates a batch of token lists; returns one TranslationResult
        per example, in order. beam_size 1 with sampling_topk 1 is greedy
        search; sampling_topk != 1 or sampling_topp < 1 samples (beam_size
        1). suppress_sequences: one-token sequences only. max_input_length
        (0: none) keeps an input's first tokens. min_decoding_length: the
        end token is banned before that many tokens (the target prefix
        counted, as CTranslate2 counts it). return_attention: each token's
        attention over the source tokens (the model's alignment heads, as
        CTranslate2's). replace_unknowns: a hypothesis' <unk> tokens
        replaced by the source token it attends to most."""
        for k, v in unsupported.items():
            if k not in _UNSUPPORTED:
                raise TypeError(f"translate_batch() got an unexpected keyword argument {k!r}")
            if v != _UNSUPPORTED[k]:
                raise ValueError(f"{k}={v!r} is not supported by encdec's Translator")
        if min_decoding_length > max_decoding_length:
            raise ValueError(f"min_decoding_length={min_decoding_length} is greater than "
                             f"max_decoding_length={max_decoding_length}")
        if batch_type not in ("examples", "tokens"):
            raise ValueError(f"batch_type={batch_type!r}: examples or tokens")
        source = list(source)
        if target_prefix is not None and len(target_prefix) != len(source):
            raise ValueError(f"target_prefix has {len(target_prefix)} entries for {len(source)} examples")
        sample = sampling_topk != 1 or sampling_topp < 1
        if sample and beam_size > 1:
            raise ValueError("sampling (sampling_topk != 1 or sampling_topp < 1) runs with beam_size 1")
        if not source:
            return []
        gp = N.lib.encdec_generate_default_params()
        gp.num_beams = int(beam_size)
        gp.num_return_sequences = int(num_hypotheses)
        gp.length_penalty = float(length_penalty)
        gp.max_new_tokens = int(max_decoding_length)   # CTranslate2's count: the prefix and </s> in it
        gp.min_new_tokens = max(int(min_decoding_length), 0)   # the same count
        gp.truncate = 1
        gp.early_stopping = 1   # CTranslate2's beam ends with beam_size finished hypotheses
        gp.ctranslate2_rules = 1
        if sample:
            gp.do_sample = 1
            gp.top_k = int(sampling_topk) if sampling_topk > 1 else 0
            gp.top_p = float(sampling_topp)
            gp.temperature = float(sampling_temperature)
        suppress = []
        for s in suppress_sequences or []:
            if len(s) != 1:
                raise ValueError(f"suppress_sequences: {s!r}: one-token sequences only")
            suppress += self._ids(s, "suppress_sequences")
        if disable_unk and self._unk >= 0:
            suppress.append(self._unk)
        keep = _rules(gp, None, None, repetition_penalty, no_repeat_ngram_size, suppress)
        items = []
        for i, toks in enumerate(source):
            ids = self._ids(toks, f"source[{i}]")
            if max_input_length and len(ids) > max_input_length:
                ids = ids[:max_input_length]
            pre = self._ids(target_prefix[i], f"target_prefix[{i}]") if target_prefix and target_prefix[i] else []
            items.append((ids, pre))
        call = _IdsCall(self._model._engine, gp, items, self._model._model.handle,
                        bool(return_end_token), N.lib.encdec_model_token_id(self._model._model.handle, b"</s>"),
                        None if gp.num_beams > 1 else float(length_penalty))
        call.keep = keep
        results = []
        for i, out in enumerate(call.run()):
            hyps = [h for h, _, _ in out]
            att = [self._attend(items[i][0], source[i], ids, h, return_attention, replace_unknowns)
                   for h, _, ids in out]
            results.append(TranslationResult(hyps, [s for _, s, _ in out] if return_scores else [],
                                             att if return_attention else None))
        return results

    def _attend(self, ids, source, seq, hyp, keep, replace):
        """A hypothesis' attention rows over the source tokens (CTranslate2's:
        the input's columns, then 0 for source tokens max_input_length cut),
        computed when kept or when replace finds an <unk> to replace (hyp's
        are then the source tokens it attends to most)."""
        unk = [t for t, tok in enumerate(hyp) if tok == "<unk>"] if replace else []
        if not keep and not unk:
            return None
        rows = self._model._attention(ids, seq) if seq else []
        rows = [r + [0.0] * (len(source) - len(r)) for r in rows]
        for t in unk:
            r = rows[t]
            hyp[t] = source[r.index(max(r))]
        return rows


class _IdsCall(_Call):
    """A translate_batch: token ids in (encdec_engine_generate_ids), token
    lists and scores out."""

    def __init__(self, engine, gp, items, model, end_token, eos, norm):
        super().__init__(engine, gp, items, None, True)
        self.model, self.end_token, self.eos = model, end_token, eos
        self.norm = norm   # greedy and sampling: the sum over length ** norm (the beam's is)

    def _start(self, i, q):
        ids, pre = self.texts[i]
        a = (ctypes.c_int * len(ids))(*ids)
        p = (ctypes.c_int * max(1, len(pre)))(*pre)
        return N.lib.encdec_engine_generate_ids(self.engine, a, len(ids), p, len(pre),
                                                ctypes.byref(self.gp), ctypes.byref(q))

    def _collect(self, sq):
        ids = [sq.tokens[j].id for j in range(sq.n_tokens)]
        score = float(sq.score)
        if self.norm is not None and ids:
            score /= len(ids) ** self.norm
        if ids and ids[-1] == self.eos and not self.end_token:
            ids.pop()
        # an id past the tokenizer (a model's padding rows) as <unk>
        toks = [N.text(N.lib.encdec_model_token(self.model, t)) or "<unk>" for t in ids]
        return toks, score, ids
