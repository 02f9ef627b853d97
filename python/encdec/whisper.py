"""WhisperModel: faster-whisper's API over encdec's engine.

    model = encdec.WhisperModel("tiny.en", compute_type="int8", cpu_threads=4)
    segments, info = model.transcribe("audio.flac", beam_size=5, word_timestamps=True)
    for s in segments:                    # lazy: each arrives as it is decoded
        print(s.start, s.end, s.text)

Each transcribe() is one request of the model's engine (encdec_engine_*):
requests made from several Python threads at once share the decoder steps,
and each gets the tokens it would get alone. The call returns once the
language is known (detected from the first 30 s, or given); the segments
follow through the library's segment callback while the caller iterates.
"""

import atexit
import ctypes
import inspect
import math
import queue
import sys
import threading
import weakref
from dataclasses import asdict, dataclass, fields
from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from . import _native as N
from . import audio as A
from . import vad as V
from ._model import Model, Owner, default_threads, resolve


class LiveEvent(NamedTuple):
    """An event of WhisperModel.stream(): "partial" or "final" text and
    the stream seconds of its first and last word."""
    type: str
    text: str
    start: float
    end: float
    utterance_end: bool


@dataclass
class Word:
    start: float
    end: float
    word: str
    probability: float

    def _asdict(self):
        return asdict(self)


@dataclass
class Segment:
    id: int                  # 1, 2, ... (faster-whisper's numbering)
    seek: int                # first mel frame (10 ms) of the window that produced it
    start: float
    end: float
    text: str
    tokens: List[int]        # its token ids, timestamp tokens included
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    words: Optional[List[Word]]
    temperature: Optional[float]   # of the decode kept (faster-whisper: of the last one tried)
    all_failed: bool = False       # every temperature failed: the best attempt was kept

    def _asdict(self):
        return asdict(self)


@dataclass
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    # the detection's probabilities, most likely first: filled in when the
    # transcription has finished (None while it runs, and when the language
    # was given or the model is English-only)
    all_language_probs: Optional[List[Tuple[str, float]]] = None
    transcription_options: Optional["TranscriptionOptions"] = None
    vad_options: Optional[V.VadOptions] = None


@dataclass
class TranscriptionOptions:
    """The options of a transcription, as faster-whisper's class of that
    name holds them (attributes; o["beam_size"] also works)."""
    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    repetition_penalty: float
    no_repeat_ngram_size: int
    log_prob_threshold: Optional[float]
    no_speech_threshold: Optional[float]
    compression_ratio_threshold: Optional[float]
    condition_on_previous_text: bool
    prompt_reset_on_temperature: float
    temperatures: List[float]
    initial_prompt: Optional[object]
    prefix: Optional[str]
    suppress_blank: bool
    suppress_tokens: Optional[List[int]]
    without_timestamps: bool
    max_initial_timestamp: float
    word_timestamps: bool
    prepend_punctuations: str
    append_punctuations: str
    multilingual: bool
    max_new_tokens: Optional[int]
    clip_timestamps: object
    hallucination_silence_threshold: Optional[float]
    hotwords: Optional[str]

    def __getitem__(self, key):   # the dict this used to be
        return getattr(self, key)


_DEFAULT_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def _temperatures(temperature):
    """faster-whisper's temperature schedule -> (first, increment). encdec
    steps by a fixed increment up to 1.0, so a list must be such a ramp."""
    if isinstance(temperature, (int, float)):
        ts = [float(temperature)]
    else:
        ts = [float(t) for t in temperature]
    if not ts or any(not 0.0 <= t <= 1.0 for t in ts):
        raise ValueError(f"temperature={temperature!r}: values in [0, 1]")
    if len(ts) == 1:
        return ts[0], 0.0
    step = ts[1] - ts[0]
    ramp = []
    t = ts[0]
    while t <= 1.0 + 1e-6 and len(ramp) <= len(ts):
        ramp.append(t)
        t = ts[0] + len(ramp) * step
    if step <= 0 or len(ramp) != len(ts) or any(abs(a - b) > 1e-6 for a, b in zip(ramp, ts)):
        raise ValueError(f"temperature={temperature!r}: encdec falls back along an evenly "
                         "spaced ramp that ends at or before 1.0 (such as 0.0, 0.2, ..., 1.0)")
    return ts[0], step


def _unsupported(name, value, default):
    if value != default:
        raise ValueError(f"{name}={value!r} is not supported by encdec (only {default!r})")


