#!/usr/bin/env bash
# README command 2: the whole test suite, as CI runs it. Installs the
# dependencies and the default model, builds with warnings as errors and runs
# every test (ctest: the C tests, the server's, the Python package's from
# `pip install .` into a fresh venv, the installed C library's), with the
# CUDA build beside it (scripts/test-cuda.sh build: compiled and linked, its
# kernel test skipped without a GPU) and the CUDA backend emulated on the
# CPU with the device tests through it (scripts/test-cuda.sh emu) and the
# CUDA kernels' own source run on the CPU (scripts/test-cuda.sh simt); then builds
# again with AddressSanitizer + UndefinedBehaviorSanitizer and runs every
# test there too (but the Python and install tests: plain builds); then
# ThreadSanitizer over the threaded parts (scripts/test-tsan.sh); then every fuzz
# harness for 10 s (tests/fuzz/build.sh: any finding fails); last, the ARM64
# cross build with its kernel and tiny.en tests under qemu-user
# (scripts/test-arm64.sh). Tests that need ../shared (real speech) skip when it is absent.
# At the end (also after a failure) it prints each stage's wall time, the CPU
# and the total. Every test gives the same verdict on a busy machine as on a
# quiet one: no test times itself against a fixed clock, only against what
# it measured in the same run, or by an order of magnitude.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# Each stage's wall time, printed at the end (also when a stage fails).
stages=() current="" t_start=$(date +%s)
stage() {   # stage NAME COMMAND...
  current=$1
  local t0
  t0=$(date +%s)
  echo "== $1 ==" >&2
  "${@:2}"
  stages+=("$(printf '%-46s %6d s' "$1" $(( $(date +%s) - t0 )))")
  current=""
}
report() {
  local rc=$?
  echo "== stage times ($(uname -m); $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), $(nproc) cores) ==" >&2
  local l
  for l in "${stages[@]}"; do echo "  $l" >&2; done
  [ -n "$current" ] && echo "  $current: FAILED" >&2
  printf '  %-46s %6d s\n' "total" $(( $(date +%s) - t_start )) >&2
  return $rc
}
trap report EXIT

# The C compiler through ccache when the machine has it (scripts/deps.sh test
# installs it), its cache in build-ccache/ (a clean clone starts it empty).
# The Python package's build (pip install ., given the release build's flags,
# -Werror included, and compiler spelling), the release build and the CUDA
# build's C objects (the same flags but for core/dev.c and core/ops_dev.c)
# then compile the library once between them, not three times. The
# sanitizers', the cross and the fuzz builds have flags of their own and go
# without it.
use_ccache() {
  command -v ccache >/dev/null || return 0
  ccache_on=1 cc_before=${CC-unset}
  export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_DIR=$PWD/build-ccache CC=${CC:-cc}
  export SKBUILD_CMAKE_DEFINE="ENCDEC_WERROR=ON"
}
no_ccache() {   # the environment as it was (CC too: the fuzz build's is clang)
  [ -n "${ccache_on:-}" ] || return 0
  unset CMAKE_C_COMPILER_LAUNCHER SKBUILD_CMAKE_DEFINE
  if [ "$cc_before" = unset ]; then unset CC; else export CC=$cc_before; fi
}

setup() {
  scripts/deps.sh
  scripts/fetch-model.sh tiny.en
  scripts/fetch-model.sh base      # multilingual: tests/test_base_multilingual.c
  scripts/fetch-model.sh vad       # Silero VAD: tests/test_vad.c, --vad, vad_filter
  scripts/fetch-model.sh langid    # langdetect + lexilang: tests/test_langid.c, LibreTranslate's /detect
  scripts/fetch-model.sh moses     # Moses tokenizer data (sacremoses): tests/test_moses.c
  scripts/deps.sh test             # ccache; python3-venv, nginx-light: the server tests (tests/server)
  scripts/venv-client.sh           # OpenAI's Python client for them
  use_ccache
  scripts/venv-python.sh           # pip install . (the Python package) + pytest, faster-whisper
}
stage "set-up (packages, models, venvs)" setup

build() {   # build DIR CMAKE-OPTIONS...
  cmake -S . -B "$1" "${@:2}" >/dev/null
  cmake --build "$1" -j"$jobs"
}
stage "release build (-Werror)" build build -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON
# The CUDA build (src/cuda/, -Werror; scripts/test-cuda.sh build): it must
# compile and link; its kernel test skips, saying so, without a GPU. Needs
# the CUDA toolkit (nvcc, cuBLAS), which Debian's registry does not carry:
# required in CI, else left out with a line that says so.
cuda_build() {
  if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
    scripts/test-cuda.sh build
  elif [ "${CI:-}" = true ]; then
    echo "CI: no CUDA toolkit (nvcc) on this machine: the CUDA build cannot be checked" >&2
    return 1
  else
    echo "no CUDA toolkit (nvcc): the CUDA build is left out" >&2
  fi
}
stage "CUDA build (-Werror; its test skips without a GPU)" cuda_build
# The CUDA backend emulated on the CPU (scripts/test-cuda.sh emu): the
# device seam and the device tests on every run, without a GPU.
stage "CUDA backend emulated on the CPU (device tests)" scripts/test-cuda.sh emu
# The CUDA backend's own kernels run on the CPU (scripts/test-cuda.sh simt):
# each against its CPU twin, and the goldens through them.
stage "CUDA source on the CPU (kernels, goldens)" scripts/test-cuda.sh simt
# (the builds below have flags of their own: no cache to fill)
no_ccache
stage "release tests (ctest)" ctest --test-dir build --output-on-failure -j"$jobs"

stage "AddressSanitizer + UBSan build" build build-asan -DCMAKE_BUILD_TYPE=Debug -DENCDEC_WERROR=ON -DENCDEC_SANITIZE=ON
asan() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
}
stage "AddressSanitizer + UBSan tests" asan

# ThreadSanitizer over the pool, the engine's scheduler and the server
# (scripts/test-tsan.sh: any data race or lock-order report fails).
stage "ThreadSanitizer (build and tests)" scripts/test-tsan.sh

# Every parser under libFuzzer (ASan + UBSan) for a bounded time: any
# crash, leak or undefined behaviour fails the suite. 10 s a harness (17,
# two at a time): the suite's 45 minutes on a loaded 2-core machine are the
# limit; ENCDEC_FUZZ_SECONDS=N for longer runs.
fuzz() {
  scripts/deps.sh fuzz
  tests/fuzz/build.sh "${ENCDEC_FUZZ_SECONDS:-10}"
}
stage "fuzzing: every harness ${ENCDEC_FUZZ_SECONDS:-10} s" fuzz

# ARM64: the cross build and its kernel + tiny.en tests under qemu-user.
stage "ARM64 cross build + tests under qemu" scripts/test-arm64.sh
