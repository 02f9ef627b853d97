"""Speech detection with Silero VAD v6 (faster_whisper.vad's counterpart):
VadOptions, get_speech_timestamps, and the model encdec loads once.

    from encdec.vad import VadOptions, get_speech_timestamps
    spans = get_speech_timestamps(audio, VadOptions(min_silence_duration_ms=500))
    # [{"start": samples, "end": samples}, ...] at 16 kHz

The network runs in libencdec (its C implementation of the model
faster-whisper ships), with faster-whisper's rules for turning frame
probabilities into spans. The model is installed by
scripts/fetch-model.sh vad; $ENCDEC_VAD names another directory.
"""

import ctypes
import math
import os
import threading
from dataclasses import asdict, dataclass, fields
from typing import List, Optional

from . import _native as N
from . import audio as A
from ._model import data_dir


@dataclass
class VadOptions:
    """faster-whisper's VadOptions: the same fields and defaults."""
    threshold: float = 0.5
    neg_threshold: Optional[float] = None
    min_speech_duration_ms: int = 0
    max_speech_duration_s: float = float("inf")
    min_silence_duration_ms: int = 2000
    speech_pad_ms: int = 400

    def _asdict(self):
        return asdict(self)


def options(vad_parameters):
    """VadOptions from None, a dict or VadOptions (unknown keys: ValueError)."""
    if vad_parameters is None:
        return VadOptions()
    if isinstance(vad_parameters, VadOptions):
        return vad_parameters
    if isinstance(vad_parameters, dict):
        known = {f.name for f in fields(VadOptions)}
        bad = sorted(set(vad_parameters) - known)
        if bad:
            raise ValueError(f"vad_parameters: unknown {', '.join(bad)} (known: "
                             f"{', '.join(sorted(known))})")
        return VadOptions(**vad_parameters)
    raise ValueError(f"vad_parameters: a dict or VadOptions, not {type(vad_parameters).__name__}")


def to_params(o):
    p = N.lib.encdec_vad_default_params()
    p.threshold = float(o.threshold)
    p.neg_threshold = float("nan") if o.neg_threshold is None else float(o.neg_threshold)
    p.min_speech_duration_ms = int(o.min_speech_duration_ms)
    p.max_speech_duration_s = float(o.max_speech_duration_s)
    p.min_silence_duration_ms = int(o.min_silence_duration_ms)
    p.speech_pad_ms = int(o.speech_pad_ms)
    return p


def default_path():
    return data_dir("ENCDEC_VAD", "silero-vad-v6")


_model, _lock = None, threading.Lock()


def model():
    """The loaded VAD (once per process; freed at exit)."""
    global _model
    with _lock:
        if _model is None:
            path = default_path()
            if not os.path.isdir(path):
                raise N.EncdecError(N.ERR_NO_MODEL, f"the Silero VAD model is not installed at "
                                    f"{path} (scripts/fetch-model.sh vad installs it; $ENCDEC_VAD "
                                    f"names another directory)")
            h = ctypes.c_void_p()
            N.check(N.lib.encdec_vad_load(path.encode(), ctypes.byref(h)), "Silero VAD")
            _model = h
        return _model


def speech_spans(pcm, vad_options, threads=1):
    """The spans of a _Pcm as a list of (start, end) samples."""
    out, n = ctypes.POINTER(N.Span)(), ctypes.c_int()
    p = to_params(vad_options)
    N.check(N.lib.encdec_vad_speech(model(), pcm.ptr, pcm.n, ctypes.byref(p), int(threads),
                                    ctypes.byref(out), ctypes.byref(n)))
    spans = [(out[i].start, out[i].end) for i in range(n.value)]
    if out:
        N.lib.encdec_free(out)
    return spans


def get_speech_timestamps(audio, vad_options: Optional[VadOptions] = None, sampling_rate=16000,
                          **kwargs) -> List[dict]:
    """faster-whisper's get_speech_timestamps: the speech of audio (a path,
    bytes, a file object or an array of 16 kHz samples) as
    [{"start": sample, "end": sample}, ...]."""
    if sampling_rate != 16000:
        raise ValueError("get_speech_timestamps: encdec's VAD runs at 16000 Hz")
    o = vad_options if vad_options is not None else VadOptions(**kwargs)
    if isinstance(o.max_speech_duration_s, (int, float)) and math.isnan(o.max_speech_duration_s):
        raise ValueError("max_speech_duration_s: a number or inf")
    return [{"start": s, "end": e} for s, e in speech_spans(A.load(audio), o)]
