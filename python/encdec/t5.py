"""T5Model (also Seq2SeqModel): text-to-text generation for the T5 family (T5,
Flan-T5, mT5, umT5) and the BART family (BART, mBART, mBART-50, Marian /
OPUS-MT, M2M100, NLLB-200, Pegasus), with Hugging Face generate()'s parameter
names.

    model = encdec.T5Model("models/flan-t5-small")
    model.generate(["translate English to German: Hello."], max_new_tokens=32)
    nllb = encdec.Seq2SeqModel("models/nllb-200-distilled-600M")
    nllb.generate("Hello.", src_lang="eng_Latn", tgt_lang="fra_Latn")

The model runs on an engine (encdec_engine_*): every text of a call is one
request, and the requests of all calls, from any number of Python threads,
share the engine's encoder passes and decode steps (up to num_workers
decoding at once, the rest queued in order). A text's output is the same,
token for token, whatever else runs. The GIL is released while the engine
works; on_token is called on the calling thread.
"""

import ctypes
import queue
import threading

from . import _native as N
from ._model import Model, Owner, default_threads, resolve
from .whisper import _live

_IN_FLIGHT = 64   # requests a call keeps submitted at once (one library thread each)


class T5Model(Owner):
    """cpu_threads: the engine's threads (0: every core this process may
    use). num_workers: requests decoding at once (1..256). max_new_tokens:
    the most any generate() may ask for (1..4096, the BART family's
    max_position_embeddings - 1 at most; default 512 or that; the engine
    sizes its self-attention caches by it). device, device_index: "cpu",
    "cuda" (with the GPU's number) or "auto", as WhisperModel takes them
    (default: the library's, $ENCDEC_DEVICE or the CPU). logit_screen=False:
    an f32 model keeps no int8 copy of its output projection
    (by default greedy steps read it: the same tokens, a
    quarter of that matrix's bytes a step)."""

    def __init__(self, path, compute_type="default", cpu_threads=0, isa=None, cross_kv="f32",
                 num_workers=8, max_new_tokens=None, device=None, device_index=0,
                 logit_screen=True):
        if cross_kv not in N.KV_TYPE:
            raise ValueError(f"cross_kv={cross_kv!r}: one of f32, f16, bf16")
        self._session_lock = threading.Lock()   # the teacher-forced passes' session (_forced)
        self._model = Model(resolve(path, None), compute_type, isa, family=("t5", "bart"),
                            device=device, device_index=device_index, logit_screen=logit_screen)
        ep = N.lib.encdec_engine_default_params()
        ep.n_threads = default_threads(cpu_threads)
        ep.max_active = int(num_workers)
        ep.cross_kv = N.KV_TYPE[cross_kv]
        if max_new_tokens is None:   # 512, or the BART family's positions where fewer
            limit = self._model.info["n_text_ctx"] - 1 if self._model.info["family"] == "bart" else 512
            max_new_tokens = min(512, limit)
        ep.max_new_tokens = int(max_new_tokens)
        e = ctypes.c_void_p()
        try:
            N.check(N.lib.encdec_engine_new(self._model.handle, ctypes.byref(ep), ctypes.byref(e)))
        except BaseException:
            self._model.close()
            raise
        self._engine = e
        self.cpu_threads = ep.n_threads
        self.max_new_tokens = ep.max_new_tokens
        _live.add(self)

    _session = None
    _session_lock = threading.Lock()

    def _release(self):   # close(): cancels what runs, frees the engine (then the model)
        with self._session_lock:
            s, self._session = self._session, None
        if s:
            N.lib.encdec_session_free(s)
        e, self._engine = getattr(self, "_engine", None), None
        if e:
            N.lib.encdec_engine_free(e)

    def _forced(self, call):
        """call(session): a teacher-forced pass (api/forced.c) on a session of
        the model's own, made at the first call (one at a time)."""
        with self._session_lock:
            if not self._engine:
                raise ValueError("the model is closed")
            if self._session is None:
                sp = N.lib.encdec_session_default_params()
                sp.n_threads = self.cpu_threads
                s = ctypes.c_void_p()
                N.check(N.lib.encdec_session_new(self._model.handle, ctypes.byref(sp), ctypes.byref(s)))
                self._session = s
            N.check(call(self._session))

    def _pairs(self, fn, pairs, width):
        """fn (encdec_text_attention_batch or _score_batch) over (input ids,
        seq) pairs, seq the tokens after the decoder's start; pair i's
        len(seq) * width(ids) floats."""
        n = len(pairs)
        ia = [(ctypes.c_int * len(i))(*i) for i, _ in pairs]
        sa = [(ctypes.c_int * len(q))(*q) for _, q in pairs]
        outs = [(ctypes.c_float * (len(q) * width(i)))() for i, q in pairs]
        IP, FP = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_float)
        cast = lambda arrs, P: (P * n)(*[ctypes.cast(a, P) for a in arrs])   # noqa: E731
        ids_p, seq_p, out_p = cast(ia, IP), cast(sa, IP), cast(outs, FP)
        n_ids = (ctypes.c_int * n)(*[len(i) for i, _ in pairs])
        n_seq = (ctypes.c_int * n)(*[len(q) for _, q in pairs])
        self._forced(lambda s: fn(s, n, ids_p, n_ids, seq_p, n_seq, out_p))
        return outs

    def _attentions(self, pairs):
        """Each pair's attention: a row of len(ids) floats per token of seq
        (encdec_text_attention_batch: the pairs together)."""
        outs = self._pairs(N.lib.encdec_text_attention_batch, pairs, len)
        return [[list(o[r * len(i):(r + 1) * len(i)]) for r in range(len(q))] for o, (i, q) in zip(outs, pairs)]

    def _scores(self, pairs):
        """Each pair's log-probabilities of seq's tokens given the input and
        the tokens before (encdec_text_score_batch: the pairs together)."""
        return [list(o) for o in self._pairs(N.lib.encdec_text_score_batch, pairs, lambda i: 1)]

    @property
    def languages(self):
        """The model's language codes (NLLB "fra_Latn", mBART "fr_XX", M2M100
        "fr", a multilingual Marian model's >>fr<< as "fr"); [] for models
        without."""
        out, i = [], 0
        while True:
            c = N.lib.encdec_model_language(self._model.handle, i)
            if not c:
                return out
            out.append(c.decode())
            i += 1

    def generate(self, texts, max_new_tokens=None, num_beams=None, do_sample=False, temperature=1.0,
                 top_k=0, top_p=1.0, seed=0, num_return_sequences=1, length_penalty=None,
                 early_stopping=None, truncate=False, return_scores=False, on_token=None,
                 src_lang=None, tgt_lang=None, repetition_penalty=None, no_repeat_ngram_size=None,
                 suppress_tokens=None, min_new_tokens=None, forced_eos=None, replace_unknowns=False):
        """Generates for one text (a str: returns a str, or a list of
        num_return_sequences strs) or a list of texts (returns a list of
        those, one per text). Greedy by default; num_beams > 1: beam search
        (Hugging Face's); do_sample: sampling with temperature, top_k, top_p
        and seed (the same seed gives the same output). return_scores: each
        output is a (text, score) pair (greedy and sampling: the sum of the
        tokens' log-probabilities; beam search: the length-normalised score).
        on_token (greedy and sampling): on_token(text_index, sequence_index,
        piece) for every token as it is chosen, piece the text it adds (whole
        characters; may be empty), in order per sequence; a true return
        stops the generation (EncdecError, status "cancelled"). Called on
        this thread. src_lang / tgt_lang: translation models' languages
        (see languages): the inputs' language token (NLLB, mBART, M2M100),
        the target forced first (or the decoder's start, mBART; or the >>xx<<
        token, Marian). repetition_penalty, no_repeat_ngram_size: transformers'
        rules (the decoder start penalized; beam search's penalty on
        log-probs); suppress_tokens: ids never generated; min_new_tokens: </s>
        banned before that many; forced_eos: a sequence cut at
        max_new_tokens ends in the model's forced_eos_token_id (</s>).
        replace_unknowns: each <unk> of an output written as the input piece
        its attention weighs most, as CTranslate2's replace_unknowns and
        LibreTranslate give it (a character or word the model lacks; not
        with on_token). Search settings left None are the model's generation config's
        (num_beams, length_penalty, early_stopping, max_length, min_length,
        no_repeat_ngram_size, repetition_penalty, forced_eos_token_id),
        as transformers' generate() takes them; else greedy, 128 new tokens
        (at most the engine's max_new_tokens)."""
        if not self._engine:
            raise ValueError("the model is closed")
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if not items:
            return []
        if not all(isinstance(t, str) for t in items):
            raise TypeError("generate: texts must be a str or a list of str")
        gp = N.lib.encdec_generate_model_params(self._model.handle)
        model_beams, model_max = gp.num_beams, min(gp.max_new_tokens, self.max_new_tokens)
        gp.max_new_tokens = int(max_new_tokens) if max_new_tokens is not None else model_max
        # the config's beams for one sequence at a time: not with sampling or on_token
        gp.num_beams = int(num_beams) if num_beams is not None else (
            1 if do_sample or on_token is not None or num_return_sequences > model_beams else model_beams)
        gp.do_sample = int(bool(do_sample))
        gp.temperature = float(temperature)
        gp.top_k = int(top_k)
        gp.top_p = float(top_p)
        gp.seed = int(seed)
        gp.num_return_sequences = int(num_return_sequences)
        if length_penalty is not None:
            gp.length_penalty = float(length_penalty)
        if early_stopping is not None:
            gp.early_stopping = int(bool(early_stopping)) if early_stopping != "never" else 2
        if min_new_tokens is not None:
            gp.min_new_tokens = int(min_new_tokens)
        gp.min_new_tokens = min(gp.min_new_tokens, max(gp.max_new_tokens - 1, 0))
        if forced_eos is not None:
            gp.forced_eos = int(bool(forced_eos))
        gp.truncate = int(bool(truncate))
        gp.replace_unknowns = int(bool(replace_unknowns))
        keep = _rules(gp, src_lang, tgt_lang,
                      gp.repetition_penalty if repetition_penalty is None else repetition_penalty,
                      gp.no_repeat_ngram_size if no_repeat_ngram_size is None else no_repeat_ngram_size,
                      suppress_tokens)
        call = _Call(self._engine, gp, [t.encode("utf-8") for t in items], on_token,
                     bool(return_scores))
        call.keep = keep
        out = call.run()
        if num_return_sequences == 1:
            out = [o[0] for o in out]
        return out[0] if single else out


