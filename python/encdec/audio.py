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


def load(audio, max_seconds=0.0):
    """A path (str or os.PathLike; "-" is standard input), a
    file-like object open for binary reading, bytes holding an encoded file,
    or an array of 16 kHz samples (any float or int dtype: converted to
    float32; 1-D) -> _Pcm. Decoding is the library's (libsndfile: WAV, FLAC,
    OGG, MP3; resampled with libsoxr), so a file gives the same samples as
    the encdec program reads."""
    if isinstance(audio, np.ndarray):
        if audio.ndim != 1:
            raise ValueError(f"audio: a 1-D array of 16 kHz samples is expected, "
                             f"not shape {audio.shape}")
        a = audio
        if a.dtype.kind in "iu":   # integer PCM: scaled to [-1, 1]
            a = a.astype(np.float32) / float(np.iinfo(a.dtype).max)
        a = np.ascontiguousarray(a, dtype=np.float32)
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
