#!/usr/bin/env bash
# test_install.sh BUILD_DIR [MODEL_DIR AUDIO]   (defaults: whisper tiny.en from
# $ENCDEC_TINY_EN or the model cache, $ENCDEC_SHARED_DIR/audio/jfk.flac)
# The C library as a program outside this tree uses it: `cmake --install`
# into a temporary prefix, then examples/transcribe.c built against that
# prefix (never the build tree) four ways: CMake's find_package(encdec) with
# encdec::encdec (shared) and encdec::encdec_static, and pkg-config, shared
# and static. Checks the SONAME, the exported symbols, that the shared
# builds need libencdec.so.0 and the static ones do not, and runs each on a
# recording (when a model and the audio are given) expecting the same text.
set -euo pipefail
build=$1
model=${2:-${ENCDEC_TINY_EN:-${XDG_CACHE_HOME:-$HOME/.cache}/encdec/models/whisper-tiny.en}}
audio=${3:-${ENCDEC_SHARED_DIR:-}/audio/jfk.flac}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name libencdec.so.0 | head -1)")
[ -f "$libdir/libencdec.a" ] && [ -L "$libdir/libencdec.so" ] || fail "libraries missing in $libdir"
[ -f "$prefix/include/encdec.h" ] || fail "header not installed"
readelf -d "$libdir/libencdec.so.0" | grep -q 'SONAME.*\[libencdec.so.0\]' || fail "SONAME is not libencdec.so.0"
other=$(nm -D --defined-only "$libdir/libencdec.so.0" | awk '{print $3}' | grep -v '^encdec_' || true)
[ -z "$other" ] || fail "libencdec.so exports more than encdec_*: $(echo $other | head -c 200)"
# every function of the header is exported
for f in $(grep -o '^ENCDEC_API [^(]*(' "$src/include/encdec.h" | grep -o 'encdec_[a-z_0-9]*($' | tr -d '('); do
  nm -D --defined-only "$libdir/libencdec.so.0" | grep -q " $f\$" || fail "$f is not exported"
done

# CMake: find_package(encdec) from the prefix
cmake -S "$src/examples" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/ex" >/dev/null
# pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion encdec)" = "$(sed -n 's/^project(encdec VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
  fail "encdec.pc's version differs from the project's"
cc -Wall -Werror "$src/examples/transcribe.c" -o "$tmp/pc_shared" $(pkg-config --cflags --libs encdec)
# static: libencdec.a, then what it needs (Libs.private, Requires.private)
cc -Wall -Werror "$src/examples/transcribe.c" -o "$tmp/pc_static" $(pkg-config --cflags encdec) \
   -Wl,-Bstatic -lencdec -Wl,-Bdynamic $(pkg-config --static --libs encdec | sed "s/-lencdec//")

for b in "$tmp/ex/transcribe" "$tmp/pc_shared"; do
  readelf -d "$b" | grep -q 'NEEDED.*libencdec.so.0' || fail "$b does not link libencdec.so.0"
done
for b in "$tmp/ex/transcribe_static" "$tmp/pc_static"; do
  [ -x "$b" ] || fail "$b was not built"
  ! readelf -d "$b" | grep -q 'NEEDED.*libencdec' || fail "$b links libencdec dynamically"
done
if [ -n "$model" ] && [ -d "$model" ] && [ -f "$audio" ]; then
  want=""
  for b in "$tmp/ex/transcribe" "$tmp/ex/transcribe_static" "$tmp/pc_shared" "$tmp/pc_static"; do
    # the shared builds find libencdec.so.0 through their RUNPATH (CMake) or LD_LIBRARY_PATH
    out=$(LD_LIBRARY_PATH=$libdir "$b" "$model" "$audio") || fail "$b failed"
    grep -q '^language: en, ' <<<"$out" || fail "$b: $out"
    [ -z "$want" ] && want=$out
    [ "$out" = "$want" ] || fail "$b differs: $out"
  done
  grep -qi 'ask not what your country can do for you' <<<"$want" || fail "unexpected text: $want"
  printf '%s\n' "$want"
fi
echo "test_install: passed"
