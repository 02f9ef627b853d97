"""Loading a model: names and paths, compute types, the info struct."""

import ctypes
import os

from . import _hub
from . import _native as N

# faster-whisper's compute types (and encdec's own names) -> encdec's modes.
# encdec computes in f32, bf16 or int8; "float16" keeps f16 weights as stored
# and multiplies in f32 (the CPU has no f16 arithmetic to speak of).
_COMPUTE = {
    "default": "f32", "auto": "f32", "float32": "f32", "float16": "f32", "f32": "f32",
    "bfloat16": "bf16", "bf16": "bf16",
    "int8": "int8", "int8_float32": "int8", "int8_float16": "int8", "int8_bfloat16": "int8",
}


def cache_root():
    """Where scripts/fetch-model.sh installs models."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "encdec", "models")


def data_dir(env, name):
    """A data directory of scripts/fetch-model.sh's: $env when set, else
    cache_root()/name."""
    return os.environ.get(env) or os.path.join(cache_root(), name)


def resolve(name_or_path, download_root=None, prefix="", local_files_only=True):
    """A model directory (or file) from a path, or from a name installed in
    the cache ("tiny.en" -> <cache>/whisper-tiny.en; faster-whisper's hub
    ids of its sizes too). Not installed: with local_files_only False, a
    faster-whisper size name or a hub id is downloaded into download_root
    (else the cache) and its folder returned (_hub.py); else an error that
    says how to get it."""
    p = os.fspath(name_or_path)
    if os.path.exists(p):
        return p
    roots = [r for r in (download_root, cache_root()) if r]
    hub = _hub.folder_of(p)   # (repository, folder) of a size name or a hub id
    for root in roots:
        for cand in (p, prefix + p, hub[1] if hub else p):
            d = os.path.join(root, cand)
            if os.path.isdir(d):
                return d
    if not local_files_only and hub:
        return _hub.download(p, roots[0])
    how = ("it is not a faster-whisper size name nor a hub id (owner/name)"
           if not hub else "local_files_only=True: not downloaded")
    raise N.EncdecError(N.ERR_NO_MODEL,
                        f"no model '{p}': not a path, and not installed in "
                        f"{' or '.join(roots)}; {how}")


def compute_mode(compute_type):
    try:
        return N.COMPUTE[_COMPUTE[compute_type]]
    except KeyError:
        raise ValueError(f"compute_type={compute_type!r}: one of "
                         f"{', '.join(sorted(_COMPUTE))}") from None


def device_of(device, device_index=0):
    """faster-whisper's device and device_index as encdec's (kind, index):
    "cpu", "cuda" (device_index: which GPU; a list takes its first), or
    "auto": the first GPU where this build and machine have one, else the CPU."""
    if isinstance(device_index, (list, tuple)):
        if not device_index:
            raise ValueError("device_index=[]: name a GPU")
        device_index = device_index[0]
    if not isinstance(device_index, int) or device_index < 0:
        raise ValueError(f"device_index={device_index!r}: a GPU's number, 0 or more")
    if device == "auto":
        device = "cuda" if N.lib.encdec_device_count(N.DEVICE["cuda"]) > 0 else "cpu"
    if device not in N.DEVICE:
        raise ValueError(f"device={device!r}: one of 'auto', 'cpu', 'cuda'")
    if device == "cuda" and N.lib.encdec_device_count(N.DEVICE["cuda"]) <= device_index:
        n = N.lib.encdec_device_count(N.DEVICE["cuda"])
        raise ValueError(f"device='cuda', device_index={device_index}: this build and machine "
                         f"have {n} CUDA device{'s' if n != 1 else ''}"
                         + (" (encdec built without -DENCDEC_CUDA=ON, or no driver)" if n == 0 else ""))
    return N.DEVICE[device], (device_index if device == "cuda" else 0)


class Model:
    """A loaded model (read-only; freed with the object or by close())."""

    handle = None

    def __init__(self, path, compute_type="default", isa=None, family=None, device=None,
                 device_index=0, logit_screen=True):
        mp = N.lib.encdec_model_default_params()
        mp.compute = compute_mode(compute_type)
        mp.no_logit_screen = 0 if logit_screen else 1
        if device is not None:   # else the library's default ($ENCDEC_DEVICE, or the CPU)
            mp.device, mp.device_index = device_of(device, device_index)
        if isa is not None:
            k = N.lib.encdec_isa_parse(isa.encode())
            if k < 0:
                raise ValueError(f"isa={isa!r}: one of auto, c, avx2, avx512, amx, neon")
            mp.isa = k
        h = ctypes.c_void_p()
        N.check(N.lib.encdec_model_load_ex(os.fsencode(path), ctypes.byref(mp), ctypes.byref(h)),
                f"cannot load model {path}")
        self.handle = h
        info = N.ModelInfo()
        N.lib.encdec_model_get_info(h, ctypes.byref(info))
        self.info = {k: (N.text(v) if isinstance(v, bytes) else v)
                     for k, v in ((f, getattr(info, f)) for f, _ in N.ModelInfo._fields_)}
        if family and self.info["family"] not in ((family,) if isinstance(family, str) else family):
            self.close()
            raise N.EncdecError(N.ERR_ARG, f"{path} is a {self.info['model_type']} model, "
                                f"not {family if isinstance(family, str) else ' or '.join(family)}")

    def close(self):
        if self.handle:
            N.lib.encdec_model_free(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


def default_threads(cpu_threads):
    if cpu_threads is None or cpu_threads <= 0:   # 0: every core this process may use
        try:
            n = len(os.sched_getaffinity(0))
        except AttributeError:
            n = os.cpu_count() or 1
        return max(1, min(n, 256))
    if cpu_threads > 256:
        raise ValueError(f"cpu_threads={cpu_threads}: at most 256")
    return int(cpu_threads)


class Owner:
    """What WhisperModel and T5Model share: a Model and the engine that runs
    it, freed by close(), at the end of a `with` block, or with the object."""

    _model = None
    _engine = None

    def _release(self):
        """Frees the engine or session (subclasses)."""

    def stats(self):
        """The engine's counters (encdec_engine_stats) as a dict."""
        s = N.EngineStats()
        N.lib.encdec_engine_get_stats(self._engine, ctypes.byref(s))
        d = {f: getattr(s, f) for f, _ in N.EngineStats._fields_}
        d["batch_hist"] = list(s.batch_hist)
        return d

    @property
    def info(self):
        """The model's description (family, format, sizes, compute, kernel set)."""
        return dict(self._model.info)

    def close(self):
        self._release()
        if self._model is not None:
            self._model.close()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
