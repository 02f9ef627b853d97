#!/usr/bin/env bash
# Creates .venv-client: OpenAI's official Python client (tests/server/
# requirements.txt, pinned) for the server tests (tests/server/test_openai.py),
# with Debian's python3-venv. scripts/test.sh runs it before ctest; without it
# those tests skip. Re-running is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import ensurepip' 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "venv-client.sh: installing python3-venv" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
[ -x .venv-client/bin/python ] || python3 -m venv .venv-client
.venv-client/bin/python -m pip install -q --disable-pip-version-check -r tests/server/requirements.txt
.venv-client/bin/python -c "import openai; print('venv-client.sh: openai', openai.__version__)" >&2
