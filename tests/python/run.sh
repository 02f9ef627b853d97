#!/bin/sh
# ctest's entry to the Python package's tests: pytest with .venv-python
# (scripts/venv-python.sh: `pip install .` of this tree, faster-whisper),
# or skip (77) when that venv is not there.
root=$(cd "$(dirname "$0")/../.." && pwd)
py="$root/.venv-python/bin/python"
if [ ! -x "$py" ]; then
  echo "skip: no .venv-python (scripts/venv-python.sh makes it)"
  exit 77
fi
cd "$root/tests/python" && exec "$py" -m pytest -q -p no:cacheprovider "$@"
