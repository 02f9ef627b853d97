#!/usr/bin/env bash
# README command 1: installs the dependencies, builds encdec, fetches the
# default model (whisper tiny.en) and transcribes a sample recording from
# Debian's pocketsphinx-testdata (a LibriVox reading).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
scripts/fetch-model.sh tiny.en
sample=/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav
echo "encdec transcribe $sample" >&2
./build/encdec transcribe "$sample"
