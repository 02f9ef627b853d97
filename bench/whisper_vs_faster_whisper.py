#!/usr/bin/env python3
"""encdec against faster-whisper (CTranslate2), the peer users pick on CPU: same model
directory, same audio, same beam size, same threads, in one run.

Usage (from the repository root, after scripts/venv.sh and a build):

    .venv/bin/python bench/whisper_vs_faster_whisper.py [--model DIR] [--threads 2]
        [--repeats 3] [--beams 1,5] [--long-minutes 10]
        [--precisions f32:f32=float32,int8:f16=int8] [AUDIO...]

The model defaults to ~/.cache/encdec/models/whisper-tiny.en (faster-whisper's own
tiny.en directory: both engines read the very same model.bin). AUDIO defaults to
../shared/audio/jfk.wav plus a --long-minutes recording made here by concatenating the
16 kHz wavs of ../shared/audio (with 0.5 s gaps) until it is that long.

Precisions pair an encdec configuration COMPUTE:CROSSKV (--compute, --cross-kv) with the
faster-whisper compute_type closest to it: f32:f32=float32 (both f32 arithmetic on the
stored f16 weights), int8:f16=int8 (int8 weights in both), bf16:bf16=bfloat16.

Each engine runs in its own process per (audio, beam, precision) so that its peak RSS is
its own:
  encdec:          build/encdec bench -m DIR -t T -r R --modes full --beam B --compute C
                   --cross-kv KV --json AUDIO
                   (median of R runs of transcription: mel + encoder + decoding; the model
                   loaded once, outside the timing)
  faster-whisper:  WhisperModel(DIR, device="cpu", compute_type=CT, cpu_threads=T),
                   transcribe(AUDIO, beam_size=B, language="en", temperature=0,
                   without_timestamps=True, condition_on_previous_text=False,
                   vad_filter=False), the segments consumed; one warm-up run, then the median
                   of R timed runs (model load outside the timing).
The decoding rules are not identical (faster-whisper pads the log-mel and uses its own
beam search and long-form seeking; encdec cuts 30 s windows), so the transcripts'
word-level agreement (aligned, case and punctuation ignored) is printed, not asserted.
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
model_dir, audio, beam, threads, reps, ct = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
m = WhisperModel(model_dir, device="cpu", compute_type=ct, cpu_threads=threads, num_workers=1)
def run():
    segs, _ = m.transcribe(audio, beam_size=beam, language="en", temperature=0.0, without_timestamps=True,
                           condition_on_previous_text=False, vad_filter=False)
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
    opts = ["--compute", compute, "--cross-kv", kv]
    out = subprocess.run([exe, "bench", "-m", a.model, "-t", str(a.threads), "-r", str(a.repeats),
                          "--modes", "full", "--beam", str(beam), "--json"] + opts + [audio],
                         check=True, capture_output=True, text=True)
    j = json.loads(out.stdout)
    txt = subprocess.run([exe, "transcribe", "-m", a.model, "-t", str(a.threads), "--beam", str(beam)]
                         + opts + [audio], check=True, capture_output=True, text=True).stdout.strip()
    return {"transcribe_ms": j["transcribe_ms"], "peak_rss_mb": j["peak_rss_mb"], "text": txt}


def run_fw(a, audio, beam, ct):
    out = subprocess.run([sys.executable, "-c", FW_CHILD, a.model, audio, str(beam), str(a.threads),
                          str(a.repeats), ct], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("audio", nargs="*")
    a = p.parse_args()
    tmp = tempfile.mkdtemp()
    audios = a.audio or [os.path.join(SHARED, "audio", "jfk.wav")]
    if not a.audio and a.long_minutes > 0:
        audios.append(long_recording(a.long_minutes, os.path.join(tmp, f"long-{a.long_minutes:g}min.wav")))
    rows = []
    print(f"model {a.model}, {a.threads} threads, medians of {a.repeats}")
    print(f"{'audio':24s} {'precision':>18s} {'beam':>4s} {'encdec ms':>10s} {'f-w ms':>10s} "
          f"{'speed-up':>9s} {'encdec MB':>10s} {'f-w MB':>8s} {'words agree':>11s}")
    for prec in a.precisions.split(","):
        mine, ct = prec.split("=")
        for audio in audios:
            for beam in [int(b) for b in a.beams.split(",")]:
                e, f = run_encdec(a, audio, beam, mine), run_fw(a, audio, beam, ct)
                agree = agreement(e["text"], f["text"])
                rows.append({"audio": audio, "precision": prec, "beam": beam, "encdec": e,
                             "faster_whisper": f, "agree": agree})
                print(f"{os.path.basename(audio):24s} {prec:>18s} {beam:4d} {e['transcribe_ms']:10.1f} "
                      f"{f['transcribe_ms']:10.1f} {f['transcribe_ms'] / e['transcribe_ms']:8.2f}x "
                      f"{e['peak_rss_mb']:10.1f} {f['peak_rss_mb']:8.1f} {100 * agree:10.0f}%")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
