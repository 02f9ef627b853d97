#!/usr/bin/env bash
# The ARM64 (aarch64) check: cross-compiles encdec with Debian's
# aarch64-linux-gnu-gcc (cmake/aarch64-linux-gnu.cmake) and runs under
# qemu-user the kernel tests (every set's kernels against their twins),
# Whisper and T5 end to end on NEON against transformers (test_whisper_golden,
# test_t5_golden: the seeded random models' logits at every step and greedy
# tokens), the kernel sets' named errors (test_isa; its tiny.en windows run
# natively only: one took three minutes of both cores under qemu) and the
# ggml / CTranslate2 int8 loaders against their goldens (test_ggml,
# test_ct2_int8). Emulated timing means nothing; correctness is the point.
# qemu's default CPU has the dot-product extension; the tests force it off to
# run the path beneath (kern.h k_feat_mask).
# Called by scripts/test.sh; needs the default model (scripts/fetch-model.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh arm64
jobs=$(nproc)
tests=(test_kern test_q8 test_matmul_hp test_attn_h test_isa test_ggml test_ct2_int8
       test_whisper_golden test_t5_golden)

echo "== aarch64 cross build (-Werror), tests under qemu-user ==" >&2
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
      -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON >/dev/null
cmake --build build-arm64 -j"$jobs" --target encdec_cli "${tests[@]}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
# A test that times out runs once more: qemu-user itself has hung once
# (test_kern, 30-80 s as a rule, still running after 1500 s in CI on
# 2026-11-27; here the same binary then ran 29 times, three at once beside
# other work, with its threads always moving; natively, under the sanitizers
# and TSan, it never has hung). A test that hangs twice, or fails, fails the
# stage. Each test's limit: 700 s (CMakeLists.txt).
ctest --test-dir build-arm64 --output-on-failure -j"$jobs" -R "$regex" --repeat after-timeout:2
