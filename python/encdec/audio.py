"""Audio in: paths, file-like objects, bytes and arrays -> 16 kHz mono PCM."""

import ctypes
import os

import numpy as np

from . import _native as N

SAMPLE_RATE = 16000


class _Pcm:
    """16 kHz mono float32 samples: a pointer and a count, owned by the
    library (freed with this object) or by a NumPy array kept alive here."""

    def __init__(self, ptr, n, owner=None):
        self.ptr, self.n, self._owner = ptr, n, owner

    @property
    def seconds(self):
        return self.n / SAMPLE_RATE

    def array(self):
        if self._owner is not None:
            return self._owner
        return np.ctypeslib.as_array(self.ptr, shape=(self.n,)).copy() if self.n else \
            np.zeros(0, np.float32)

    def __del__(self):
        if self._owner is None and self.ptr:
            N.lib.encdec_free(self.ptr)
            self.ptr = None


# integer PCM as audio files hold it: the value of full scale, and the
# middle (8-bit PCM is unsigned, 128 its zero)
_PCM_SCALE = {np.dtype(np.int16): (32768.0, 0.0), np.dtype(np.int32): (2147483648.0, 0.0),
              np.dtype(np.int8): (128.0, 0.0), np.dtype(np.uint8): (128.0, 128.0)}


def _as_float_samples(a):
    """An array of samples as float32 in [-1, 1]: floats as they are (what
    faster-whisper takes), 16- and 32-bit integers scaled by their range,
    8-bit ones as WAV holds them (unsigned, around 128). Other types have no
    agreed meaning as audio: refused, saying what to do."""
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype=np.float32)
    if a.dtype in _PCM_SCALE:
        full, mid = _PCM_SCALE[a.dtype]
        return ((a.astype(np.float32) - np.float32(mid)) / np.float32(full)).astype(np.float32)
    if a.dtype.kind in "iu":
        raise ValueError(f"audio: samples of type {a.dtype} have no standard scale (int16 and "
                         f"int32 are scaled by their range, floats taken as they are): convert "
                         f"them, e.g. audio.astype(np.int16) if they hold 16-bit values, or "
                         f"audio / full_scale as float32")
    raise ValueError(f"audio: an array of {a.dtype} is not audio: 16 kHz samples as float32 "
                     f"(or float64, int16, int32, int8, uint8) are expected")


def load(audio, max_seconds=0.0):
    """A path (str or os.PathLike; "-" is standard input), a
    file-like object open for binary reading, bytes holding an encoded file,
    or a 1-D array of 16 kHz samples (floats as they are; int16, int32 scaled
    by their range; int8, uint8 as 8-bit PCM; other types refused) -> _Pcm. Decoding is the library's (libsndfile: WAV, FLAC,
    OGG, MP3; FFmpeg: m4a, mp4, webm, ...; resampled with libsoxr), so a file gives the same samples as
    the encdec program reads."""
    if isinstance(audio, np.ndarray):
        if audio.ndim != 1:
            raise ValueError(f"audio: a 1-D array of 16 kHz samples is expected, "
                             f"not shape {audio.shape}")
        a = _as_float_samples(audio)
        if a.size == 0:
            raise N.EncdecError(N.ERR_AUDIO, "audio: the array is empty")
        return _Pcm(a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), a.size, a)
    ptr, n = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
    if isinstance(audio, (bytes, bytearray, memoryview)) or hasattr(audio, "read"):
        data = bytes(audio.read() if hasattr(audio, "read") else audio)
        buf = ctypes.create_string_buffer(data, len(data))
        N.check(N.lib.encdec_audio_load_memory(buf, len(data), max_seconds, ctypes.byref(ptr),
                                               ctypes.byref(n)))
        return _Pcm(ptr, n.value)
    if isinstance(audio, (str, os.PathLike)):
        ap = N.lib.encdec_audio_default_params()
        ap.max_seconds = max_seconds
        N.check(N.lib.encdec_audio_load_ex(os.fsencode(audio), ctypes.byref(ap), ctypes.byref(ptr),
                                           ctypes.byref(n), None))
        return _Pcm(ptr, n.value)
    raise TypeError(f"audio: a path, a file-like object, bytes or a NumPy array, "
                    f"not {type(audio).__name__}")


def decode_audio(input_file, sampling_rate=16000):
    """faster_whisper.decode_audio's counterpart: the file (path or file-like
    object) as a float32 NumPy array of mono samples at 16 kHz."""
    if sampling_rate != SAMPLE_RATE:
        raise ValueError("decode_audio: encdec decodes to 16000 Hz only")
    return load(input_file).array()
