#!/usr/bin/env bash
# The libFuzzer harnesses: builds the library once with clang (ASan + UBSan +
# fuzzer coverage; the kernels, src/kern/, plain) into build-fuzz/, links one
# harness per parser against it, and runs each for SECONDS (default 60) over
# its committed seeds
# (tests/fuzz/corpus/<name>/; what a run finds goes to build-fuzz/corpus-<name>/),
# two at a time. Exits non-zero when any harness finds a crash, a leak or
# undefined behaviour (its log is printed; the input is in build-fuzz/).
#   tests/fuzz/build.sh [SECONDS] [HARNESS...]      e.g. tests/fuzz/build.sh 30 audio ct2
#   FUZZ_RUNS=1000000 tests/fuzz/build.sh 0 bpe      a fixed number of inputs instead
# Needs clang and libclang-rt-dev (Debian: clang-14 libclang-rt-14-dev; scripts/deps.sh fuzz).
# scripts/test.sh runs it (20 s each). Crashes found are fixed and their inputs
# added to the unit tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-60}
[ $# -gt 0 ] && shift
all=(audio safetensors ct2 ggml bpe spm config t5_config bart form vad realtime lt doc ttok completion langid nmt)
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")
out=build-fuzz
CC=${CC:-clang-14}
arch=$(${CC} -dumpmachine | sed 's/-unknown//; s/-pc//')
case "$arch" in aarch64*) arch=aarch64-linux-gnu ;; x86_64*) arch=x86_64-linux-gnu ;; esac
blis_inc=/usr/include/$arch/blis-serial blis_lib=/usr/lib/$arch/blis-serial
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-g1 -O1 $san -Iinclude -Isrc -isystem $blis_inc -DFUZZ_DATA_DIR=\"$root/tests/data\""
libs="-L$blis_lib -Wl,-rpath,$blis_lib -lblis -lsndfile -lsoxr -lcjson -lz -lm -lpthread"
# FFmpeg's decoder (src/audio/av.c) when the machine has it, as the build does
if pkg-config --exists libavformat libavcodec libavutil; then
  cflags="$cflags -DENCDEC_HAVE_AV=1 $(pkg-config --cflags libavformat libavcodec libavutil)"
  libs="$libs $(pkg-config --libs libavformat libavcodec libavutil)"
fi

