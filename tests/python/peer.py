"""faster-whisper, the peer, with its answers kept.

A test asks the peer what it asks faster-whisper (transcribe, detect_language,
BatchedInferencePipeline.transcribe): the answer comes from
tests/data/faster-whisper-answers.json.gz when faster-whisper gave it before
to the same question (the model, the audio's samples or file bytes, every
argument), else from faster-whisper itself, run here. The kept answers are
faster-whisper's own, made by tools/faster_whisper_answers.py (which runs
the suite with ENCDEC_FW_LIVE=1 ENCDEC_FW_RECORD=1: every question asked
live, every answer written back); encdec never writes one. They save the
suite faster-whisper's share of the time (about half of test_python's).

ENCDEC_FW_LIVE=1   ask faster-whisper every time (the kept answers unread)
ENCDEC_FW_RECORD=1 write the answers this run got back to the file at the end
"""

import dataclasses
import gzip
import hashlib
import json
import os
import pathlib

import numpy as np
import pytest

STORE = pathlib.Path(__file__).resolve().parents[1] / "data" / "faster-whisper-answers.json.gz"
LIVE = os.environ.get("ENCDEC_FW_LIVE") == "1"
RECORD = os.environ.get("ENCDEC_FW_RECORD") == "1"


def _fw():
    return pytest.importorskip("faster_whisper")


class Answers:
    """The kept answers: question key -> faster-whisper's answer as JSON."""

    def __init__(self):
        self.kept, self.new = {}, {}
        if STORE.exists() and not LIVE:
            with gzip.open(STORE, "rt", encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("faster_whisper") == self.version():
                self.kept = doc["answers"]

    @staticmethod
    def version():
        try:
            from importlib.metadata import version
            return version("faster-whisper")
        except Exception:
            return None

    def get(self, key):
        return self.new.get(key, self.kept.get(key))

    def put(self, key, value):
        self.new[key] = value

    def save(self):
        if not RECORD or not self.new:
            return
        answers = dict(self.kept)
        answers.update(self.new)
        doc = {"faster_whisper": self.version(),
               "made_by": "tools/faster_whisper_answers.py", "answers": answers}
        with gzip.open(STORE, "wt", encoding="utf-8", compresslevel=9) as f:
            json.dump(doc, f, sort_keys=True, separators=(",", ":"))


ANSWERS = Answers()


def _plain(v):
    """An argument as JSON: dataclasses (VadOptions) as their fields, numpy
    arrays as a digest of their samples."""
    if dataclasses.is_dataclass(v):
        return {"@" + type(v).__name__: _plain(dataclasses.asdict(v))}
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in sorted(v.items())}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return "samples:" + hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def _audio(a):
    if isinstance(a, (str, os.PathLike)):
        return "file:" + hashlib.sha256(pathlib.Path(a).read_bytes()).hexdigest()
    if isinstance(a, np.ndarray):
        return _plain(a.astype(np.float32, copy=False))
    raise TypeError(f"the peer's answers know no audio of type {type(a).__name__}")


def _key(model, call, audio, kw):
    return json.dumps([model, call, _audio(audio), _plain(kw)], sort_keys=True)


def _segments_json(segs):
    return [dataclasses.asdict(s) for s in segs]


def _segments(rows):
    from faster_whisper.transcribe import Segment, Word
    out = []
    for r in rows:
        r = dict(r)
        if r.get("words") is not None:
            r["words"] = [Word(**w) for w in r["words"]]
        out.append(Segment(**r))
    return out


def _info_json(info):
    d = {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
    o = info.transcription_options
    d["transcription_options"] = dataclasses.asdict(o)
    d["tuples"] = [f.name for f in dataclasses.fields(o) if isinstance(getattr(o, f.name), tuple)]
    d["vad_options"] = dataclasses.asdict(info.vad_options) if info.vad_options else None
    return json.loads(json.dumps(d))


def _info(d):
    from faster_whisper.transcribe import TranscriptionInfo, TranscriptionOptions
    from faster_whisper.vad import VadOptions
    d = dict(d)
    o = dict(d["transcription_options"])
    for f in d.pop("tuples", []):   # tuples as faster-whisper made them (JSON keeps lists)
        o[f] = tuple(o[f])
    d["transcription_options"] = TranscriptionOptions(**o)
    d["vad_options"] = VadOptions(**d["vad_options"]) if d["vad_options"] else None
    if d.get("all_language_probs") is not None:
        d["all_language_probs"] = [tuple(p) for p in d["all_language_probs"]]
    return TranscriptionInfo(**d)


class Peer:
    """faster-whisper on one model (f32, the threads given), loaded only
    when a question has no kept answer."""

    def __init__(self, name, path, threads):
        self.name, self.path, self.threads = name, str(path), threads
        self._model = None

    @property
    def model(self):
        if self._model is None:
            self._model = _fw().WhisperModel(self.path, device="cpu", compute_type="float32",
                                             cpu_threads=self.threads)
        return self._model

    @property
    def hf_tokenizer(self):
        import tokenizers
        return tokenizers.Tokenizer.from_file(os.path.join(self.path, "tokenizer.json"))

    def _live_transcribe(self, run):
        """run() -> (segments, info) live: faster-whisper keeps a call's
        chunk_length in its feature extractor; put it back after."""
        fe = self.model.feature_extractor
        saved = (fe.n_samples, fe.nb_max_frames)
        try:
            segs, info = run()
            return list(segs), info
        finally:
            fe.n_samples, fe.nb_max_frames = saved

    def _transcribe(self, call, audio, kw, run):
        key = _key(self.name, call, audio, kw)
        got = ANSWERS.get(key)
        if got is None:
            segs, info = self._live_transcribe(run)
            ANSWERS.put(key, {"segments": _segments_json(segs), "info": _info_json(info)})
            got = ANSWERS.get(key)
        return _segments(got["segments"]), _info(got["info"])

    def transcribe(self, audio, **kw):
        return self._transcribe("transcribe", audio, kw, lambda: self.model.transcribe(audio, **kw))

    def batched_transcribe(self, audio, **kw):
        """BatchedInferencePipeline(model).transcribe(audio, **kw)."""
        def run():
            return _fw().BatchedInferencePipeline(self.model).transcribe(audio, **kw)
        return self._transcribe("batched", audio, kw, run)

    def detect_language(self, audio, **kw):
        key = _key(self.name, "detect_language", audio, kw)
        got = ANSWERS.get(key)
        if got is None:
            lang, p, probs = self.model.detect_language(audio, **kw)
            ANSWERS.put(key, json.loads(json.dumps([lang, p, probs])))
            got = ANSWERS.get(key)
        lang, p, probs = got
        return lang, p, [tuple(x) for x in probs]
