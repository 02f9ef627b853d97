"""Shared fixtures: the models (loaded once for the whole run), the test
recordings, and faster-whisper (the peer) on the same model files, its
answers kept (peer.py)."""

import os
import pathlib

import numpy as np
import pytest

from peer import ANSWERS, Peer

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("ENCDEC_SHARED_DIR", ROOT.parent / "shared"))
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) \
    / "encdec" / "models"
TINY_EN = pathlib.Path(os.environ.get("ENCDEC_TINY_EN", CACHE / "whisper-tiny.en"))
BASE = pathlib.Path(os.environ.get("ENCDEC_BASE", CACHE / "whisper-base"))
DATA = ROOT / "tests" / "data"
THREADS = 2


def need(path):
    if not path.exists():
        pytest.skip(f"{path} is not there")
    return path


@pytest.fixture(scope="session")
def jfk():
    return str(need(SHARED / "audio" / "jfk.flac"))


@pytest.fixture(scope="session")
def tiny_en():
    import encdec
    m = encdec.WhisperModel(str(need(TINY_EN)), cpu_threads=THREADS)
    yield m
    m.close()


@pytest.fixture(scope="session")
def base():
    import encdec
    m = encdec.WhisperModel(str(need(BASE)), cpu_threads=THREADS)
    yield m
    m.close()


@pytest.fixture(scope="session")
def fw_tiny_en():
    """faster-whisper on the same tiny.en (peer.py: its kept answers, or live)."""
    return Peer("tiny.en", need(TINY_EN), THREADS)


@pytest.fixture(scope="session")
def fw_base():
    return Peer("base", need(BASE), THREADS)


def pytest_sessionfinish(session, exitstatus):
    ANSWERS.save()


@pytest.fixture(scope="session")
def long_recording():
    """About 56 s: the LibriVox excerpts, the cards and jfk.wav of
    ../shared/audio read by the library, with 1 s of low seeded noise after
    each (two 30 s windows and more, segments that cross a window's edge)."""
    import encdec
    audio = need(SHARED / "audio")
    files = sorted((audio / "librivox").glob("*.wav")) + sorted((audio / "cards").glob("*.wav")) \
        + [audio / "jfk.wav"]
    rng = np.random.default_rng(7)
    parts = []
    for f in files:
        parts.append(encdec.decode_audio(str(f)))
        parts.append((rng.integers(-3, 4, 16000) / 32768.0).astype(np.float32))
    return np.concatenate(parts)