# The library, once for every harness: objects rebuilt only when their source
# or a header changed (compared with the archive), in parallel.
mkdir -p "$out/obj"
lib="$out/libencdec-fuzz.a"
newest_h=$(find include src -name '*.h' -newer "$lib" 2>/dev/null | head -1 || true)
if [ ! -f "$lib" ] || [ -n "$newest_h" ] || [ -n "$(find src -name '*.c' -newer "$lib" | head -1)" ]; then
  echo "== building the instrumented library ($CC) ==" >&2
  # the kernels (src/kern/) plain: pure arithmetic on buffers their
  # instrumented callers allocate, no parser's; instrumented, matmul_hp.c
  # alone took clang 139 s, most of this build
  kflags="-g1 -O2 -Iinclude -Isrc -isystem $blis_inc"
  find src -name '*.c' | sort | xargs -P"$(nproc)" -I{} sh -c \
    'o='"$out"'/obj/$(echo {} | tr / _).o; case {} in src/kern/*) f="'"$kflags"'";; *) f="'"$cflags"' -fsanitize=fuzzer-no-link";; esac; '"$CC"' $f -c {} -o $o'
  rm -f "$lib"
  ar rcs "$lib" "$out"/obj/*.o
fi
link_one() {   # link_one HARNESS: its binary, with the server's sources where it needs them
  local h=$1 extra=()
  # /translate_file's sources, which the handler reaches
  local lt_files=(server/lt_run.c server/ep_lt_file.c server/lt_doc.c server/lt_srt.c server/lt_files.c server/lt_zip.c
                  -DENCDEC_WITH_ZIP=1 -lzip)
  # the server's form path: its handler, collector and bodies, and libmicrohttpd
  [ "$h" = form ] && extra=(server/http.c server/reply.c server/park.c server/sse.c server/ep_audio.c server/ep_text.c server/ep_load.c
                            server/form.c server/openai.c server/completions.c server/ep_lt.c server/lt.c server/lt_detect.c server/lt_html.c server/lt_split.c server/lt_format.c server/utf8.c
                            "${lt_files[@]}" -lmicrohttpd)
  # the WebSocket of /v1/realtime: the same handler, its session and framing (wslay, nettle)
  [ "$h" = realtime ] && extra=(server/http.c server/reply.c server/park.c server/sse.c server/ep_audio.c server/ep_text.c
                                server/ep_load.c server/form.c server/openai.c server/completions.c
                                server/ep_lt.c server/lt.c server/lt_detect.c server/lt_html.c server/lt_split.c server/lt_format.c server/utf8.c server/ws.c server/ep_realtime.c -DENCDEC_WITH_WS=1
                                "${lt_files[@]}" -lmicrohttpd -lwslay -lnettle)
  # LibreTranslate's files (.txt, .srt, .html and the ZIP formats)
  [ "$h" = doc ] && extra=(server/lt_doc.c server/lt_srt.c server/lt_html.c server/lt_zip.c server/lt_files.c server/utf8.c
                           -DENCDEC_WITH_ZIP=1 -lzip)
  # LibreTranslate's request parser
  [ "$h" = lt ] && extra=(server/lt.c server/lt_html.c server/lt_split.c server/lt_format.c server/utf8.c)
  # LibreTranslate's /detect over the language identifier
  [ "$h" = langid ] && extra=(server/lt.c server/lt_detect.c server/utf8.c)
  # OpenAI's completions body and its stop sequences
  [ "$h" = completion ] && extra=(server/completions.c server/form.c)
  "$CC" $cflags -fsanitize=fuzzer "tests/fuzz/fuzz_$h.c" "${extra[@]}" "$lib" $libs -o "$out/fuzz_$h"
}
# every harness, as many at once as there are cores
n_cores=$(nproc) linking=()
for h in "${harnesses[@]}"; do
  link_one "$h" & linking+=($!)
  if [ ${#linking[@]} -ge "$n_cores" ]; then wait "${linking[0]}"; linking=("${linking[@]:1}"); fi
done
for p in "${linking[@]}"; do wait "$p"; done

# Runs, two at a time; -runs replaces the time limit when FUZZ_RUNS is set.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$root/tests/lsan.supp
limit="-max_total_time=$secs"
[ -n "${FUZZ_RUNS:-}" ] && limit="-runs=$FUZZ_RUNS"
run_one() {   # the harness's files in a directory of its own, removed after the run
  local h=$1 tmp base=/dev/shm rc=0
  [ -w "$base" ] || base=${TMPDIR:-/tmp}
  tmp=$(mktemp -d "$base/encdec-fuzz-$h.XXXXXX")
  mkdir -p "$out/corpus-$h"
  (cd "$out" && TMPDIR="$tmp" "./fuzz_$h" $limit -max_len=65536 -rss_limit_mb=2048 -timeout=60 \
     -print_final_stats=1 -artifact_prefix="$root/$out/crash-$h-" \
     "corpus-$h" "$root/tests/fuzz/corpus/$h") > "$out/fuzz_$h.log" 2>&1 || rc=$?
  rm -rf "$tmp"
  return $rc
}
pids=() names=() failed=0
for h in "${harnesses[@]}"; do
  echo "== fuzz_$h: ${FUZZ_RUNS:-${secs}s} ==" >&2
  run_one "$h" & pids+=($!) names+=("$h")
  if [ ${#pids[@]} -ge 2 ]; then
    if ! wait "${pids[0]}"; then failed=1; tail -60 "$out/fuzz_${names[0]}.log" >&2; fi
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; tail -60 "$out/fuzz_${names[$i]}.log" >&2; fi
done
for h in "${harnesses[@]}"; do
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/fuzz_$h.log" | grep -o '[0-9]*$' || echo '?')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$out/fuzz_$h.log" | grep -o '[0-9]*$' || echo '?')
  echo "fuzz_$h: $runs inputs, $rate/s" >&2
done
[ $failed -eq 0 ] || { echo "fuzzing found a problem (logs and inputs in $out/)" >&2; exit 1; }
