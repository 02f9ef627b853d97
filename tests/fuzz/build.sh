#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) into build-fuzz/
# and runs each for SECONDS (default 60) over its seed corpus:
#   tests/fuzz/build.sh [SECONDS]
# Needs clang and libclang-rt-dev (Debian: clang-14 libclang-rt-14-dev).
# Not part of the ctest suite: fuzzing is open-ended; crashes found are fixed
# and their inputs added to the unit tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
out=build-fuzz
mkdir -p "$out"
CC=${CC:-clang-14}
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isrc"
LIBS="-lcjson -lm -lpthread"
$CC $FLAGS tests/fuzz/fuzz_safetensors.c src/base/*.c src/io/*.c $LIBS -o $out/fuzz_safetensors
$CC $FLAGS tests/fuzz/fuzz_ct2.c src/base/*.c src/io/*.c $LIBS -o $out/fuzz_ct2
$CC $FLAGS tests/fuzz/fuzz_bpe.c src/base/*.c src/tok/*.c $LIBS -o $out/fuzz_bpe
$CC $FLAGS tests/fuzz/fuzz_spm.c src/base/*.c src/tok/*.c $LIBS -o $out/fuzz_spm
BLIS_INC=/usr/include/x86_64-linux-gnu/blis-serial BLIS_LIB=/usr/lib/x86_64-linux-gnu/blis-serial
$CC $FLAGS -isystem $BLIS_INC tests/fuzz/fuzz_config.c $(ls src/*/*.c) $LIBS -lsndfile -lsoxr \
    -L$BLIS_LIB -Wl,-rpath,$BLIS_LIB -lblis -o $out/fuzz_config
$CC $FLAGS -isystem $BLIS_INC tests/fuzz/fuzz_t5_config.c $(ls src/*/*.c) $LIBS -lsndfile -lsoxr \
    -L$BLIS_LIB -Wl,-rpath,$BLIS_LIB -lblis -o $out/fuzz_t5_config
seed() {  # name, files...
  local d="$out/corpus-$1"; shift; mkdir -p "$d"; for f in "$@"; do [ -f "$f" ] && cp "$f" "$d/" || true; done; }
seed safetensors tests/data/tiny-random-whisper-v3/model-00002-of-00002.safetensors tests/data/mel_golden.safetensors
seed ct2 "${ENCDEC_TINY_EN:-$HOME/.cache/encdec/models/whisper-tiny.en}/config.json"
seed bpe tests/data/tiny-random-whisper/tokenizer.json tests/data/tiny-random-whisper-v3/tokenizer.json
seed config tests/data/tiny-random-whisper/config.json
seed spm tests/data/spm/t5like.model tests/data/spm/t5like.tokenizer.json
seed t5_config tests/data/tiny-random-t5-v1_0/config.json tests/data/tiny-random-t5-v1_1/config.json \
    tests/data/tiny-random-umt5/config.json
for h in safetensors ct2 bpe config spm t5_config; do
  echo "== fuzz_$h for ${secs}s ==" >&2
  "$out/fuzz_$h" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 "$out/corpus-$h" 2>&1 | tail -4
done
