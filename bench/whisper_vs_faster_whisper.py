#!/usr/bin/env python3
"""encdec against faster-whisper (CTranslate2), the peer users pick on CPU: same model
directory, same audio, same beam size, same threads, in one run.

Usage (from the repository root, after scripts/venv.sh and a build):

    .venv/bin/python bench/whisper_vs_faster_whisper.py [--model DIR] [--threads 2]
        [--repeats 3] [--beams 1,5] [--long-minutes 10] [--mode longform|window]
        [--precisions f32:f32=float32,int8:f16=int8]
        [--whisper-cpp PATH/whisper-cli --ggml f32:f32=FILE,int8:f16=FILE]
        [--isa avx2[,-avx-vnni]] [AUDIO...]

The model defaults to ~/.cache/encdec/models/whisper-tiny.en (faster-whisper's own
tiny.en directory: both engines read the very same model.bin). AUDIO defaults to
../shared/audio/jfk.wav plus a --long-minutes recording made here by concatenating the
16 kHz wavs of ../shared/audio (with 0.5 s gaps) until it is that long.

Precisions pair an encdec configuration COMPUTE:CROSSKV (--compute, --cross-kv) with the
faster-whisper compute_type closest to it: f32:f32=float32 (both f32 arithmetic on the
stored f16 weights), int8:f16=int8 (int8 weights in both), bf16:bf16=bfloat16.

Modes (the same settings on both sides):
  longform (default)  each engine's transcribe() as users run it: timestamps, windows
                      seeking to the last complete segment, the previous text as prompt,
                      temperature fallback 0, 0.2, ... 1.0 with thresholds 2.4 / -1 / 0.6
                      (best of 5 when sampling), no VAD; --word-timestamps adds word times
  window              one decode per 30 s window without timestamps, no fallback, no
                      conditioning (encdec --no-timestamps --no-fallback)

Each engine runs in its own process per (audio, beam, precision) so that its peak RSS is
its own:
  encdec:          build/encdec bench -m DIR -t T -r R --modes full --beam B --compute C
                   --cross-kv KV --language en --json AUDIO [--no-timestamps --no-fallback]
                   (median of R transcriptions, wall time; the model loaded once, outside
                   the timing)
  faster-whisper:  WhisperModel(DIR, device="cpu", compute_type=CT, cpu_threads=T),
                   transcribe(AUDIO, beam_size=B, language="en", vad_filter=False, ...), the
                   segments consumed; one warm-up run, then the median of R timed runs
                   (model load outside the timing).
  whisper.cpp:     with --whisper-cpp CLI and --ggml PREC=FILE,...: whisper-cli -m FILE -f AUDIO
                   -t T -l en -bs B (-bs 1: greedy with best of 5 when sampling; beam B
                   otherwise), its defaults otherwise (timestamps, the previous text as
                   prompt, fallback 0.2 steps, thresholds 2.4 / -1 / 0.6), the process run
                   R times (the model file already in the page cache): the median of its
                   own "total time" less its "load time", peak RSS by GNU time. Build it from
                   its release source with its own CPU paths (GGML_NATIVE, here AVX2 + FMA
                   + F16C) and convert the same weights with its convert-h5-to-ggml.py
                   (f16; int8 as its quantize tool's q8_0).
--isa SET[,-EXT] caps both engines' instruction sets, to compare, on an AVX-512 machine,
the code an AVX2-only CPU runs (not that CPU: clock, caches and memory stay this one's):
encdec gets --isa as given; faster-whisper CT2_FORCE_CPU_ISA (AVX2, AVX512 or GENERIC),
MKL_ENABLE_INSTRUCTIONS (AVX2 without AVX-VNNI, AVX2_E1 with it; its GEMMs) and
ONEDNN_MAX_CPU_ISA (its convolutions) to match. whisper.cpp is capped by how it was built
(GGML_NATIVE=OFF with GGML_AVX2=ON, GGML_AVX512 off).

faster-whisper and encdec both follow openai-whisper's algorithm, but faster-whisper differs
in details (its beam search, how it pads the last window's features, prompt and prefix
handling), so the transcripts' word-level agreement (aligned, case and punctuation ignored)
is printed, not asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")

FW_CHILD = r"""
import json, resource, statistics, sys, time
from faster_whisper import WhisperModel
model_dir, audio, beam, threads, reps, ct, mode, words = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7], sys.argv[8] == "1"
m = WhisperModel(model_dir, device="cpu", compute_type=ct, cpu_threads=threads, num_workers=1)
if mode == "window":
    opts = dict(temperature=0.0, without_timestamps=True, condition_on_previous_text=False)