def _rules(gp, src_lang, tgt_lang, repetition_penalty, no_repeat_ngram_size, suppress_tokens):
    """The languages and CTranslate2 rules into gp; returns what gp points at
    (kept alive by the caller)."""
    gp.src_lang = src_lang.encode() if src_lang else None
    gp.tgt_lang = tgt_lang.encode() if tgt_lang else None
    gp.repetition_penalty = float(repetition_penalty)
    gp.no_repeat_ngram_size = int(no_repeat_ngram_size)
    sup = None
    if suppress_tokens:
        ids = [int(t) for t in suppress_tokens]
        sup = (ctypes.c_int * len(ids))(*ids)
        gp.suppress_tokens = ctypes.cast(sup, ctypes.POINTER(ctypes.c_int))
        gp.n_suppress_tokens = len(ids)
    return (gp.src_lang, gp.tgt_lang, sup)


class _Call:
    """One generate(): its texts submitted as requests (at most _IN_FLIGHT
    at a time), a waiting thread per request, and the calling thread taking
    tokens and ends off one queue (so on_token runs on it)."""

    def __init__(self, engine, gp, texts, on_token, scores):
        self.engine, self.gp, self.texts = engine, gp, texts
        self.on_token, self.scores = on_token, scores
        self.events = queue.Queue()
        self.stop = False
        self.failure = None                 # on_token's exception
        self.stopped = False                # on_token returned true
        self.reqs = {}                      # text index -> request handle
        self.fns = []                       # the callbacks, alive while the requests are

    def _token_fn(self, i):
        def tell(inp, k, tok, lp, text, user):   # a library thread
            self.events.put(("token", i, k, text, tok, lp))
            return 1 if self.stop or i in self.ended_early else 0
        return N.TOKEN_FN(tell)

    ended_early = frozenset()   # requests a token hook ended (the Translator's callback)

    def _token(self, i, k, piece, tok, lp):
        """A token on the calling thread: on_token's, a true return stopping
        the whole call."""
        if self.on_token(i, k, N.text(piece)):
            self.stopped = True
            self._cancel_all()

    def _submit(self, i):
        if self.on_token is not None:
            fn = self._token_fn(i)
            self.fns.append(fn)
            self.gp.on_token = fn
        q = ctypes.c_void_p()
        st = self._start(i, q)
        if st:
            raise N.error(st, f"text {i}" if len(self.texts) > 1 else None)
        self.reqs[i] = q
        threading.Thread(target=self._wait, args=(i, q), name="encdec-generate",
                         daemon=True).start()

    def _start(self, i, q):   # submits input i: a status
        return N.lib.encdec_engine_generate(self.engine, self.texts[i], ctypes.byref(self.gp),
                                            ctypes.byref(q))

    def _collect_of(self, r, k):   # sequence k of result r as the call returns it
        return self._collect(N.lib.encdec_result_sequence(r, k).contents)

    def _collect(self, sq):   # one output sequence as the call returns it
        t = N.text(sq.text)
        return (t, float(sq.score)) if self.scores else t

    def _wait(self, i, q):   # a waiting thread: the request's end onto the queue
        r = ctypes.c_void_p()
        st = N.lib.encdec_request_wait(q, ctypes.byref(r))
        out, err = [], None
        if st:
            err = N.error(st, f"text {i}" if len(self.texts) > 1 else None)
        else:
            try:
                for k in range(N.lib.encdec_result_n_sequences(r)):
                    out.append(self._collect_of(r, k))
            finally:
                N.lib.encdec_result_free(r)
        self.events.put(("end", i, out, err))

    def _cancel_all(self):
        self.stop = True
        for q in self.reqs.values():
            N.lib.encdec_request_cancel(q)

    def run(self):
        n, nxt, ended = len(self.texts), 0, 0
        outs, err = [None] * n, None
        try:
            while ended < nxt or nxt < n:
                while err is None and not self.stop and nxt < n and nxt - ended < _IN_FLIGHT:
                    self._submit(nxt)
                    nxt += 1
                if ended == nxt:   # a failed submission left nothing running
                    break
                ev = self.events.get()
                if ev[0] == "token":
                    if self.stop or self.on_token is None or ev[1] in self.ended_early:
                        continue
                    try:
                        self._token(*ev[1:])
                    except BaseException as e:   # re-raised below; stop now
                        self.failure = e
                        self._cancel_all()
                    continue
                _, i, out, e = ev
                q = self.reqs.pop(i)
                N.lib.encdec_request_free(q)
                ended += 1
                outs[i] = out
                if i in self.ended_early:   # its own result, whatever the engine said
                    outs[i], e = self._ended_result(i), None
                if e is not None and err is None:
                    err = e
                    self._cancel_all()
        except BaseException as e:   # a failed submission (or KeyboardInterrupt): end the rest
            err = err or e
            self._cancel_all()
            while self.reqs:
                ev = self.events.get()
                if ev[0] == "end":
                    N.lib.encdec_request_free(self.reqs.pop(ev[1]))
        if self.failure is not None:
            raise self.failure
        if self.stopped:   # whether or not the engine had finished by then
            raise N.CancelledError(N.ERR_CANCELLED, "on_token stopped the generation")
        if err is not None:
            raise err
        return outs


Seq2SeqModel = T5Model   # the same class, by a name that fits the BART family too
