#!/usr/bin/env bash
# The CUDA backend's check, in two halves.
#
#   scripts/test-cuda.sh build   here (the CUDA toolkit, no GPU needed): the
#       CUDA build in build-cuda/ (-DENCDEC_CUDA=ON, warnings as errors:
#       nvcc's and the host compiler's), its program and test_cuda, then
#       test_cuda through ctest, which skips, saying why, without a GPU; and
#       build-cuda/rt/: the shared libraries those programs need that a bare
#       CUDA image lacks (BLIS, libsndfile, ...), so that build-cuda runs on
#       the GPU machine as it is (scripts/test.sh runs this half in CI).
#   scripts/test-cuda.sh         on the GPU machine, build-cuda/tests/test_cuda
#       and build-cuda/rt carried there (29 MB with the build's objects): the device, then every CUDA kernel against its CPU twin
#       (test_cuda), then the same under compute-sanitizer's memcheck. Any
#       failure, a skip included, fails. Under 8 minutes on an H100.
#
# What it does not run yet: the Whisper and T5 goldens on the CUDA backend
# (the model code reaches the device once core/ops dispatches to it; see
# docs/ARCHITECTURE.md, "The CUDA backend").
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-cuda

if [ "${1:-}" = build ]; then
  # (without FFmpeg: its libraries would be most of what travels)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DENCDEC_WERROR=ON -DENCDEC_CUDA=ON \
        -DENCDEC_FFMPEG=OFF >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target encdec_cli test_cuda
  ctest --test-dir "$dir" --output-on-failure -R '^test_cuda$'
  # The libraries test_cuda loads, less the C library's own and CUDA's (the
  # GPU machine has its driver, runtime and cuBLAS): copied beside it for
  # LD_LIBRARY_PATH.
  rm -rf "$dir/rt" && mkdir -p "$dir/rt"
  ldd "$dir/tests/test_cuda" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt)\.so' |
    while read -r lib; do cp -L "$lib" "$dir/rt/"; done
  echo "build-cuda: $(du -sh "$dir/rt" | cut -f1) of runtime libraries in $dir/rt; carry $dir to the GPU machine" >&2
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
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "== test_cuda: every kernel against its CPU twin ==" >&2
set +e
"$dir/tests/test_cuda"; rc=$?
set -e
[ "$rc" = 0 ] || { echo "test_cuda: exit $rc (77: skipped, which fails here)" >&2; exit 1; }
if command -v compute-sanitizer >/dev/null; then
  echo "== test_cuda under compute-sanitizer --tool memcheck ==" >&2
  compute-sanitizer --tool memcheck --error-exitcode 9 --leak-check full "$dir/tests/test_cuda"
else
  echo "compute-sanitizer not found: memcheck not run" >&2
  exit 1
fi
echo "test-cuda: passed" >&2
