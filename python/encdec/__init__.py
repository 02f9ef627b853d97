"""encdec: Whisper, T5 and BART-family inference on the CPU, from Python.

    import encdec
    model = encdec.WhisperModel("tiny.en", compute_type="int8")
    segments, info = model.transcribe("audio.flac")
    for segment in segments:
        print("[%.2fs -> %.2fs] %s" % (segment.start, segment.end, segment.text))

The API follows faster-whisper's (WhisperModel, transcribe, Segment, Word,
TranscriptionInfo, BatchedInferencePipeline, decode_audio), so switching is
an import. The work is
done by libencdec (bundled), through ctypes, with the GIL released.
"""

from ._native import ArgumentError, CancelledError, EncdecError
from ._native import lib as _lib
from .audio import decode_audio
from .langid import LanguageIdentifier
from .t5 import Seq2SeqModel, T5Model
from .translator import TranslationResult, Translator
from .vad import VadOptions, get_speech_timestamps
from .whisper import (BatchedInferencePipeline, LiveEvent, Segment, TranscriptionInfo,
                      TranscriptionOptions, WhisperModel, Word)

__version__ = "0.1.0"


def build_info():
    """The library's build: version, kernel set of this CPU, BLAS."""
    return _lib.encdec_build_info().decode()


__all__ = ["WhisperModel", "BatchedInferencePipeline", "T5Model", "Seq2SeqModel", "Translator",
           "TranslationResult", "Segment", "Word", "LiveEvent",
           "TranscriptionInfo", "TranscriptionOptions", "decode_audio",
           "VadOptions", "get_speech_timestamps", "LanguageIdentifier",
           "EncdecError", "ArgumentError", "CancelledError", "build_info", "__version__"]
