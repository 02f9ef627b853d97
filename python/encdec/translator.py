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

Besides translate_batch: translate_iterable, score_batch, score_iterable,
generate_tokens, unload_model and load_model, as CTranslate2's. Its search
options as CTranslate2 runs them: patience, length_penalty 0's early end,
end_token, coverage_penalty, return_alternatives with
min_alternative_expansion_prob, prefix_bias_beta. What it has and this does
not (an option given a value other than its default raises ValueError
naming it): beam search combined with sampling, and return_logits_vocab
with beam search (CTranslate2 4.8.5 gives each beam hypothesis one row, the
logits at its last step of another beam's row: its logits_vec[i * k]).
use_vmap reads a CTranslate2 directory's vmap.txt as CTranslate2 does:
the target tokens a batch may generate are those its sources' n-grams map
to, the map's common ones (its empty key), <unk>, <s>, </s>, the decoder's
start and the target prefixes' (every other one's logit -inf before the
log-softmax, as CTranslate2 leaves them out of the output layer); the set
is one a batch (translate_batch's max_batch_size groups, sorted by length
as CTranslate2 sorts them; translate_iterable's chunks), and a model
without the file decodes over its whole vocabulary, as there. Hypotheses leave out the end tokens they end with unless
return_end_token; they include the target prefix, as CTranslate2's do.
Beam search stops once round(beam_size x patience) hypotheses are finished
(patience 1: transformers' early_stopping=True).

return_attention and replace_unknowns read the decoder's attention as
CTranslate2 returns it (its alignment layer's first heads, from a
CTranslate2 directory's spec; else its defaults, the last layer's first
head), kept by the engine as it decodes (encdec_generate_params'
return_attention: one head's scores a row and step, as CTranslate2 keeps
them); a hypothesis a callback ended gets it from a teacher-forced pass
(encdec_text_attention).

A CTranslate2 directory whose config adds <s> / </s> to the source
(add_source_bos, add_source_eos: Marian-native conversions) gets them
added to every token input here, as CTranslate2 adds them; their columns
are left out of the attention; max_input_length keeps a closing </s> (and
a language token after it) last, as CTranslate2's vocabulary cuts.
"""

from . import _native as N
from .t5 import T5Model, _Call, _rules

import ctypes
import json
import math
import os
import queue
import threading

import numpy as np


class TranslationResult:
    """One example's results: hypotheses (token lists, best first), scores
    (with return_scores: the hypothesis' log-probability over its length to
    the power length_penalty, as CTranslate2 scores beams, greedy search
    and samples alike; the length counts the end token), attention
    (with return_attention: per hypothesis, per token, the attention over
    the source tokens; else empty), logits (with return_logits_vocab: per
    hypothesis, per decoding step (the target prefix's and the end token's
    included), the logits over the vocabulary as a float32 numpy array,
    the rules applied (a banned token at float32's lowest value, as
    CTranslate2 bans it), before the log-softmax; else empty)."""

    __slots__ = ("hypotheses", "scores", "attention", "logits")

    def __init__(self, hypotheses, scores, attention=None, logits=None):
        self.hypotheses, self.scores, self.attention = hypotheses, scores, attention or []
        self.logits = logits or []

    def __repr__(self):
        return f"TranslationResult(hypotheses={self.hypotheses!r}, scores={self.scores!r})"


class ScoringResult:
    """score_batch's result for one example: the target tokens with the end
    token (from offset on) and each one's log-probability."""

    __slots__ = ("tokens", "log_probs")

    def __init__(self, tokens, log_probs):
        self.tokens, self.log_probs = tokens, log_probs

    def __repr__(self):
        return f"ScoringResult(tokens={self.tokens!r}, log_probs={self.log_probs!r})"


class GenerationStepResult:
    """A token as a translation chose it (translate_batch's callback,
    generate_tokens): step (its position, the target prefix counted),
    batch_id (the example), token_id, hypothesis_id (0), token, log_prob
    (with return_scores / return_log_prob, else None), is_last (the end
    token, or the last position max_decoding_length allows)."""

    __slots__ = ("step", "batch_id", "token_id", "hypothesis_id", "token", "log_prob", "logits", "is_last")

    def __init__(self, step, batch_id, token_id, token, log_prob, is_last):
        self.step, self.batch_id, self.token_id, self.hypothesis_id = step, batch_id, token_id, 0
        self.token, self.log_prob, self.logits, self.is_last = token, log_prob, None, is_last

    def __repr__(self):
        return (f"GenerationStepResult(step={self.step}, batch_id={self.batch_id}, "
                f"token_id={self.token_id}, token={self.token!r}, is_last={self.is_last})")


class _Batch:
    """An asynchronous call's examples: a thread runs the call, each
    example's result waits for its end."""

    def __init__(self, fn):
        self.event, self.results, self.error = threading.Event(), None, None

        def work():
            try:
                self.results = fn()
            except BaseException as e:   # given to result()
                self.error = e
            self.event.set()

        threading.Thread(target=work, name="encdec-translate", daemon=True).start()


class AsyncTranslationResult:
    """An example of an asynchronous call (asynchronous=True): result()
    waits for it (raising the call's error), done() says whether it has
    ended. AsyncScoringResult is the same for score_batch."""

    __slots__ = ("_batch", "_i")

    def __init__(self, batch, i):
        self._batch, self._i = batch, i

    def result(self):
        self._batch.event.wait()
        if self._batch.error is not None:
            raise self._batch.error
        return self._batch.results[self._i]

    def done(self):
        return self._batch.event.is_set()


AsyncScoringResult = AsyncTranslationResult


def _chunks(rows, max_batch_size, batch_type):
    """Consecutive lists of rows (tuples whose first item is a source) of at
    most max_batch_size examples, or of at most that many tokens padded to
    the chunk's longest source."""
    if max_batch_size < 1:
        raise ValueError("max_batch_size must be >= 1")
    if batch_type not in ("examples", "tokens"):
        raise ValueError(f"batch_type={batch_type!r}: examples or tokens")
    chunk, longest = [], 0
    for row in rows:
        n = len(row[0])
        if chunk and (len(chunk) >= max_batch_size if batch_type == "examples"
                      else (len(chunk) + 1) * max(longest, n) > max_batch_size):
            yield chunk
            chunk, longest = [], 0
        chunk.append(row)
        longest = max(longest, n)
    if chunk:
        yield chunk


def _zip_same(*iterables):
    """Rows of items of several iterables, which must be as long."""
    ends = object()
    its = [iter(x) for x in iterables]
    while True:
        row = tuple(next(it, ends) for it in its)
        if all(v is ends for v in row):
            return
        if any(v is ends for v in row):
            raise ValueError("the iterables do not have the same length")
        yield row


# CTranslate2's options this does not implement, with the value that means "off"
_UNSUPPORTED = {}


def _ct2_target_size(path):
    """The tokens of a CTranslate2 directory's target vocabulary (0: none read)."""
    for name in ("target_vocabulary.json", "shared_vocabulary.json", "target_vocabulary.txt",
                 "shared_vocabulary.txt"):
        f = os.path.join(path, name)
        if os.path.isfile(f):
            with open(f, encoding="utf-8") as fh:
                if name.endswith(".json"):
                    return len(json.load(fh))
                return sum(1 for _ in fh)
    return 0


def _read_vmap(path):
    """CTranslate2's vocabulary map (vmap.txt), read as its VocabularyMap
    reads it: per line, a key (a source n-gram, its words split by single
    spaces) and after a tab the target tokens (split by single spaces; an
    empty one skipped); a key seen again replaces the earlier. Returns
    [{key: [target tokens]}] by n-gram size (index 0: one word)."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            line = line[:-1] if line.endswith("\r") else line
            if not line:
                continue
            token, key, values, target, ngram = "", "", [], False, 1
            for c in line:
                if c == "\t":
                    target = True
                    key, token = token, key
                elif c == " ":
                    if target:
                        values.append(token)
                        token = ""
                    else:
                        token += c
                        ngram += 1
                else:
                    token += c
            if token:
                values.append(token)
            while len(rules) < ngram:
                rules.append({})
            rules[ngram - 1][key] = values
    return rules


def _vmap_candidates(rules, sources):
    """The target tokens the map gives these sources' n-grams (as tokens)."""
    out = set()
    for toks in sources:
        for i in range(len(toks)):
            accu = ""
            for h in range(min(len(rules), len(toks) - i)):
                accu = accu + " " + toks[i + h] if h else toks[i]
                out.update(rules[h].get(accu, ()))
    return out


def _groups(lengths, max_batch_size, batch_type):
    """CTranslate2's batches of a call (its rebatch_input): the examples'
    indices sorted from the longest source to the shortest (ties in their
    order), cut into batches of max_batch_size examples or tokens (padded
    to a batch's longest); 0: one batch."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    if max_batch_size == 0:
        return [order]
    return [[r[1] for r in chunk] for chunk in _chunks([([0] * lengths[i], i) for i in order],
                                                       max_batch_size, batch_type)]


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
        self._open = lambda: T5Model(model_path, compute_type=compute_type, cpu_threads=intra_threads,  # noqa: E731
                                     num_workers=num_workers, max_new_tokens=max_new_tokens,
                                     device=device, device_index=device_index, logit_screen=logit_screen)
        self._model = self._open()
        self.device = "cuda" if self._model._model.info.get("device", "cpu") != "cpu" else "cpu"
        self.device_index = [device_index] if isinstance(device_index, int) else list(device_index)
        self.compute_type = compute_type
        self._path = model_path
        self._vmap_rules = None   # read at the first use_vmap
        self.num_translators = 1   # one engine decodes every request together
        self.tensor_parallel = False
        self._closed = False
        self._tokens()

    def _tokens(self):
        h = self._model._model.handle
        self._unk = N.lib.encdec_model_token_id(h, b"<unk>")
        self._eos = N.lib.encdec_model_token_id(h, b"</s>")
        info = self._model.info
        # the target tokens CTranslate2 knows (the logits' columns): a
        # CTranslate2 directory's target vocabulary (encdec adds a <pad> row
        # after it for a Marian conversion's zero decoder start), else the
        # ids the tokenizer spells
        self._n_target = _ct2_target_size(self._path) if info.get("format") == "ctranslate2" else None
        if not self._n_target:
            self._n_target = int(info["n_vocab"])
            while self._n_target > 1 and not N.lib.encdec_model_token(h, self._n_target - 1):
                self._n_target -= 1
        # a CTranslate2 conversion's add_source_bos / add_source_eos
        self._src_bos, self._src_eos = info.get("source_bos", 0), info.get("source_eos", 0)
        # the source's own vocabulary, where the model has one
        self._src_unk = N.lib.encdec_model_source_token_id(h, b"<unk>")
        self._bos = N.lib.encdec_model_source_token_id(h, b"<s>")
        self._src_end = N.lib.encdec_model_source_token_id(h, b"</s>")
        if (self._src_bos and self._bos < 0) or (self._src_eos and self._src_end < 0):
            raise ValueError("the model's config adds <s> or </s> to its inputs, and its "
                             "vocabulary lacks the token")

    def _vmap_suppress(self, source, prefixes, max_batch_size, batch_type):
        """use_vmap: per example, the target ids its batch may not generate
        (None: the model has no map)."""
        if self._vmap_rules is None:
            path = os.path.join(self._path, "vmap.txt") if isinstance(self._path, str) else ""
            self._vmap_rules = _read_vmap(path) if path and os.path.isfile(path) else False
            start = None
            try:
                with open(os.path.join(self._path, "config.json"), encoding="utf-8") as f:
                    start = json.load(f).get("decoder_start_token")
            except (OSError, ValueError, AttributeError):
                pass
            h = self._model._model.handle
            fixed = {N.lib.encdec_model_token_id(h, t.encode()) for t in ("<unk>", "<s>", "</s>", start) if t}
            if self._vmap_rules:
                for t in self._vmap_rules[0].get("", ()):   # the map's common tokens
                    fixed.add(self._vmap_id(t))
            self._vmap_fixed = {i for i in fixed if i >= 0}
        if not self._vmap_rules:
            return None
        V = self._model.info["n_vocab"]
        out = [None] * len(source)
        for g in _groups([len(s) for s in source], max_batch_size, batch_type):
            keep = set(self._vmap_fixed)
            keep.update(self._vmap_id(t) for t in _vmap_candidates(self._vmap_rules, [source[i] for i in g]))
            for i in g:
                keep.update(prefixes[i])
            sup = [t for t in range(V) if t not in keep]
            for i in g:
                out[i] = sup
        return out

    @staticmethod
    def _vmap_params(gp, suppress, vsup):
        """A copy of gp per example, suppressing its batch's vmap ids too."""
        out, arrays = [], {}
        for sup in vsup:
            if id(sup) not in arrays:
                ids = list(suppress) + sup
                arrays[id(sup)] = (ctypes.c_int * max(1, len(ids)))(*ids), len(ids)
            arr, n = arrays[id(sup)]
            g = type(gp).from_buffer_copy(gp)
            g.suppress_tokens = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int))
            g.n_suppress_tokens = n
            g._arr = arr   # alive with it
            out.append(g)
        return out

    def _vmap_id(self, token):
        """A map's target token's id (<unk>'s when the vocabulary lacks it, as CTranslate2's to_id)."""
        i = N.lib.encdec_model_token_id(self._model._model.handle, token.encode("utf-8"))
        return i if i >= 0 else self._unk

    @property
    def model_is_loaded(self):
        return self._model._engine is not None

    @property
    def num_queued_batches(self):
        return 0

    @property
    def num_active_batches(self):
        return self._model.stats()["active"] if self.model_is_loaded else 0

    def unload_model(self, to_cpu=False):
        """Frees the model and its engine (what runs is cancelled);
        load_model reads it again. to_cpu: accepted (a GPU model's copy is
        not kept)."""
        self._model.close()

    def load_model(self, keep_cache=False):
        """Loads the model unload_model freed."""
        if self._closed:
            raise ValueError("the translator is closed")
        if not self.model_is_loaded:
            self._model = self._open()
            self._tokens()

    def _loaded(self):
        if not self.model_is_loaded:
            raise ValueError("the model is unloaded (load_model reads it again)")
        return self._model

    def close(self):
        self._closed = True
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ids(self, tokens, what, source=False):
        """Target tokens' ids (source: an input's, in the source vocabulary
        where the model has its own); an unknown token is <unk>'s."""
        h, out = self._model._model.handle, []
        look = N.lib.encdec_model_source_token_id if source else N.lib.encdec_model_token_id
        unk = self._src_unk if source else self._unk
        for t in tokens:
            if not isinstance(t, str):
                raise TypeError(f"{what}: tokens must be str, not {type(t).__name__}")
            i = look(h, t.encode("utf-8"))
            if i < 0:
                if unk < 0:
                    raise ValueError(f"{what}: {t!r} is not a token of the model (and it has no <unk>)")
                i = unk
            out.append(i)
        return out

    def _source_ids(self, tokens, what, max_length):
        """An input's ids as CTranslate2 makes them: <s> before and </s>
        after where the model's config adds them (add_source_bos,
        add_source_eos), then at most max_length (0: any), a closing </s>
        (and a language token after it) kept last."""
        ids = self._ids(tokens, what, source=True)
        ids = ([self._bos] if self._src_bos else []) + ids + ([self._src_end] if self._src_eos else [])
        return _cut(ids, max_length, self._src_end)

    def translate_batch(self, source, target_prefix=None, max_batch_size=0, batch_type="examples",
                        beam_size=2, num_hypotheses=1, length_penalty=1, repetition_penalty=1,
                        no_repeat_ngram_size=0, disable_unk=False, suppress_sequences=None,
                        return_end_token=False, max_input_length=1024, max_decoding_length=256,
                        min_decoding_length=1, return_scores=False, return_attention=False,
                        replace_unknowns=False, sampling_topk=1, sampling_topp=1,
                        sampling_temperature=1, patience=1, end_token=None, coverage_penalty=0,
                        return_alternatives=False, min_alternative_expansion_prob=0, prefix_bias_beta=0,
                        callback=None, asynchronous=False, use_vmap=False, return_logits_vocab=False,
                        **unsupported):
        """Translates a batch of token lists; returns one TranslationResult
        per example, in order. beam_size 1 with sampling_topk 1 is greedy
        search; sampling_topk != 1 or sampling_topp < 1 samples (beam_size
        1). patience: a beam search ends once round(beam_size * patience)
        hypotheses finished, and num_hypotheses may be up to that many
        (fewer come back where fewer finished). suppress_sequences:
        one-token sequences only. end_token: a token or a list of tokens that
        end a hypothesis instead of </s> (which is then a token like any
        other); return_end_token keeps the one that ended it.
        coverage_penalty: each hypothesis' score gains coverage_penalty x the
        sum over the source tokens it attends to of log(min(its attention
        summed over the hypothesis, 1)); a beam search ranks by it.
        return_alternatives: the num_hypotheses most likely tokens after
        the target prefix (those of probability min_alternative_expansion_prob
        or more), each continued by its own search (beam_size beams):
        hypotheses in that order, each scored its token's log-prob plus its
        continuation's score. prefix_bias_beta (in [0, 1)): the target
        prefix is not forced but drawn toward: at its positions a beam that
        kept to it takes log((1 - beta) p + beta) for the prefix's token (and
        log((1 - beta) p) for the others); the search is then a beam search
        even with beam_size 1. max_input_length
        (0: none) keeps an input's first tokens. min_decoding_length: the
        end token is banned before that many tokens (the target prefix
        counted, as CTranslate2 counts it). return_attention: each token's
        attention over the source tokens (the model's alignment heads, as
        CTranslate2's). replace_unknowns: a hypothesis' <unk> tokens
        replaced by the source token it attends to most. callback (beam_size
        1): called on this thread with a GenerationStepResult for every token
        as it is chosen (the prefix's too); a true return ends that example's
        hypothesis there. asynchronous: returns AsyncTranslationResults at
        once, the call running on a thread of its own. use_vmap: the model's
        vmap.txt restricts each batch's target tokens (the module's text).
        return_logits_vocab (greedy search and sampling): each hypothesis'
        logits at every step (TranslationResult.logits); the tokens use_vmap
        leaves out are banned ones there, the vocabulary whole."""
        if asynchronous:
            kw = dict(locals())
            for k in ("self", "asynchronous", "unsupported", "__class__"):
                kw.pop(k, None)
            kw.update(unsupported)
            kw["source"] = source = list(source)
            batch = _Batch(lambda: self.translate_batch(**kw))
            return [AsyncTranslationResult(batch, i) for i in range(len(source))]
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
        if not 0 <= prefix_bias_beta < 1:
            raise ValueError("prefix_bias_beta: the beta value in biased decoding must be < 1 (and >= 0)")
        if prefix_bias_beta > 0 and (return_alternatives or callback is not None):
            raise ValueError("prefix_bias_beta: not with " +
                             ("return_alternatives" if return_alternatives else "callback"))
        if not 0 <= min_alternative_expansion_prob <= 1:
            raise ValueError("min_alternative_expansion_prob must be between 0 and 1")
        sample = sampling_topk != 1 or sampling_topp < 1
        if sample and beam_size > 1:
            raise ValueError("sampling (sampling_topk != 1 or sampling_topp < 1) runs with beam_size 1")
        if callback is not None and beam_size != 1:
            raise ValueError("callback: tokens are final as chosen with beam_size 1 only")
        if return_logits_vocab and (beam_size != 1 or return_alternatives or prefix_bias_beta > 0 or
                                    callback is not None):
            raise ValueError("return_logits_vocab: greedy search and sampling only (beam_size 1), not with " +
                             ("return_alternatives" if return_alternatives else "prefix_bias_beta"
                              if prefix_bias_beta > 0 else "callback" if callback is not None else
                              f"beam_size={beam_size} (CTranslate2 returns one row a beam hypothesis, "
                              "another beam's)"))
        model = self._loaded()
        if not source:
            return []
        gp = N.lib.encdec_generate_default_params()
        gp.num_beams = int(beam_size)
        gp.num_return_sequences = int(num_hypotheses)
        gp.prefix_bias_beta = float(prefix_bias_beta)
        if return_alternatives:
            gp.return_alternatives = 1
            gp.min_alternative_prob = float(min_alternative_expansion_prob)
        gp.length_penalty = float(length_penalty)
        gp.max_new_tokens = int(max_decoding_length)   # CTranslate2's count: the prefix and </s> in it
        gp.min_new_tokens = max(int(min_decoding_length), 0)   # the same count
        gp.truncate = 1
        gp.early_stopping = 1   # CTranslate2's beam ends with beam_size (x patience) finished hypotheses
        if not patience > 0:
            raise ValueError(f"patience={patience!r}: the patience factor must be > 0")
        gp.patience = float(patience)
        gp.ctranslate2_rules = 1
        gp.return_logits = 1 if return_logits_vocab else 0
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
            ids = self._source_ids(toks, f"source[{i}]", max_input_length)
            pre = self._ids(target_prefix[i], f"target_prefix[{i}]") if target_prefix and target_prefix[i] else []
            items.append((ids, pre))
        vsup = (self._vmap_suppress([list(t) for t in source], [p for _, p in items], int(max_batch_size), batch_type)
                if use_vmap else None)
        # the engine's attention pass after the search: every hypothesis's, or
        # those with an <unk> to replace
        gp.return_attention = 1 if return_attention else 2 if replace_unknowns else 0
        cover = float(coverage_penalty or 0)
        if gp.num_beams > 1:
            gp.coverage_penalty = cover   # the engine ranks by it
        elif cover and return_scores:
            gp.return_attention = 1       # the score's: from every token's row
        ends = [self._eos]
        if end_token is not None and end_token != []:
            ends = self._ids([end_token] if isinstance(end_token, str) else list(end_token), "end_token")
            ends_c = (ctypes.c_int * len(ends))(*ends)
            gp.end_tokens, gp.n_end_tokens = ends_c, len(ends)
        norm = (None if gp.num_beams > 1 or return_alternatives or prefix_bias_beta > 0
                else float(length_penalty))   # else the engine's (a beam's)
        call = _IdsCall(model._engine, gp, items, model._model.handle, bool(return_end_token), ends, norm)
        call.n_target = self._n_target
        call.ends_c = gp.end_tokens   # alive while the call runs
        call.gps = self._vmap_params(gp, suppress, vsup) if vsup else None
        call.cover = cover if gp.num_beams == 1 else 0
        call.keep = keep
        if callback is not None:
            call.watch(callback, bool(return_scores), int(max_decoding_length))
        outs = call.run()
        att = self._attend(items, source, outs, return_attention, replace_unknowns)
        return [TranslationResult([o[0] for o in out], [o[1] for o in out] if return_scores else [],
                                  att[i] if return_attention else None,
                                  [o[4] for o in out] if return_logits_vocab else None)
                for i, out in enumerate(outs)]

    def _attend(self, items, source, outs, keep, replace):
        """The hypotheses' attention rows over the source tokens (CTranslate2's:
        the input's columns, then 0 for source tokens max_input_length cut):
        the engine's (return_attention), for every hypothesis when kept,
        else for those with an <unk> to replace (which become the source
        tokens each attends to most); a hypothesis a callback ended has
        none from the engine, and gets it from a teacher-forced pass on a
        session. Per example, per hypothesis."""
        need = [(i, k) for i, out in enumerate(outs) for k, (h, _, ids, a, _) in enumerate(out)
                if ids and a is None and (keep or replace and "<unk>" in h)]
        rows = self._loaded()._attentions([(items[i][0], outs[i][k][2]) for i, k in need]) if need else []
        got = dict(zip(need, rows))
        att = []
        lo, hi = int(self._src_bos), int(self._src_eos)   # the columns of added <s> and </s>
        for i, out in enumerate(outs):
            per = []
            for k, (h, _, _, rows_k, _) in enumerate(out):
                rows_k = got.get((i, k), rows_k or [])
                rows_k = [list(r[lo:len(r) - hi]) for r in rows_k]
                a = [r + [0.0] * (len(source[i]) - len(r)) for r in rows_k]
                for t, tok in enumerate(h):
                    if replace and tok == "<unk>":
                        h[t] = source[i][a[t].index(max(a[t]))]
                per.append(a)
            att.append(per)
        return att

    def translate_iterable(self, source, target_prefix=None, max_batch_size=32, batch_type="examples",
                           **kwargs):
        """Translates an iterable of token lists (a file's lines, read as
        they come), translate_batch over consecutive chunks of
        max_batch_size examples (or tokens, padded as a batch holds them);
        yields a TranslationResult per example, in order."""
        rows = _zip_same(source, target_prefix) if target_prefix is not None else ((s,) for s in source)
        for chunk in _chunks(rows, max_batch_size, batch_type):
            pre = [r[1] for r in chunk] if target_prefix is not None else None
            yield from self.translate_batch([r[0] for r in chunk], target_prefix=pre, **kwargs)

    def score_batch(self, source, target, max_batch_size=0, batch_type="examples", max_input_length=1024,
                    offset=0, asynchronous=False):
        """Each target token's log-probability given the source and the
        target tokens before it, the end token last (CTranslate2's
        score_batch): a ScoringResult per example, its tokens and
        log_probs from offset on. Teacher-forced passes on a session of the
        model's (encdec_text_score_batch: many examples a pass), outside the
        engine."""
        source, target = list(source), list(target)
        if len(source) != len(target):
            raise ValueError(f"score_batch: {len(source)} sources and {len(target)} targets")
        if asynchronous:
            batch = _Batch(lambda: self.score_batch(source, target, max_batch_size, batch_type,
                                                    max_input_length, offset))
            return [AsyncScoringResult(batch, i) for i in range(len(source))]
        model = self._loaded()
        if not source:
            return []
        eos = N.text(N.lib.encdec_model_token(model._model.handle, self._eos)) or "</s>"
        pairs = []
        for i, (src, tgt) in enumerate(zip(source, target)):
            ids = self._source_ids(src, f"source[{i}]", max_input_length)
            seq = self._ids(tgt, f"target[{i}]")
            if max_input_length and len(seq) >= max_input_length:
                # CTranslate2 cuts "<start> target </s>" to max_input_length + 1, </s> kept
                seq = seq[:max_input_length - 1]
            pairs.append((ids, seq + [self._eos]))
        lps = model._scores(pairs)
        return [ScoringResult((list(tgt[:len(p[1]) - 1]) + [eos])[offset:], lp[offset:])
                for tgt, p, lp in zip(target, pairs, lps)]

    def score_iterable(self, source, target, max_batch_size=64, batch_type="examples", **kwargs):
        """score_batch over an iterable of (source, target) pairs, chunk by
        chunk; yields a ScoringResult per example, in order."""
        for chunk in _chunks(_zip_same(source, target), max_batch_size, batch_type):
            yield from self.score_batch([r[0] for r in chunk], [r[1] for r in chunk], **kwargs)

    def generate_tokens(self, source, target_prefix=None, *, max_decoding_length=256,
                        min_decoding_length=1, sampling_topk=1, sampling_topp=1, sampling_temperature=1,
                        return_log_prob=False, repetition_penalty=1, no_repeat_ngram_size=0,
                        disable_unk=False, suppress_sequences=None, end_token=None, max_input_length=1024,
                        use_vmap=False):
        """Yields a GenerationStepResult for each token of one example's
        translation as it is chosen (greedy or sampled); closing the
        iterator ends the translation."""
        steps, closed, end = queue.Queue(), threading.Event(), object()

        def tell(step):
            steps.put(step)
            return closed.is_set()

        def work():
            try:
                self.translate_batch([source], [target_prefix] if target_prefix is not None else None,
                                     beam_size=1, callback=tell, return_scores=return_log_prob,
                                     max_decoding_length=max_decoding_length,
                                     min_decoding_length=min_decoding_length, sampling_topk=sampling_topk,
                                     sampling_topp=sampling_topp, sampling_temperature=sampling_temperature,
                                     repetition_penalty=repetition_penalty,
                                     no_repeat_ngram_size=no_repeat_ngram_size, disable_unk=disable_unk,
                                     suppress_sequences=suppress_sequences, end_token=end_token,
                                     max_input_length=max_input_length, use_vmap=use_vmap)
            except BaseException as e:   # raised by the iterator
                steps.put(e)
            steps.put(end)

        th = threading.Thread(target=work, name="encdec-generate-tokens", daemon=True)
        th.start()
        try:
            while True:
                v = steps.get()
                if v is end:
                    break
                if isinstance(v, BaseException):
                    raise v
                yield v
        finally:
            closed.set()
            th.join()


