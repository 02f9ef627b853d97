"""T5Model: text-to-text generation for the T5 family (T5, Flan-T5, mT5,
umT5), with Hugging Face generate()'s parameter names.

    model = encdec.T5Model("models/flan-t5-small")
    model.generate(["translate English to German: Hello."], max_new_tokens=32)

One call encodes its inputs as one packed batch and decodes them together
(encdec_generate). The model's session is used by one call at a time; the
GIL is released while it runs.
"""

import ctypes
import threading

from . import _native as N
from ._model import Model, Owner, default_threads, resolve


class T5Model(Owner):
    def __init__(self, path, compute_type="default", cpu_threads=0, isa=None, cross_kv="f32"):
        self._model = Model(resolve(path, None), compute_type, isa, family="t5")
        sp = N.lib.encdec_session_default_params()
        sp.n_threads = default_threads(cpu_threads)
        if cross_kv not in N.KV_TYPE:
            raise ValueError(f"cross_kv={cross_kv!r}: one of f32, f16, bf16")
        sp.cross_kv = N.KV_TYPE[cross_kv]
        s = ctypes.c_void_p()
        try:
            N.check(N.lib.encdec_session_new(self._model.handle, ctypes.byref(sp), ctypes.byref(s)))
        except BaseException:
            self._model.close()
            raise
        self._session = s
        self._lock = threading.Lock()

    def _release(self):   # close(): frees the session (then the model)
        s, self._session = getattr(self, "_session", None), None
        if s:
            N.lib.encdec_session_free(s)

    def generate(self, texts, max_new_tokens=128, num_beams=1, do_sample=False, temperature=1.0,
                 top_k=0, top_p=1.0, seed=0, num_return_sequences=1, length_penalty=1.0,
                 early_stopping=False, truncate=False, return_scores=False, on_token=None):
        """Generates for one text (a str: returns a str, or a list of
        num_return_sequences strs) or a list of texts (returns a list of
        those, one per text). Greedy by default; num_beams > 1: beam search
        (Hugging Face's); do_sample: sampling with temperature, top_k, top_p
        and seed (the same seed gives the same output). return_scores: each
        output is a (text, score) pair (greedy and sampling: the sum of the
        tokens' log-probabilities; beam search: the length-normalised score).
        on_token (greedy and sampling): on_token(text_index, sequence_index,
        piece) for every token as it is chosen, piece the text it adds (whole
        characters; may be empty); a true return stops the generation
        (EncdecError, status "cancelled"). Called on this thread."""
        if not self._session:
            raise ValueError("the model is closed")
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        if not items:
            return []
        if not all(isinstance(t, str) for t in items):
            raise TypeError("generate: texts must be a str or a list of str")
        gp = N.lib.encdec_generate_default_params()
        gp.max_new_tokens = int(max_new_tokens)
        gp.num_beams = int(num_beams)
        gp.do_sample = int(bool(do_sample))
        gp.temperature = float(temperature)
        gp.top_k = int(top_k)
        gp.top_p = float(top_p)
        gp.seed = int(seed)
        gp.num_return_sequences = int(num_return_sequences)
        gp.length_penalty = float(length_penalty)
        gp.early_stopping = int(bool(early_stopping))
        gp.truncate = int(bool(truncate))
        failure = []
        if on_token is not None:
            def tell(i, k, tok, lp, text, user):
                try:
                    return 1 if on_token(i, k, text.decode("utf-8")) else 0
                except BaseException as e:   # re-raised after the call; stop now
                    failure.append(e)
                    return 1
            gp.on_token = N.TOKEN_FN(tell)
        enc = [t.encode("utf-8") for t in items]
        arr = (ctypes.c_char_p * len(enc))(*enc)
        r = ctypes.c_void_p()
        with self._lock:
            st = N.lib.encdec_generate(self._session, arr, len(enc), ctypes.byref(gp), ctypes.byref(r))
        if failure:
            raise failure[0]
        N.check(st)
        try:
            out = [[] for _ in items]
            for i in range(N.lib.encdec_result_n_sequences(r)):
                sq = N.lib.encdec_result_sequence(r, i).contents
                t = N.text(sq.text)
                out[sq.input].append((t, float(sq.score)) if return_scores else t)
        finally:
            N.lib.encdec_result_free(r)
        if num_return_sequences == 1:
            out = [o[0] for o in out]
        return out[0] if single else out
