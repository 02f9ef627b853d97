#!/usr/bin/env bash
# Creates .venv-python and installs into it the Python package built from
# this tree (`pip install .`: scikit-build-core runs the project's CMake and
# bundles libencdec.so.0) plus the test suite's pinned packages
# (tests/python/requirements.txt: pytest, and faster-whisper as the peer the
# tests compare against). scripts/test.sh runs it before ctest; without it
# test_python skips. Re-running is cheap: the package is rebuilt only when
# the sources it is built from changed (the build folder, build-python/,
# is kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import ensurepip' 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "venv-python.sh: installing python3-venv" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
venv=.venv-python
[ -x $venv/bin/python ] || python3 -m venv $venv
$venv/bin/python -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
# what the package is built from, to know when to rebuild it
stamp=$( (cat CMakeLists.txt pyproject.toml cmake/* ; find include src python -type f \
          \( -name '*.c' -o -name '*.h' -o -name '*.py' \) | LC_ALL=C sort | xargs cat) | sha1sum | cut -c1-40)
if [ "$(cat $venv/.encdec-built 2>/dev/null)" != "$stamp" ]; then
  echo "venv-python.sh: pip install . (building libencdec)" >&2
  $venv/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps .
  # its dependencies (numpy) come pinned from the requirements above
  echo "$stamp" > $venv/.encdec-built
fi
$venv/bin/python -c "import encdec; print('venv-python.sh: encdec', encdec.__version__, '-', encdec.build_info())" >&2