def _clips(clip_timestamps):
    if isinstance(clip_timestamps, str):
        parts = [p for p in clip_timestamps.split(",") if p.strip()]
        vals = [float(p) for p in parts]
    else:
        vals = [float(v) for v in clip_timestamps]
    if vals == [0.0]:
        return None
    if len(vals) > 2 * 256 or any(v < 0 or math.isnan(v) for v in vals):
        raise ValueError(f"clip_timestamps={clip_timestamps!r}: seconds >= 0, at most 256 clips")
    return vals


_END = object()


class _Request:
    """One transcription in flight: the request, its callbacks, the queue
    the segments go through, the thread that waits for its end."""

    def __init__(self, engine, pcm, tp, keep, info, log_progress, batch=None, owner=None):
        self.queue = queue.Queue()
        self.language = threading.Event()
        self.error = None
        self.info = info
        self.cancelled = False
        self.language_known = False
        self._words = bool(tp.word_timestamps)
        self._lock = threading.Lock()
        self._keep = keep            # strings and arrays the params point into
        self._pcm = pcm
        self._log = log_progress
        self._cb_error = None
        # the callbacks must live as long as the request
        self._on_segment = N.SEGMENT_FN(self._segment)
        self._on_language = N.LANGUAGE_FN(self._language)
        self._on_progress = N.PROGRESS_FN(self._progress)
        tp.on_segment, tp.on_language = self._on_segment, self._on_language
        if log_progress:
            tp.on_progress = self._on_progress
        self._engine, self._tp, self._batch, self._owner = engine, tp, batch, owner
        if batch is None:   # one request of the engine
            q = ctypes.c_void_p()
            N.check(N.lib.encdec_engine_transcribe(engine, pcm.ptr, pcm.n, ctypes.byref(tp),
                                                   ctypes.byref(q)))
            self._q = q
            target = self._wait
        else:               # batched: the library's call runs on this request's thread
            self._q = None
            self._flag = ctypes.c_int(0)
            batch.cancel = ctypes.pointer(self._flag)
            owner._batched.add(self)
            target = self._run_batched
        self._thread = threading.Thread(target=target, name="encdec-request", daemon=True)
        self._thread.start()

    # -- the library's threads --
    def _segment(self, sp, user):
        try:
            s = sp.contents
            words = None
            if self._words:
                words = [Word(w.start, w.end, N.text(w.word), w.probability)
                         for w in (s.words[i] for i in range(s.n_words))]
            self.queue.put(Segment(
                id=s.id + 1, seek=s.seek, start=s.start, end=s.end, text=N.text(s.text),
                tokens=[s.tokens[i].id for i in range(s.n_tokens)], avg_logprob=s.avg_logprob,
                compression_ratio=s.compression_ratio, no_speech_prob=s.no_speech_prob,
                words=words, temperature=s.temperature, all_failed=bool(s.all_failed)))
            return 1 if self.cancelled else 0
        except BaseException as e:     # never into C: stop the request, report it
            self._cb_error = e
            return 1

    def _language(self, code, prob, user):
        self.info.language = N.text(code)
        self.info.language_probability = float(prob)
        self.language_known = True
        self.language.set()

    def _progress(self, done, total, user):
        pct = 100.0 * done / total if total > 0 else 100.0
        sys.stderr.write(f"\rencdec: {pct:5.1f}% ({done:.1f} / {total:.1f} s)")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    # -- the waiting thread --
    def _wait(self):
        r = ctypes.c_void_p()
        st = N.lib.encdec_request_wait(self._q, ctypes.byref(r))
        self._finish(st, r)

    def _run_batched(self):
        r = ctypes.c_void_p()
        st = N.lib.encdec_engine_transcribe_batched(self._engine, self._pcm.ptr, self._pcm.n,
                                                    ctypes.byref(self._tp),
                                                    ctypes.byref(self._batch), ctypes.byref(r))
        self._finish(st, r)
        self._owner._batched.discard(self)

    def _finish(self, st, r):
        if st:
            self.error = self._cb_error or N.error(st)
        else:
            try:
                n = N.lib.encdec_result_n_language_probs(r)
                if n > 0:
                    code, p = ctypes.c_char_p(), ctypes.c_float()
                    probs = []
                    for i in range(n):
                        N.lib.encdec_result_language_prob(r, i, ctypes.byref(code), ctypes.byref(p))
                        probs.append((N.text(code.value), float(p.value)))
                    self.info.all_language_probs = probs
            finally:
                N.lib.encdec_result_free(r)
        with self._lock:
            if self._q:
                N.lib.encdec_request_free(self._q)
            self._q = None
        self._pcm = None
        self.language.set()
        self.queue.put(_END)

    def cancel(self):
        with self._lock:
            self.cancelled = True
            if self._q:
                N.lib.encdec_request_cancel(self._q)
            if self._batch is not None:
                self._flag.value = 1   # the batched call returns within milliseconds

    def join(self):
        self._thread.join()


