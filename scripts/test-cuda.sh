#!/usr/bin/env bash
# The CUDA backend's checks: three here, without a GPU (build, emu, simt), and the
# run on the GPU machine.
#
#   scripts/test-cuda.sh build   here (the CUDA toolkit, no GPU needed): the
#       CUDA build in build-cuda/ (-DENCDEC_CUDA=ON, warnings as errors:
#       nvcc's and the host compiler's), its program and test_cuda, then
#       test_cuda through ctest, which skips, saying why, without a GPU; and
#       build-cuda/rt/: the shared libraries those programs need that a bare
#       CUDA image lacks (BLIS, libsndfile, ...), so that build-cuda runs on
#       the GPU machine as it is (scripts/test.sh runs this half in CI).
#   scripts/test-cuda.sh emu     here, no GPU: the CPU emulation of the CUDA
#       backend (build-emu/, -DENCDEC_CUDA_EMU=ON: cuda/cuda.h on the host,
#       device memory guarded, src/cuda/emu/emu.h) and the device tests
#       through it with ENCDEC_DEVICE=cuda: the device seam (ops_dev.c, the
#       models' uploads and states, the engine's caches) checked on every CI
#       run; the GPU's own kernels and speed are the GPU run's.
#   scripts/test-cuda.sh simt    here, no GPU: the CUDA backend's own source
#       (src/cuda/*.cu) compiled by the host's C++ compiler and run on the
#       CPU (build-simt/, -DENCDEC_CUDA_SIMT=ON: each GPU thread a fiber,
#       barriers and shuffles real, launches held to the GPU's limits,
#       cuBLAS a model that checks its arguments; src/cuda/simt/simt.h):
#       test_simt (its own guarantees), test_cuda (every kernel against its
#       CPU twin) and the goldens of Whisper and T5 (every precision mode)
#       with ENCDEC_DEVICE=cuda, so the
#       kernels' logic is checked on every CI run; the GPU run adds its
#       arithmetic, its concurrency and its speed.
#   scripts/test-cuda.sh         on the GPU machine, with build-cuda/encdec,
#       build-cuda/tests and build-cuda/rt carried there (about 50 MB;
#       scripts/gpu-session.sh packs them with tiny.en and ../shared): the
#       device; every CUDA kernel against its CPU twin (test_cuda); the
#       Whisper goldens (transformers' values, the CPU's tolerances) with
#       the model and state on the GPU (ENCDEC_DEVICE=cuda); with tiny.en
#       ($ENCDEC_TINY_EN or the default install) the tests of real speech,
#       long-form (openai-whisper's segments), beams, the engine (a
#       request's output whatever else runs) and batched long-form on the
#       GPU, the text families' (T5's, the BART family's, the text engine's),
#       the CLI's text of nine seeded random text models against the CPU's,
#       and the CLI's text on every recording of $ENCDEC_SHARED_DIR/audio
#       against the CPU build's, and the engine's (f32, and bf16 on tensor
#       cores) the same with 8 and with 2 files at once; the bf16 and int8
#       texts of jfk.wav; then compute-sanitizer's memcheck on the
#       kernel test and on a transcription. Every step runs; any failure,
#       a skip of a kernel test included, fails. Under 8 minutes on an H100.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build-cuda
GPU_TESTS="test_whisper_golden test_whisper_v3_golden test_tiny_en test_longform test_whisper_beam test_engine test_batched test_t5_golden test_bart_golden test_engine_t5 test_gen_attention"
# Through the emulation: the same but test_longform and test_engine (a few
# minutes there; their device paths are test_batched's and test_tiny_en's);
# there (ED_DEVICE_EMU) test_batched runs its device paths only, the
# host's logic being the release pass's.
EMU_TESTS="test_whisper_golden test_whisper_v3_golden test_tiny_en test_whisper_beam test_batched test_t5_golden test_bart_golden test_engine_t5 test_gen_attention"

# Through the CUDA source on the CPU: the kernel test and the goldens of
# Whisper and T5 (the real models' tests take minutes there: a thread switch
# per barrier; the engines' batch-invariant products are test_cuda's, and
# the emulation runs the engines; the BART family's goldens run the same
# kernels as T5's and Whisper's, and run through the emulation and on the GPU).
SIMT_TESTS="test_simt test_whisper_golden test_t5_golden"

if [ "${1:-}" = simt ]; then
  set -e
  cmake -S . -B build-simt -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON -DENCDEC_CUDA_SIMT=ON \
        -DENCDEC_FFMPEG=OFF >/dev/null
  # shellcheck disable=SC2086
  cmake --build build-simt -j"$(nproc)" --target test_cuda $SIMT_TESTS
  # a skip fails here (the build has its device)
  ENCDEC_DEVICE=cuda ctest --test-dir build-simt --output-on-failure -j"$(nproc)" \
    -R "^(test_cuda|$(echo $SIMT_TESTS | tr ' ' '|'))\$" | tee build-simt/ctest.out
  if grep -q 'Skipped' build-simt/ctest.out; then
    echo "a test skipped in the SIMT build" >&2
    exit 1
  fi
  exit 0