else:
    opts = dict(temperature=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0], best_of=5, without_timestamps=False,
                condition_on_previous_text=True, word_timestamps=words)
def run():
    segs, _ = m.transcribe(audio, beam_size=beam, language="en", vad_filter=False, **opts)
    return " ".join(s.text.strip() for s in segs)
text = run()
ts = []
for _ in range(reps):
    t0 = time.perf_counter(); text = run(); ts.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"transcribe_ms": statistics.median(ts), "text": text,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def default_model():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "encdec", "models", "whisper-tiny.en")


def long_recording(minutes, path):
    """Concatenate the 16 kHz mono s16 wavs of ../shared/audio into one of `minutes`."""
    srcs = []
    for dirpath, _, files in sorted(os.walk(os.path.join(SHARED, "audio"))):
        for f in sorted(files):
            if f.endswith(".wav"):
                with wave.open(os.path.join(dirpath, f)) as w:
                    if w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2:
                        srcs.append(w.readframes(w.getnframes()))
    gap = b"\0\0" * 8000
    want = int(minutes * 60 * 16000) * 2
    out = bytearray()
    while len(out) < want:
        for s in srcs:
            out += s + gap
            if len(out) >= want:
                break
    with wave.open(path, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(bytes(out[:want]))
    return path


def run_encdec(a, audio, beam, prec):
    exe = os.path.join(ROOT, "build", "encdec")
    compute, kv = prec.split(":")
    opts = ["--compute", compute, "--cross-kv", kv, "--language", "en"]
    if a.isa:
        opts += ["--isa", a.isa]
    if a.mode == "window":
        opts += ["--no-timestamps", "--no-fallback"]
    elif a.word_timestamps:
        opts += ["--word-timestamps"]
    out = subprocess.run([exe, "bench", "-m", a.model, "-t", str(a.threads), "-r", str(a.repeats),
                          "--modes", "full", "--beam", str(beam), "--json"] + opts + [audio],
                         check=True, capture_output=True, text=True)
    j = json.loads(out.stdout)
    topts = [o.replace("--no-fallback", "--temperature-increment=0") for o in opts]
    txt = subprocess.run([exe, "transcribe", "-m", a.model, "-t", str(a.threads), "--beam", str(beam)]
                         + topts + [audio], check=True, capture_output=True, text=True).stdout.strip()
    return {"transcribe_ms": j["transcribe_ms"], "peak_rss_mb": j["peak_rss_mb"], "text": txt,
            "windows": j.get("n_windows"), "decodes": j.get("n_decodes")}


def fw_env(isa):
    """CTranslate2 and the libraries under it capped at encdec's --isa SET[,-EXT]."""
    env = dict(os.environ)
    if not isa:
        return env
    parts = isa.split(",")
    base, vnni = parts[0], "-avx-vnni" not in parts[1:]
    if base == "avx2":
        env.update(CT2_FORCE_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2_E1" if vnni else "AVX2",
                   ONEDNN_MAX_CPU_ISA="AVX2_VNNI" if vnni else "AVX2")
    elif base in ("avx512", "amx"):
        env.update(CT2_FORCE_CPU_ISA="AVX512")
    elif base == "c":
        env.update(CT2_FORCE_CPU_ISA="GENERIC", MKL_ENABLE_INSTRUCTIONS="SSE4_2",
                   ONEDNN_MAX_CPU_ISA="SSE41")
    return env


def run_fw(a, audio, beam, ct):
    out = subprocess.run([sys.executable, "-c", FW_CHILD, a.model, audio, str(beam), str(a.threads),
                          str(a.repeats), ct, a.mode, "1" if a.word_timestamps else "0"],
                         check=True, capture_output=True, text=True, env=fw_env(a.isa))
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_wcpp(a, audio, beam, ggml):
    """whisper-cli R times; its own timings, less the model load; text from the last."""
    import re
    ts, rss, text = [], 0.0, ""
    for _ in range(a.repeats):
        out = subprocess.run(["/usr/bin/time", "-f", "RSSKB %M", a.whisper_cpp, "-m", ggml, "-f", audio,
                              "-t", str(a.threads), "-l", "en", "-bs", str(beam)]
                             + (["-nf", "-nt"] if a.mode == "window" else []),
                             check=True, capture_output=True, text=True)
        err = out.stderr
        load = float(re.search(r"load time =\s*([0-9.]+) ms", err).group(1))
        total = float(re.search(r"total time =\s*([0-9.]+) ms", err).group(1))
        rss = max(rss, int(re.search(r"RSSKB (\d+)", err).group(1)) / 1024)
        ts.append(total - load)
        text = " ".join(re.sub(r"^\[[^]]*\]\s*", "", l).strip() for l in out.stdout.splitlines() if l.strip())
    return {"transcribe_ms": statistics.median(ts), "peak_rss_mb": rss, "text": text}


def agreement(x, y):
    """Word-level agreement of two transcripts: matched words (difflib's alignment,
    case and punctuation ignored) over the longer word count."""
    import difflib
    norm = lambda s: [w.strip(".,!?;:\"'").lower() for w in s.split()]
    p, q = norm(x), norm(y)
    same = sum(b.size for b in difflib.SequenceMatcher(None, p, q, autojunk=False).get_matching_blocks())
    return same / max(len(p), len(q), 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=default_model())
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--beams", default="1,5")
    p.add_argument("--long-minutes", type=float, default=10)
    p.add_argument("--precisions", default="f32:f32=float32,int8:f16=int8",
                   help="encdec COMPUTE:CROSSKV=faster-whisper compute_type, comma-separated")
    p.add_argument("--mode", choices=("longform", "window"), default="longform")
    p.add_argument("--word-timestamps", action="store_true", help="longform: with word times")
    p.add_argument("--whisper-cpp", help="whisper.cpp's whisper-cli: also run it")
    p.add_argument("--ggml", default="",
                   help="whisper.cpp model per encdec precision: COMPUTE:CROSSKV=FILE, comma-separated")
    p.add_argument("--isa", help="cap both engines' instruction sets: avx2, avx2,-avx-vnni, ...")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("audio", nargs="*")
    a = p.parse_args()
    tmp = tempfile.mkdtemp()
    audios = a.audio or [os.path.join(SHARED, "audio", "jfk.wav")]
    if not a.audio and a.long_minutes > 0:
        audios.append(long_recording(a.long_minutes, os.path.join(tmp, f"long-{a.long_minutes:g}min.wav")))
    rows = []
    print(f"model {a.model}, {a.threads} threads, medians of {a.repeats}, mode {a.mode}"
          + (" with word timestamps" if a.word_timestamps else "")
          + (f", instruction sets capped at {a.isa}" if a.isa else ""))
    ggml = dict(g.split("=", 1) for g in a.ggml.split(",") if g) if a.whisper_cpp else {}
    print(f"{'audio':24s} {'precision':>18s} {'beam':>4s} {'encdec ms':>10s} {'f-w ms':>10s} "
          f"{'speed-up':>9s} {'encdec MB':>10s} {'f-w MB':>8s} {'words agree':>11s}"
          + (f" {'w.cpp ms':>10s} {'speed-up':>9s} {'w.cpp MB':>9s} {'agree':>6s}" if ggml else ""))
    for prec in a.precisions.split(","):
        mine, ct = prec.split("=")
        for audio in audios:
            for beam in [int(b) for b in a.beams.split(",")]:
                e, f = run_encdec(a, audio, beam, mine), run_fw(a, audio, beam, ct)
                w = run_wcpp(a, audio, beam, ggml[mine]) if mine in ggml else None
                agree = agreement(e["text"], f["text"])
                rows.append({"audio": audio, "precision": prec, "beam": beam, "encdec": e,
                             "faster_whisper": f, "agree": agree, "whisper_cpp": w})
                extra = ""
                if w:
                    extra = (f" {w['transcribe_ms']:10.1f} {w['transcribe_ms'] / e['transcribe_ms']:8.2f}x"
                             f" {w['peak_rss_mb']:9.1f} {100 * agreement(e['text'], w['text']):5.0f}%")
                print(f"{os.path.basename(audio):24s} {prec:>18s} {beam:4d} {e['transcribe_ms']:10.1f} "
                      f"{f['transcribe_ms']:10.1f} {f['transcribe_ms'] / e['transcribe_ms']:8.2f}x "
                      f"{e['peak_rss_mb']:10.1f} {f['peak_rss_mb']:8.1f} {100 * agree:10.0f}%" + extra,
                      flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