def _cut(ids, n, eos):
    """ids cut to n (0: not cut) as CTranslate2's Vocabulary.to_ids cuts
    them: a closing eos, or an eos and the language token after it, moved
    to the last places."""
    if n and len(ids) > n:
        if ids[-1] == eos:
            ids[n - 1] = eos
        elif len(ids) >= 2 and ids[-2] == eos and n >= 2:
            ids[n - 2], ids[n - 1] = eos, ids[-1]
        ids = ids[:n]
    return ids


def _coverage(rows, beta):
    """CTranslate2's coverage penalty: beta x the sum over the source tokens
    of log(min(their attention summed over the rows, 1)), those never
    attended to left out."""
    pen = 0.0
    for col in zip(*rows):
        c = sum(col)
        if c > 0:
            pen += math.log(min(c, 1.0))
    return beta * pen


class _IdsCall(_Call):
    """A translate_batch: token ids in (encdec_engine_generate_ids), token
    lists and scores out."""

    def __init__(self, engine, gp, items, model, end_token, ends, norm):
        super().__init__(engine, gp, items, None, True)
        self.gps = None   # per example (use_vmap)
        self.model, self.end_token, self.ends = model, end_token, frozenset(ends)
        self.norm = norm   # greedy and sampling: the sum over length ** norm (the beam's is)

    def watch(self, callback, scores, max_len):
        """CTranslate2's callback: every token as the engine streams it
        (on_token), a true return ending that example there."""
        self.on_token, self.with_lp, self.max_len = callback, scores, max_len
        self.streamed, self.ended_early = {}, set()

    def _token(self, i, k, piece, tok, lp):
        got = self.streamed.setdefault(i, [])
        got.append((tok, lp))
        last = tok in self.ends or len(got) >= self.max_len
        text = N.text(N.lib.encdec_model_token(self.model, tok)) or "<unk>"
        step = GenerationStepResult(len(got) - 1, i, tok, text, float(lp) if self.with_lp else None, last)
        if self.on_token(step) and not last:
            self.ended_early.add(i)
            q = self.reqs.get(i)
            if q:
                N.lib.encdec_request_cancel(q)

    def _ended_result(self, i):
        """The hypothesis a callback ended: its tokens so far."""
        got = self.streamed[i]
        ids, score = [t for t, _ in got], sum(float(lp) for _, lp in got)
        if self.norm is not None and ids:
            score /= len(ids) ** self.norm
        toks = [N.text(N.lib.encdec_model_token(self.model, t)) or "<unk>" for t in ids]
        return [(toks, score, ids, None, None)]

    def _start(self, i, q):
        ids, pre = self.texts[i]
        a = (ctypes.c_int * len(ids))(*ids)
        p = (ctypes.c_int * max(1, len(pre)))(*pre)
        gp = self.gps[i] if self.gps else self.gp
        return N.lib.encdec_engine_generate_ids(self.engine, a, len(ids), p, len(pre),
                                                ctypes.byref(gp), ctypes.byref(q))

    def _collect_of(self, r, k):
        """Sequence k with its attention rows where the engine made them
        (one per token returned: </s>'s left out with it)."""
        sq = N.lib.encdec_result_sequence(r, k).contents
        toks, score, ids = self._collect(sq)
        cols = ctypes.c_int()
        a = N.lib.encdec_result_attention(r, k, ctypes.byref(cols))
        n = cols.value
        if self.cover and a and n:   # greedy: CTranslate2's coverage penalty on the score (every row)
            score += _coverage([a[t * n:(t + 1) * n] for t in range(sq.n_tokens)], self.cover)
        rows = [a[t * n:(t + 1) * n] for t in range(len(ids))] if a and n else None
        return toks, score, ids, rows, self._logits(r, k, sq.n_tokens)

    n_target = None   # the vocabulary's tokens (the logits' columns)

    def _logits(self, r, k, n):
        """Sequence k's logits rows (return_logits): one a step, over the
        vocabulary's tokens, float32, -inf as CTranslate2's ban (float32's
        lowest); None without them."""
        V = ctypes.c_int()
        p = N.lib.encdec_result_logits(r, k, ctypes.byref(V))
        if not p or not V.value or n < 1:
            return None
        a = np.ctypeslib.as_array(p, shape=(n, V.value))[:, :self.n_target or V.value].copy()
        a[np.isneginf(a)] = np.finfo(np.float32).min
        return list(a)

    cover = 0   # greedy: the coverage penalty, added to the score here

    def _collect(self, sq):
        ids = [sq.tokens[j].id for j in range(sq.n_tokens)]
        score = float(sq.score)
        if self.norm is not None and ids:
            score /= len(ids) ** self.norm
        while ids and ids[-1] in self.ends and not self.end_token:   # as CTranslate2 strips them
            ids.pop()
        # an id past the tokenizer (a model's padding rows) as <unk>
        toks = [N.text(N.lib.encdec_model_token(self.model, t)) or "<unk>" for t in ids]
        return toks, score, ids