fi

if [ "${1:-}" = emu ]; then
  set -e
  cmake -S . -B build-emu -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON -DENCDEC_CUDA_EMU=ON \
        -DENCDEC_FFMPEG=OFF >/dev/null
  # shellcheck disable=SC2086
  cmake --build build-emu -j"$(nproc)" --target encdec_cli test_cuda $EMU_TESTS
  ENCDEC_DEVICE=cuda ctest --test-dir build-emu --output-on-failure -j"$(nproc)" \
    -R "^(test_cuda|test_cuda_pages|$(echo $EMU_TESTS | tr ' ' '|'))\$"
  exit 0
fi

if [ "${1:-}" = build ]; then
  set -e
  # (without FFmpeg: its libraries would be most of what travels)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON -DENCDEC_CUDA=ON \
        -DENCDEC_FFMPEG=OFF >/dev/null
  # shellcheck disable=SC2086
  cmake --build "$dir" -j"$(nproc)" --target encdec_cli test_cuda $GPU_TESTS
  ctest --test-dir "$dir" --output-on-failure -R '^test_cuda$'
  # The libraries these programs load, less the C library's own and CUDA's
  # (the GPU machine has its driver, runtime and cuBLAS): copied beside
  # them for LD_LIBRARY_PATH.
  rm -rf "$dir/rt" && mkdir -p "$dir/rt"
  for f in "$dir/encdec" "$dir"/tests/test_*; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/rt/"; done
  strip "$dir/encdec" "$dir"/tests/test_*
  echo "build-cuda: $(du -sh "$dir/rt" | cut -f1) of runtime libraries in $dir/rt; carry $dir/encdec, $dir/tests, $dir/rt to the GPU machine" >&2
  exit 0
fi

[ -x "$dir/tests/test_cuda" ] || { echo "no $dir/tests/test_cuda: run 'scripts/test-cuda.sh build' first (here), then carry $dir" >&2; exit 2; }
# CUDA's runtime and cuBLAS: the toolkit's, else the first copy found (a pip wheel's)
cudalib=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libcublas.so.13" ] && { cudalib=$d; break; }
done
if [ -z "$cudalib" ]; then
  f=$(find / -name 'libcublas.so.13' -not -path '/proc/*' 2>/dev/null | head -1 || true)
  [ -n "$f" ] && cudalib=$(dirname "$f")
fi
export LD_LIBRARY_PATH="$PWD/$dir/rt${cudalib:+:$cudalib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fails=""
step() {   # step NAME COMMAND...: runs it, timed, and notes a failure
  local name=$1 t0 rc
  shift
  echo "== $name ==" >&2
  t0=$(date +%s%N)
  "$@"
  rc=$?
  printf '== %s: %s (%d ms)\n' "$name" "$([ $rc = 0 ] && echo passed || echo "FAILED, exit $rc")" \
    "$((($(date +%s%N) - t0) / 1000000))" >&2
  [ $rc = 0 ] || fails="$fails $name"
}
kernels() {   # a skip (77: no GPU) fails here
  "$dir/tests/test_cuda"
}
step "test_cuda: every kernel against its CPU twin" kernels

# The test programs name the repository's test data and ../shared by the
# paths they were built with: where this checkout is elsewhere, links there.
built_root=$(strings "$dir/tests/test_whisper_golden" | grep -m1 -o '/[^ ]*/tests/data' | sed 's|/tests/data$||')
shared=${ENCDEC_SHARED_DIR:-$PWD/../shared}
if [ -n "$built_root" ] && [ "$built_root" != "$PWD" ] && [ ! -e "$built_root" ]; then
  mkdir -p "$(dirname "$built_root")" && ln -s "$PWD" "$built_root"
fi
if [ -n "$built_root" ] && [ ! -e "$(dirname "$built_root")/shared" ] && [ -d "$shared" ]; then
  ln -s "$(cd "$shared" && pwd)" "$(dirname "$built_root")/shared"
fi
for t in $GPU_TESTS; do
  [ -x "$dir/tests/$t" ] || { echo "no $dir/tests/$t" >&2; fails="$fails $t"; continue; }
  step "$t on the GPU" env ENCDEC_DEVICE=cuda "$dir/tests/$t"
done