class _Segments:
    """The lazy iterator transcribe() returns: each segment as soon as the
    library has it. Leaving it (break, close(), garbage collection) cancels
    the rest of the transcription."""

    def __init__(self, req):
        self._req = req
        self._done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        item = self._req.queue.get()
        if item is _END:
            self._done = True
            err = self._req.error
            if err is not None and not (self._req.cancelled and
                                        isinstance(err, N.CancelledError)):
                raise err
            raise StopIteration
        return item

    def close(self):
        if not self._done:
            self._req.cancel()
            self._done = True

    def __del__(self):
        self.close()


_live = weakref.WeakSet()


def _close_all():
    # before the interpreter goes: no library thread may call back into it later
    for m in list(_live):
        m.close()


atexit.register(_close_all)


class WhisperModel(Owner):
    """A Whisper model and its engine.

    model_size_or_path: a model directory (Hugging Face safetensors or
    CTranslate2 / faster-whisper), or the name of one installed by
    scripts/fetch-model.sh or downloaded before ("tiny.en", "base",
    "Systran/faster-whisper-small"; looked for in download_root, then
    ~/.cache/encdec/models). A faster-whisper size name or a hub id not
    installed is downloaded from the Hugging Face hub ($HF_ENDPOINT, $HF_TOKEN)
    into download_root or the cache, as faster-whisper does, unless
    local_files_only.
    compute_type: "float32" / "default" (weights as stored, f32 arithmetic),
    "bfloat16", "int8" (faster-whisper's other names map to these).
    device: "cpu", "cuda" (an NVIDIA GPU, device_index its number: a build
    with -DENCDEC_CUDA=ON; compute_type "default" or "bfloat16") or "auto"
    (the GPU where there is one, else the CPU).
    cpu_threads: the engine's threads (0: every core this process may use).
    num_workers: transcriptions decoded at once (more wait their turn; at
    least 8 run together: they share the decoder steps).
    """

    def __init__(self, model_size_or_path, device="auto", device_index=0,
                 compute_type="default", cpu_threads=0, num_workers=1, download_root=None,
                 local_files_only=False, isa=None, cross_kv="f32"):
        self._model = Model(resolve(model_size_or_path, download_root, "whisper-",
                                    local_files_only), compute_type,
                            isa, family="whisper", device=device, device_index=device_index)
        ep = N.lib.encdec_engine_default_params()
        ep.n_threads = default_threads(cpu_threads)
        ep.max_active = max(8, min(int(num_workers), 256))
        if cross_kv not in N.KV_TYPE:
            raise ValueError(f"cross_kv={cross_kv!r}: one of f32, f16, bf16")
        ep.cross_kv = N.KV_TYPE[cross_kv]
        e = ctypes.c_void_p()
        try:
            N.check(N.lib.encdec_engine_new(self._model.handle, ctypes.byref(ep), ctypes.byref(e)))
        except BaseException:
            self._model.close()
            raise
        self._engine = e
        self._batched = set()   # batched transcriptions running (their calls use the engine)
        self.cpu_threads = ep.n_threads
        _live.add(self)

    @property
    def is_multilingual(self):
        return bool(self._model.info["multilingual"])

    @property
    def supported_languages(self):
        out, i = [], 0
        while True:
            c = N.lib.encdec_model_language(self._model.handle, i)
            if c is None:
                return out
            out.append(N.text(c))
            i += 1


    def detect_language(self, audio=None, features=None, vad_filter=False, vad_parameters=None,
                        language_detection_segments=1, language_detection_threshold=0.5):
        """faster-whisper's detect_language(): (language, probability,
        all_language_probs) of the audio's first 30 s windows (up to
        language_detection_segments of them: the first whose most likely
        language is above language_detection_threshold decides, else the
        language most of them put first). audio: what transcribe() takes;
        with vad_filter only the speech is read. An English-only model
        answers ("en", 1.0, [("en", 1.0)]). features (a log-mel the caller
        computed) are not taken: encdec computes its own from the audio."""
        if not self._engine:
            raise ValueError("the model is closed")
        if audio is None:
            raise ValueError("detect_language: give audio (encdec computes the log-mel itself; "
                             "precomputed features are not taken)")
        if not 1 <= int(language_detection_segments) <= 100000:
            raise ValueError(f"language_detection_segments={language_detection_segments}: >= 1")
        if language_detection_threshold is None or \
                not 0 <= float(language_detection_threshold) <= 1:
            raise ValueError(f"language_detection_threshold={language_detection_threshold}: 0..1")
        vad_opts = V.options(vad_parameters) if vad_filter else None
        pcm = A.load(audio)
        if not self.is_multilingual:
            return "en", 1.0, [("en", 1.0)]
        tp = N.lib.encdec_transcribe_default_params()
        tp.detect_language_only = 1
        tp.language_detection_segments = int(language_detection_segments)
        tp.language_detection_threshold = float(language_detection_threshold)
        keep = []
        # the peer reads only the windows it may need: their log-mel is
        # normalised over them, not over the whole recording
        limit = int(language_detection_segments) * 30 * A.SAMPLE_RATE
        if vad_opts is not None:
            spans, left = [], limit
            for a, b in V.speech_spans(pcm, vad_opts, self.cpu_threads):
                if left > 0:
                    spans.append((a, min(b, a + left)))
                    left -= spans[-1][1] - a
            pcm.n = spans[-1][1] if spans else pcm.n
            arr = (N.Span * max(1, len(spans)))(*[N.Span(a, b) for a, b in spans])
            keep.append(arr)
            tp.speech, tp.n_speech = ctypes.cast(arr, ctypes.POINTER(N.Span)), len(spans)
        else:
            pcm.n = min(pcm.n, limit)
        info = TranscriptionInfo(language="", language_probability=1.0, duration=pcm.seconds,
                                 duration_after_vad=pcm.seconds)
        req = _Request(self._engine, pcm, tp, keep, info, False)
        req.join()
        if req.error is not None:
            raise req.error
        probs = info.all_language_probs or [(info.language, info.language_probability)]
        return info.language, info.language_probability, probs

    def _release(self):   # close(): cancels what runs, frees the engine (then the model)
        for r in list(getattr(self, "_batched", ())):
            r.cancel()
            r.join()
        e, self._engine = getattr(self, "_engine", None), None
        if e:
            N.lib.encdec_engine_free(e)

    def stream(self, chunks, sample_rate=16000, language=None, task="transcribe", beam_size=1,
               step=1.0, agreement=2, min_silence=0.6, vad_filter=False, silence_db=-45.0,
               max_buffer=30.0, max_step=3.0, idle_step=0.5, catch_up=4.5):
        """Live transcription (encdec's own; faster-whisper has none): the
        text of audio as it arrives. chunks: an iterable of mono pieces at
        sample_rate, NumPy arrays (float32 in [-1, 1], or int16 / int32) or
        bytes of s16le PCM. Yields LiveEvent(type, text, start, end,
        utterance_end): "partial" (the words not yet final; the next partial
        replaces it) and "final" (words that never change, after the earlier
        final text), times in seconds of the stream. Words become final when
        `agreement` successive decodes agree on them, or with their
        utterance once `min_silence` seconds of silence follow (the Silero
        VAD's verdict with vad_filter, else the level: under silence_db, or
        within 8 dB of the stream's noise floor where that is higher). A decode
        starts after each `step` seconds of audio (`idle_step` seconds while
        the engine runs nothing else; 0: always `step`); when `max_step` seconds
        wait for the decodes, the iterator waits for them, so a source
        faster than real time loses nothing (it is decoded max_step seconds
        at a time), and one that delivers audio as it is spoken gets its
        text within a second or two, or, on a machine too busy for a decode
        every step, keeps up with longer ones (up to `catch_up` seconds
        while it is behind and its audio comes at the wall clock's pace; 0:
        max_step).
        The decodes are requests of this model's engine, beside its other
        transcriptions. Method: docs/LIVE.md."""
        if not self._engine:
            raise ValueError("the model is closed")
        if task not in ("transcribe", "translate"):
            raise ValueError(f"task={task!r}: 'transcribe' or 'translate'")
        language = self._check_language(language)
        lp = N.lib.encdec_live_default_params()
        lp.sample_rate, lp.step_s, lp.agreement = int(sample_rate), float(step), int(agreement)
        lp.max_step_s, lp.idle_step_s = float(max_step), float(idle_step)
        lp.catch_up_s = float(catch_up)
        lp.min_silence_s, lp.silence_db, lp.max_buffer_s = float(min_silence), float(silence_db), \
            float(max_buffer)
        lang = language.encode() if language else None   # kept alive below
        lp.tp.language, lp.tp.translate = lang, task == "translate"
        lp.tp.beam_size = int(beam_size)
        if vad_filter:
            lp.vad = V.model()
        h = ctypes.c_void_p()
        N.check(N.lib.encdec_live_new(self._engine, ctypes.byref(lp), ctypes.byref(h)), "stream")
        ev = N.LiveEvent()

        def ready(wait_ms):
            while N.lib.encdec_live_next(h, ctypes.byref(ev), wait_ms):
                if ev.kind == 2:   # DONE
                    N.check(ev.status, "stream")
                    return True
                yield LiveEvent("partial" if ev.kind == 0 else "final", N.text(ev.text),
                                round(ev.start, 3), round(ev.end, 3), bool(ev.utterance_end))
            return False

        try:
            for chunk in chunks:
                x = np.frombuffer(bytes(chunk), dtype="<i2") if isinstance(
                    chunk, (bytes, bytearray, memoryview)) else np.asarray(chunk)
                x = A._as_float_samples(x.reshape(-1))
                N.check(N.lib.encdec_live_feed(
                    h, x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), x.size), "stream")
                yield from ready(0)
                while N.lib.encdec_live_backlog(h) >= N.lib.encdec_live_ahead(h):   # behind
                    yield from ready(20)
            N.check(N.lib.encdec_live_finish(h), "stream")
            yield from ready(-1)
        finally:
            N.lib.encdec_live_free(h)
            del lang

    def _check_language(self, language):
        if language is None:
            return None
        if N.lib.encdec_model_find_language(self._model.handle, language.encode()) >= 0:
            return language
        if N.lib.encdec_language_name(language.encode()) is None:
            codes = []
            i = 0
            while N.lib.encdec_language_code(i) is not None:
                codes.append(N.text(N.lib.encdec_language_code(i)))
                i += 1
            raise ValueError(f"language={language!r}: not a Whisper language; a code or English "
                             f"name, one of {', '.join(codes)}")
        raise ValueError(f"language={language!r}: this model is English-only")

    def _params(self, language, task, beam_size, best_of, patience, length_penalty,
                repetition_penalty, no_repeat_ngram_size, temperature,
                compression_ratio_threshold, log_prob_threshold, no_speech_threshold,
                condition_on_previous_text, prompt_reset_on_temperature, initial_prompt, prefix,
                suppress_blank, suppress_tokens, without_timestamps, max_initial_timestamp,
                word_timestamps, prepend_punctuations, append_punctuations, max_new_tokens,
                hallucination_silence_threshold, hotwords, language_detection_segments,
                language_detection_threshold, multilingual, chunk_length, seed,
                loop_detection, fallback_keep_last):
        """transcribe()'s options checked, as the library's parameters (and
        the objects they point into, kept alive with them)."""
        _unsupported("length_penalty", length_penalty, 1)
        _unsupported("prompt_reset_on_temperature", prompt_reset_on_temperature, 0.5)
        _unsupported("suppress_blank", suppress_blank, True)
        _unsupported("suppress_tokens", list(suppress_tokens or []), [-1])
        _unsupported("max_initial_timestamp", max_initial_timestamp, 1.0)
        if task not in ("transcribe", "translate"):
            raise ValueError(f"task={task!r}: 'transcribe' or 'translate'")
        prompt_ids = None
        if initial_prompt is not None and not isinstance(initial_prompt, str):
            try:   # faster-whisper's other form: token ids, taken as they are
                prompt_ids = [int(t) for t in initial_prompt]
            except (TypeError, ValueError):
                raise ValueError("initial_prompt: a text or token ids") from None
            initial_prompt = None
        t0, dt = _temperatures(temperature)
        if not 1 <= int(beam_size) <= 16:
            raise ValueError(f"beam_size={beam_size}: 1..16")
        if not 1 <= int(best_of) <= 16:
            raise ValueError(f"best_of={best_of}: 1..16")
        if max_new_tokens is not None and not 1 <= int(max_new_tokens) <= 448:
            raise ValueError(f"max_new_tokens={max_new_tokens}: 1..448")
        if not 0.001 <= float(repetition_penalty) <= 1000:
            raise ValueError(f"repetition_penalty={repetition_penalty}: 0.001..1000 (1: off)")
        if not 0 <= int(no_repeat_ngram_size) <= 448:
            raise ValueError(f"no_repeat_ngram_size={no_repeat_ngram_size}: 0..448 (0: off)")
        if hallucination_silence_threshold is not None and \
                not 0 <= float(hallucination_silence_threshold) < math.inf:
            raise ValueError(f"hallucination_silence_threshold={hallucination_silence_threshold}: "
                             "seconds >= 0, or None")
        if chunk_length is not None and not 1 <= float(chunk_length) <= 30:
            raise ValueError(f"chunk_length={chunk_length}: 1..30 seconds")
        if not 1 <= int(language_detection_segments) <= 100000:
            raise ValueError(f"language_detection_segments={language_detection_segments}: >= 1")
        if language_detection_threshold is None or \
                not 0 <= float(language_detection_threshold) <= 1:
            raise ValueError(f"language_detection_threshold={language_detection_threshold}: 0..1")
        language = self._check_language(language)

        def nan_if_none(v):
            return float("nan") if v is None else float(v)

        keep = []

        def cstr(s):
            if s is None:
                return None
            b = s.encode("utf-8")
            keep.append(b)
            return b

        tp = N.lib.encdec_transcribe_default_params()
        tp.language = cstr(language)
        tp.translate = int(task == "translate")
        tp.max_tokens = int(max_new_tokens or 0)
        tp.beam_size = int(beam_size)
        tp.patience = float(patience)
        tp.best_of = int(best_of)
        tp.temperature, tp.temperature_increment = t0, dt
        tp.timestamps = int(not without_timestamps)
        tp.compression_ratio_threshold = nan_if_none(compression_ratio_threshold)
        tp.logprob_threshold = nan_if_none(log_prob_threshold)
        tp.no_speech_threshold = nan_if_none(no_speech_threshold)
        tp.condition_on_previous_text = int(bool(condition_on_previous_text))
        tp.initial_prompt = cstr(initial_prompt)
        if prompt_ids:
            arr = (ctypes.c_int * len(prompt_ids))(*prompt_ids)
            keep.append(arr)
            tp.initial_prompt_tokens = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int))
            tp.n_initial_prompt_tokens = len(prompt_ids)
        tp.prefix = cstr(prefix)
        tp.hotwords = cstr(hotwords)
        tp.word_timestamps = int(bool(word_timestamps))
        tp.prepend_punctuations = cstr(prepend_punctuations)
        tp.append_punctuations = cstr(append_punctuations)
        tp.loop_detection = int(bool(loop_detection))
        tp.fallback_keep_last = int(bool(fallback_keep_last))
        tp.seed = int(seed)
        tp.repetition_penalty = float(repetition_penalty)
        tp.no_repeat_ngram_size = int(no_repeat_ngram_size)
        tp.hallucination_silence_threshold = nan_if_none(hallucination_silence_threshold)
        tp.chunk_length = float(chunk_length or 0)
        tp.language_detection_segments = int(language_detection_segments)
        tp.language_detection_threshold = float(language_detection_threshold)
        # faster-whisper: an English-only model ignores multilingual (with a warning)
        tp.multilingual = int(bool(multilingual) and self.is_multilingual)
        return tp, keep

    def transcribe(self, audio, language=None, task="transcribe", log_progress=False,
                   beam_size=5, best_of=5, patience=1, length_penalty=1, repetition_penalty=1,
                   no_repeat_ngram_size=0, temperature=_DEFAULT_TEMPERATURES,
                   compression_ratio_threshold=2.4, log_prob_threshold=-1.0,
                   no_speech_threshold=0.6, condition_on_previous_text=True,
                   prompt_reset_on_temperature=0.5, initial_prompt=None, prefix=None,
                   suppress_blank=True, suppress_tokens=(-1,), without_timestamps=False,
                   max_initial_timestamp=1.0, word_timestamps=False,
                   prepend_punctuations="\"'“¿([{-",
                   append_punctuations="\"'.。,，!！?？:：”)]}、", multilingual=False,
                   vad_filter=False, vad_parameters=None, max_new_tokens=None,
                   chunk_length=None, clip_timestamps="0", hallucination_silence_threshold=None,
                   hotwords=None, language_detection_threshold=0.5,
                   language_detection_segments=1, seed=0, loop_detection=True,
                   fallback_keep_last=False):
        """faster-whisper's transcribe(): returns (segments, info) where
        segments is a lazy iterator. audio: a path, a file-like object,
        bytes of an encoded file, or a float32 NumPy array at 16 kHz.
        Options encdec does not have (length_penalty, suppress_blank,
        suppress_tokens other than [-1], max_initial_timestamp other than 1,
        prompt_reset_on_temperature other than 0.5) raise ValueError; seed (sampling at temperature > 0),
        loop_detection (faster, the same output) and fallback_keep_last
        (when every temperature fails a window: keep the last attempt, as
        openai-whisper, not the best, as faster-whisper) are encdec's own."""
        if not self._engine:
            raise ValueError("the model is closed")
        tp, keep = self._params(**_pick(locals()))
        language = self._check_language(language)
        clips = _clips(clip_timestamps)
        if clips:
            arr = (ctypes.c_double * len(clips))(*clips)
            keep.append(arr)
            tp.clip_timestamps, tp.n_clip_timestamps = arr, len(clips)

        vad_opts = V.options(vad_parameters) if vad_filter else None   # before any work
        pcm = A.load(audio)
        after_vad = pcm.seconds
        if vad_filter and not clips:
            # faster-whisper's vad_filter: the speech spans put end to end are
            # transcribed, every time mapped back (clip_timestamps win over it)
            spans = V.speech_spans(pcm, vad_opts, self.cpu_threads)
            arr = (N.Span * max(1, len(spans)))(*[N.Span(a, b) for a, b in spans])
            keep.append(arr)
            tp.speech, tp.n_speech = ctypes.cast(arr, ctypes.POINTER(N.Span)), len(spans)
            after_vad = sum(b - a for a, b in spans) / A.SAMPLE_RATE
        options = _options(locals())
        info = TranscriptionInfo(language=language or "", language_probability=1.0,
                                 duration=pcm.seconds, duration_after_vad=after_vad,
                                 transcription_options=options, vad_options=vad_opts)
        req = _Request(self._engine, pcm, tp, keep, info, log_progress)
        req.language.wait()
        if not req.language_known and req.error is not None:
            raise req.error     # bad audio, ...: at once, as faster-whisper does
        return _Segments(req), info


