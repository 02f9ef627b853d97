#!/usr/bin/env python3
"""Makes tests/data/faster-whisper-answers.json.gz: faster-whisper's answers
to every question the Python package's tests put to it (tests/python/peer.py).

It runs those tests with the peer asked live every time and every answer
written back (ENCDEC_FW_LIVE=1 ENCDEC_FW_RECORD=1): the file then holds
faster-whisper's output only, keyed by the model, the audio and the
arguments. Run it again when a test asks something new or faster-whisper's
pinned version changes (the file names the version; another version's
answers are not read).

Needs .venv-python (scripts/venv-python.sh: the package, pytest and
faster-whisper), the models (tiny.en, base) and ../shared. Arguments go to
pytest (e.g. -k batched).
"""
import os
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[1]
py = root / ".venv-python" / "bin" / "python"
if not py.exists():
    sys.exit("no .venv-python: scripts/venv-python.sh makes it")
env = dict(os.environ, ENCDEC_FW_LIVE="1", ENCDEC_FW_RECORD="1")
store = root / "tests" / "data" / "faster-whisper-answers.json.gz"
if store.exists() and not sys.argv[1:]:
    store.unlink()   # a whole run: no answer of a question no longer asked stays
rc = subprocess.call([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_whisper.py",
                      *sys.argv[1:]], cwd=root / "tests" / "python", env=env)
print(f"{store}: {store.stat().st_size if store.exists() else 0} bytes", file=sys.stderr)
sys.exit(rc)
