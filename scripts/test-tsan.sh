#!/usr/bin/env bash
# ThreadSanitizer over the code that shares memory between threads: the
# thread pool handing slices of work to its threads (test_kern; the kernels
# themselves are left uninstrumented, see CMakeLists.txt), a step's sampled
# picks on three threads at once (test_sample), the engine's scheduler
# with Whisper requests (test_engine) and with T5 requests packed into shared
# encoder passes and streamed token by token (test_engine_t5), and the HTTP
# server under concurrent clients, streamed completions included
# (test_server_load, its sanitizers' size), the parts of test_server_openai
# where threads meet (a model swapped by /load under a request in flight, a
# full queue, the deadline, a hang-up, SIGTERM's drain), the watcher of parked
# connections under slow and misbehaving clients, streams and cancels
# (test_server_hostile; both with --threaded), and live sessions over
# WebSockets, each on its thread beside libmicrohttpd's (test_server_realtime).
# Any report fails.
# Called by scripts/test.sh after the ASan pass; needs the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
tests=(test_kern test_sample test_engine test_engine_t5 test_server_load test_server_openai test_server_hostile
       test_server_realtime)

echo "== ThreadSanitizer build: ${tests[*]} ==" >&2
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENCDEC_WERROR=ON -DENCDEC_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target encdec_cli "${tests[@]::4}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
# halt_on_error: the first report fails the test; without address-space
# randomisation where the kernel allows it (TSan's fixed shadow layout
# collides with the high mmap randomisation of recent kernels)
run=()
if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R); fi
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4" \
  "${run[@]}" ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R "$regex"