def _pick(scope):
    """The arguments of WhisperModel._params out of a transcribe()'s locals()."""
    names = list(inspect.signature(WhisperModel._params).parameters)[1:]
    return {k: scope[k] for k in names}


def _options(scope):
    """info.transcription_options out of a transcribe()'s locals()."""
    t = scope["temperature"]
    names = [f.name for f in fields(TranscriptionOptions)]
    o = {k: scope[k] for k in names if k in scope}
    o["temperatures"] = [t] if isinstance(t, (int, float)) else list(t)
    c = o["clip_timestamps"]
    if isinstance(c, str):   # faster-whisper turns it into numbers as it starts
        o["clip_timestamps"] = [float(x) for x in c.split(",")] if c else []
    if o["suppress_tokens"] is not None:
        o["suppress_tokens"] = list(o["suppress_tokens"])
    return TranscriptionOptions(**o)


class BatchedInferencePipeline:
    """faster-whisper's BatchedInferencePipeline over encdec's engine.

        batched = encdec.BatchedInferencePipeline(model)
        segments, info = batched.transcribe("talk.flac", batch_size=16)

    The speech (Silero VAD by default; clip_timestamps as a list of
    {"start": s, "end": s} in seconds) is cut into chunks of up to
    chunk_length (30) seconds, and batch_size chunks at a time are requests
    of the model's engine, their decoder steps shared. Unlike the peer's,
    each chunk keeps encdec's whole quality path: the temperature list is a
    fallback (pass temperature=0 for the peer's single decode), no-speech
    skips, loop detection, word times; chunks are independent (no text
    carried across them), and each is transcribed token for token as it
    would be alone. Segments come in order, lazily."""

    def __init__(self, model):
        if not isinstance(model, WhisperModel):
            raise ValueError("BatchedInferencePipeline: an encdec.WhisperModel")
        self.model = model

    def transcribe(self, audio, language=None, task="transcribe", log_progress=False,
                   beam_size=5, best_of=5, patience=1, length_penalty=1, repetition_penalty=1,
                   no_repeat_ngram_size=0, temperature=_DEFAULT_TEMPERATURES,
                   compression_ratio_threshold=2.4, log_prob_threshold=-1.0,
                   no_speech_threshold=0.6, condition_on_previous_text=True,
                   prompt_reset_on_temperature=0.5, initial_prompt=None, prefix=None,
                   suppress_blank=True, suppress_tokens=(-1,), without_timestamps=True,
                   max_initial_timestamp=1.0, word_timestamps=False,
                   prepend_punctuations="\"'“¿([{-",
                   append_punctuations="\"'.。,，!！?？:：”)]}、", multilingual=False,
                   vad_filter=True, vad_parameters=None, max_new_tokens=None,
                   chunk_length=None, clip_timestamps=None, hallucination_silence_threshold=None,
                   batch_size=8, hotwords=None, language_detection_threshold=0.5,
                   language_detection_segments=1, seed=0, loop_detection=True,
                   fallback_keep_last=False, min_text_rate=1.0):
        """faster-whisper's BatchedInferencePipeline.transcribe(): (segments,
        info), segments a lazy iterator in time order. multilingual: every
        chunk detects its own language when none is given. min_text_rate
        (encdec's; without timestamps): a chunk of 5 s or more decoded to
        fewer text tokens a second stopped early (Whisper can end its text
        at a pause and drop the speech after it) and is transcribed again
        with timestamps; 0 keeps the peer's single decode."""
        m = self.model
        if not m._engine:
            raise ValueError("the model is closed")
        if not 1 <= int(batch_size) <= 256:
            raise ValueError(f"batch_size={batch_size}: 1..256")
        chunk = 30.0 if chunk_length is None else float(chunk_length)
        if not 1.0 <= chunk <= 30.0:
            raise ValueError(f"chunk_length={chunk_length}: 1..30 seconds")
        hallucination_silence_threshold = None   # the peer's batched pipeline ignores it
        tp, keep = m._params(**_pick(locals()))
        if not 0 <= float(min_text_rate) <= 100:
            raise ValueError(f"min_text_rate={min_text_rate}: 0..100 text tokens a second")
        tp.min_text_rate = float(min_text_rate)
        language = m._check_language(language)
        clips = None
        if clip_timestamps:   # the peer's batched form: [{"start": s, "end": s}, ...]
            try:
                clips = [float(v) for c in clip_timestamps for v in (c["start"], c["end"])]
            except (TypeError, KeyError, ValueError):
                raise ValueError("clip_timestamps: a list of {'start': seconds, 'end': seconds}")
        vad_opts = None
        if vad_filter and not clips:   # the peer's batched defaults
            if vad_parameters is None:
                vad_opts = V.VadOptions(max_speech_duration_s=chunk, min_silence_duration_ms=160)
            elif isinstance(vad_parameters, dict):
                d = {k: v for k, v in vad_parameters.items() if k != "max_speech_duration_s"}
                vad_opts = V.options(dict(d, max_speech_duration_s=chunk))
            else:
                vad_opts = V.options(vad_parameters)
        pcm = A.load(audio)
        after_vad = pcm.seconds
        if clips:
            arr = (ctypes.c_double * len(clips))(*clips)
            keep.append(arr)
            tp.clip_timestamps, tp.n_clip_timestamps = arr, len(clips)
            after_vad = sum(min(b, pcm.seconds) - a for a, b in zip(clips[::2], clips[1::2]))
        elif vad_opts is not None:
            spans = V.speech_spans(pcm, vad_opts, m.cpu_threads)
            arr = (N.Span * max(1, len(spans)))(*[N.Span(a, b) for a, b in spans])
            keep.append(arr)
            tp.speech, tp.n_speech = ctypes.cast(arr, ctypes.POINTER(N.Span)), len(spans)
            after_vad = sum(b - a for a, b in spans) / A.SAMPLE_RATE
        elif pcm.seconds > chunk:
            raise RuntimeError("No clip timestamps found. Set 'vad_filter' to True or provide "
                               "'clip_timestamps'.")
        bp = N.lib.encdec_batch_default_params()
        bp.batch_size = int(batch_size)
        bp.chunk_length = chunk
        bp.language_per_chunk = int(bool(multilingual))
        options = _options(locals())
        info = TranscriptionInfo(language=language or "", language_probability=1.0,
                                 duration=pcm.seconds, duration_after_vad=after_vad,
                                 transcription_options=options, vad_options=vad_opts)
        req = _Request(m._engine, pcm, tp, keep, info, log_progress, batch=bp, owner=m)
        req.language.wait()
        if not req.language_known and req.error is not None:
            raise req.error
        return _Segments(req), info
