#!/usr/bin/env bash
# Installs what encdec needs on Debian 12 (bookworm) with apt-get: a C
# compiler, CMake, the sequential (reentrant) BLIS, libsndfile, libsoxr, cJSON and zlib;
# python3 + pip for fetching the default model from PyPI; and the sample
# recording (pocketsphinx-testdata) the demo transcribes. Does nothing for
# packages that are already installed. Runs apt-get through sudo when not root.
set -euo pipefail

PKGS=(build-essential cmake pkg-config libblis-serial-dev libsndfile1-dev libsoxr-dev
      libcjson-dev zlib1g-dev python3 python3-pip ca-certificates pocketsphinx-testdata)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: run as root or install sudo; missing: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "deps.sh: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
