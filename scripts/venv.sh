#!/usr/bin/env bash
# Creates .venv for the oracle tools (tools/*.py, which regenerate the golden
# files) and the benchmarks against peers (bench/*.py): Debian's python3-torch
# and python3-venv through apt-get, then the pinned packages of
# tools/requirements.txt with pip. The C build and the test suite need none of
# this. Re-running is cheap: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(python3-venv python3-torch python3-pip)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "venv.sh: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
.venv/bin/python -m pip install -q -r tools/requirements.txt
.venv/bin/python -c "import torch, transformers; print('venv.sh: torch', torch.__version__, '+ transformers', transformers.__version__)"