# The text families through the CLI: each seeded random model's text on the
# GPU (f32) as on the CPU (through the CPU emulation the nine agree too).
text_cli() {
  local bad=0 m a b
  for m in t5-v1_0 t5-v1_1 mt5 umt5 bart mbart marian m2m100 pegasus; do
    a=$("$dir/encdec" generate -m "tests/data/tiny-random-$m" --device cpu --max-new-tokens 12 \
        "hello world" "the cat sat on the mat" 2>&1)
    b=$("$dir/encdec" generate -m "tests/data/tiny-random-$m" --device cuda --max-new-tokens 12 \
        "hello world" "the cat sat on the mat" 2>&1)
    if [ "$a" = "$b" ] && [ -n "$a" ]; then echo "same text: $m"
    else echo "DIFFERENT: $m"; diff <(echo "$a") <(echo "$b") | head -6; bad=1; fi
  done
  return $bad
}
step "T5 and the BART family: the CLI's text on the GPU as on the CPU" text_cli

# The CLI's text on the GPU (f32) against the CPU's, recording by recording.
tiny=${ENCDEC_TINY_EN:-$HOME/.cache/encdec/models/whisper-tiny.en}
cli_texts() {
  local bad=0 f a b
  for f in "$shared"/audio/*.wav "$shared"/audio/*/*.wav "$shared"/audio/*.flac; do
    [ -e "$f" ] || continue
    a=$("$dir/encdec" transcribe -m "$tiny" --device cpu -t 8 "$f" 2>/dev/null)
    b=$("$dir/encdec" transcribe -m "$tiny" --device cuda "$f" 2>/dev/null)
    if [ "$a" = "$b" ] && [ -n "$a" ]; then echo "same text: $(basename "$f")"
    else echo "DIFFERENT: $f"; diff <(echo "$a") <(echo "$b") | head -6; bad=1; fi
  done
  return $bad
}
bf16_text() {   # the bf16 mode on the GPU: tensor-core products, the words still right
  local t
  t=$("$dir/encdec" transcribe -m "$tiny" --device cuda --compute bf16 "$shared/audio/jfk.wav")
  echo "bf16: $t"
  case "$t" in *"ask not what your country can do for you"*) return 0 ;; *) return 1 ;; esac
}
int8_text() {   # the int8 mode on the GPU: the CPU's int8 products (dp4a), the words right
  local t
  t=$("$dir/encdec" transcribe -m "$tiny" --device cuda --compute int8 "$shared/audio/jfk.wav")
  echo "int8: $t"
  case "$t" in *"ask not what your country can do for you"*) return 0 ;; *) return 1 ;; esac
}
engine_texts() {   # the engine's batch-invariant products (bf16: tensor cores): 8 or 2 at once, one text
  local files=() c a b bad=0
  for f in "$shared"/audio/*.wav "$shared"/audio/*/*.wav "$shared"/audio/*.flac; do [ -e "$f" ] && files+=("$f"); done
  for c in f32 bf16; do
    a=$("$dir/encdec" transcribe -m "$tiny" --device cuda --compute $c -P 8 "${files[@]}" 2>/dev/null)
    b=$("$dir/encdec" transcribe -m "$tiny" --device cuda --compute $c -P 2 "${files[@]}" 2>/dev/null)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "$c: ${#files[@]} files, the same text 8 and 2 at once"
    else echo "$c: DIFFERENT 8 and 2 at once"; diff <(echo "$a") <(echo "$b") | head -6; bad=1; fi
  done
  return $bad
}
if [ -f "$tiny/model.bin" ]; then
  step "tiny.en: the CLI's text on the GPU as on the CPU" cli_texts
  step "tiny.en: the engine's text on the GPU whatever shares its steps" engine_texts
  step "tiny.en: --compute bf16 on the GPU" bf16_text
  step "tiny.en: --compute int8 on the GPU" int8_text
else
  echo "no tiny.en at $tiny: the real-speech steps fail" >&2
  fails="$fails tiny.en"
fi

if command -v compute-sanitizer >/dev/null; then
  step "test_cuda under compute-sanitizer memcheck" env ENCDEC_TEST_SANITIZER=1 \
    compute-sanitizer --tool memcheck --error-exitcode 9 --leak-check full "$dir/tests/test_cuda"
  [ -f "$tiny/model.bin" ] && step "a transcription under compute-sanitizer memcheck" \
    compute-sanitizer --tool memcheck --error-exitcode 9 "$dir/encdec" transcribe -m "$tiny" \
      --device cuda "$shared/audio/jfk.wav"
else
  echo "compute-sanitizer not found: memcheck not run" >&2
  fails="$fails memcheck"
fi
if [ -n "$fails" ]; then echo "test-cuda: FAILED:$fails" >&2; exit 1; fi
echo "test-cuda: passed" >&2
