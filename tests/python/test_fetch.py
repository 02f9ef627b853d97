"""Models by name: scripts/fetch-model.sh's hub download (the real script,
against a local HTTP server laid out as the Hugging Face hub, through
$HF_ENDPOINT) and the resolution WhisperModel applies to a name: a
faster-whisper size name, its hub repository id, or the folder's name."""

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

import encdec
from conftest import DATA, ROOT

FETCH = ROOT / "scripts" / "fetch-model.sh"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A directory served over HTTP as the hub: /api/models/<repo> answers
    200 for a repository that exists, /<repo>/resolve/main/<file> its files
    (the random tiny Whisper: safetensors, and a CTranslate2 int8 one
    standing for faster-whisper's small)."""
    if not shutil.which("curl"):
        pytest.skip("curl is not installed (scripts/deps.sh)")
    d = tmp_path_factory.mktemp("hub")
    repos = {"acme/tiny-whisper": DATA / "tiny-random-whisper",
             "Systran/faster-whisper-small": DATA / "tiny-random-ct2-int8" / "int8"}
    for repo, src in repos.items():
        (d / "api" / "models" / repo).parent.mkdir(parents=True, exist_ok=True)
        (d / "api" / "models" / repo).write_text('{"id": "%s"}' % repo)
        shutil.copytree(src, d / repo / "resolve" / "main")
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port),
                          "--directory", str(d)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield url
    p.terminate()
    p.wait()


def fetch(hub, root, name):
    env = dict(os.environ, HF_ENDPOINT=hub)
    return subprocess.run(["bash", str(FETCH), name, str(root)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_fetch_by_id_and_size_name(hub, tmp_path):
    root = tmp_path / "models"
    r = fetch(hub, root, "acme/tiny-whisper")
    assert r.returncode == 0, r.stderr
    for f in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json"):
        assert (root / "tiny-whisper" / f).read_bytes() == (DATA / "tiny-random-whisper" / f).read_bytes()
    r = fetch(hub, root, "small")   # faster-whisper's name: its repository, as whisper-small
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(root / "whisper-small")) == \
        ["config.json", "model.bin", "tokenizer.json", "vocabulary.json"]
    assert not [p for p in os.listdir(root) if p.endswith(".partial")]
    # every spelling of it resolves to that folder
    for name in ("small", "whisper-small", "Systran/faster-whisper-small"):
        m = encdec.WhisperModel(name, download_root=str(root), cpu_threads=1)
        assert m.info["model_type"] == "whisper"
        m.close()
    m = encdec.WhisperModel("acme/tiny-whisper", download_root=str(root), cpu_threads=1)
    m.close()


def test_fetch_errors_are_one_true_line(hub, tmp_path):
    root = tmp_path / "models"
    r = fetch(hub, root, "acme/missing")
    assert r.returncode == 1 and "no repository acme/missing on the Hugging Face hub" in r.stderr
    assert not root.exists() or not os.listdir(root)   # nothing half-made left
    r = fetch("http://127.0.0.1:9", root, "large-v3")   # nothing listens there
    assert r.returncode == 1 and "cannot reach 127.0.0.1:9" in r.stderr
    r = fetch(hub, root, "huge-v9")
    assert r.returncode == 2 and "unknown model" in r.stderr and "large-v3" in r.stderr
    with pytest.raises(encdec.EncdecError, match="local_files_only=True: not downloaded"):
        encdec.WhisperModel("large-v3", download_root=str(root), local_files_only=True)
    with pytest.raises(encdec.EncdecError, match="not a faster-whisper size name nor a hub id"):
        encdec.WhisperModel("huge-v9", download_root=str(root))


def test_python_downloads_as_faster_whisper(hub, tmp_path, monkeypatch):
    """WhisperModel("small") (or a hub id) not installed: downloaded into
    download_root as scripts/fetch-model.sh would install it, then loaded;
    the next time it is there. Errors: one true line, nothing left behind."""
    monkeypatch.setenv("HF_ENDPOINT", hub)
    root = tmp_path / "dl"
    m = encdec.WhisperModel("small", download_root=str(root), cpu_threads=1)
    assert m.info["model_type"] == "whisper"
    m.close()
    assert sorted(os.listdir(root)) == ["whisper-small"]
    assert (root / "whisper-small" / "model.bin").read_bytes() == \
        (DATA / "tiny-random-ct2-int8" / "int8" / "model.bin").read_bytes()
    m = encdec.WhisperModel("acme/tiny-whisper", download_root=str(root), cpu_threads=1)
    m.close()
    assert sorted(os.listdir(root)) == ["tiny-whisper", "whisper-small"]
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")   # nothing there now: from the cache
    encdec.WhisperModel("Systran/faster-whisper-small", download_root=str(root), cpu_threads=1).close()
    with pytest.raises(encdec.EncdecError, match="cannot reach http://127.0.0.1:9"):
        encdec.WhisperModel("medium", download_root=str(root))
    monkeypatch.setenv("HF_ENDPOINT", hub)
    with pytest.raises(encdec.EncdecError, match="no repository acme/missing"):
        encdec.WhisperModel("acme/missing", download_root=str(root))
    assert sorted(os.listdir(root)) == ["tiny-whisper", "whisper-small"]
