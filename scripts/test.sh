#!/usr/bin/env bash
# README command 2: the whole test suite, as CI runs it. Installs the
# dependencies and the default model, builds with warnings as errors and runs
# every test (ctest: the C tests, the server's, the Python package's from
# `pip install .` into a fresh venv, the installed C library's); then builds
# again with AddressSanitizer + UndefinedBehaviorSanitizer and runs every
# test there too (but the Python and install tests: plain builds); then
# ThreadSanitizer over the threaded parts (scripts/test-tsan.sh); then every fuzz
# harness for 45 s (tests/fuzz/build.sh: any finding fails); last, the ARM64
# cross build with its kernel and tiny.en tests under qemu-user
# (scripts/test-arm64.sh). Tests that need ../shared (real speech) skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/fetch-model.sh tiny.en
scripts/fetch-model.sh base      # multilingual: tests/test_base_multilingual.c
scripts/deps.sh test             # python3-venv, nginx-light: the server tests (tests/server)
scripts/venv-client.sh           # OpenAI's Python client for them
scripts/venv-python.sh           # pip install . (the Python package) + pytest, faster-whisper
jobs=$(nproc)

echo "== release build (-Werror) ==" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build ==" >&2
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DENCDEC_WERROR=ON -DENCDEC_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

# ThreadSanitizer over the pool, the engine's scheduler and the server
# (scripts/test-tsan.sh: any data race or lock-order report fails).
scripts/test-tsan.sh

# Every parser under libFuzzer (ASan + UBSan) for a bounded time: any
# crash, leak or undefined behaviour fails the suite.
echo "== fuzzing: every harness for ${ENCDEC_FUZZ_SECONDS:-45} s ==" >&2
scripts/deps.sh fuzz
tests/fuzz/build.sh "${ENCDEC_FUZZ_SECONDS:-45}"

# ARM64: the cross build and its kernel + tiny.en tests under qemu-user.
scripts/test-arm64.sh
