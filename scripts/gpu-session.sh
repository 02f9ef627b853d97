#!/usr/bin/env bash
# What a GPU session carries to the GPU machine, in parts that fit the device
# tool's calls (docs/GPU.md, "A GPU session"). The working tree travels with
# every call (about 28 MB); what scripts/test-cuda.sh needs besides it does
# not fit one call: the CUDA build's programs and runtime libraries, tiny.en
# (75 MB) and the recordings and tokenizers of ../shared.
#
#   here:   scripts/gpu-session.sh pack [PART_MB]
#       builds build-cuda (scripts/test-cuda.sh build), then packs the CUDA
#       build's encdec, tests and rt/, ../shared's audio and tokenizers and
#       the installed tiny.en into one tar.gz, split into gpu-carry/part.NN
#       of PART_MB MiB at most (default 34) with gpu-carry/MANIFEST (the
#       parts' count and the whole's sha256); prints the calls to make.
#   there:  scripts/gpu-session.sh take
#       call by call, each carrying its gpu-carry/part.NN (and MANIFEST):
#       keeps the part in .gpu-parts/ (ignored, so later calls keep it);
#       when every part is there, checks the sha256 and unpacks into
#       build-cuda/ and gpu-data/ (tiny.en, shared/). Then:
#       ENCDEC_TINY_EN=$PWD/gpu-data/whisper-tiny.en ENCDEC_SHARED_DIR=$PWD/gpu-data/shared scripts/test-cuda.sh
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
pack)
  mb=${2:-34}
  shared=${ENCDEC_SHARED_DIR:-$PWD/../shared}
  tiny=${ENCDEC_TINY_EN:-$HOME/.cache/encdec/models/whisper-tiny.en}
  [ -f "$tiny/model.bin" ] || { echo "no tiny.en at $tiny (scripts/fetch-model.sh)" >&2; exit 2; }
  [ -d "$shared/audio" ] || { echo "no ../shared/audio at $shared" >&2; exit 2; }
  scripts/test-cuda.sh build
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/build-cuda" "$stage/gpu-data/shared/assets"
  cp -a build-cuda/encdec build-cuda/tests build-cuda/rt "$stage/build-cuda/"
  cp -a "$tiny" "$stage/gpu-data/whisper-tiny.en"
  cp -a "$shared/audio" "$stage/gpu-data/shared/"
  for a in whisper-tiny.en-tokenizer t5-tokenizer; do
    [ -d "$shared/assets/$a" ] && cp -a "$shared/assets/$a" "$stage/gpu-data/shared/assets/"
  done
  rm -rf gpu-carry && mkdir -p gpu-carry
  tar -C "$stage" -czf gpu-carry/all.tgz build-cuda gpu-data
  split -b "${mb}M" -d gpu-carry/all.tgz gpu-carry/part.
  n=$(ls gpu-carry/part.* | wc -l)
  echo "$n $(sha256sum gpu-carry/all.tgz | cut -d' ' -f1)" > gpu-carry/MANIFEST
  rm gpu-carry/all.tgz
  echo "gpu-carry: $n parts of at most $mb MiB; one device call each, carrying it:" >&2
  for p in gpu-carry/part.*; do
    echo "  run(command=\"scripts/gpu-session.sh take\", carry=[\"$p\", \"gpu-carry/MANIFEST\"])" >&2
  done
  echo "then: ENCDEC_TINY_EN=\$PWD/gpu-data/whisper-tiny.en ENCDEC_SHARED_DIR=\$PWD/gpu-data/shared scripts/test-cuda.sh" >&2
  ;;
take)
  [ -f gpu-carry/MANIFEST ] || { echo "take: no gpu-carry/MANIFEST carried" >&2; exit 2; }
  mkdir -p .gpu-parts
  cp gpu-carry/MANIFEST .gpu-parts/
  for p in gpu-carry/part.*; do [ -e "$p" ] && cp "$p" .gpu-parts/; done
  read -r n sum < .gpu-parts/MANIFEST
  have=$(ls .gpu-parts/part.* 2>/dev/null | wc -l)
  echo "take: $have of $n parts here" >&2
  [ "$have" -lt "$n" ] && exit 0
  got=$(cat .gpu-parts/part.* | sha256sum | cut -d' ' -f1)
  [ "$got" = "$sum" ] || { echo "take: the parts' sha256 is $got, not $sum: carry them again" >&2; exit 1; }
  rm -rf build-cuda/encdec build-cuda/tests build-cuda/rt gpu-data
  cat .gpu-parts/part.* | tar -xz
  rm -rf .gpu-parts
  echo "take: unpacked build-cuda/ and gpu-data/ ($(du -sh gpu-data | cut -f1) of data)" >&2
  ;;
*)
  sed -n '2,21p' "$0" >&2
  exit 2
  ;;
esac
