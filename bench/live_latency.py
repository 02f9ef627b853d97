#!/usr/bin/env python3
"""Live transcription's latency and accuracy (docs/LIVE.md): a recording fed
to `encdec stream --realtime --json` at the pace it would be spoken, and
the same recording transcribed offline (`encdec transcribe`), same model
and threads. Standard library only.

    python3 bench/live_latency.py [--encdec build/encdec] [--model DIR] [--threads 2]
        [--step 1.0] [--idle-step 0.5] [--vad] [--compute f32|bf16|int8] [--isa auto|avx2|...]
        [--recording talk|pauses|dense]
        [AUDIO.wav]

The recording defaults to tests/data/longform-golden.json's "talk" (62 s of
../shared/audio's utterances with pauses of low noise), built here; its
reference is its pieces' reference transcripts. Latency: for every final
word, the wall-clock time its final text arrived minus the time its audio
ended (the stream's clock starts with the first sample fed; a word's end is
interpolated within its final piece's span). Prints the median and p90, the
WER of the final text and of offline transcription against the reference
(numbers 0..20 spelled out on both sides), the real-time factor and the CPU
time per second of audio.
"""
import argparse
import json
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.environ.get("ENCDEC_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
NUM = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
      "fifteen sixteen seventeen eighteen nineteen twenty".split()


def words(text):
    out = []
    for w in re.sub(r"[^a-z0-9' ]", " ", text.lower()).split():
        out.append(NUM[int(w)] if w.isdigit() and int(w) <= 20 else w)
    return out


def edits(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j - 1] + (x != y), prev[j] + 1, cur[j - 1] + 1))
        prev = cur
    return prev[-1]


def references():
    refs = {}
    with open(os.path.join(SHARED, "audio", "TRANSCRIPTS.tsv")) as f:
        for line in list(f)[1:]:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > 1 and not cols[1].startswith(("(", "see ")) and "*" not in cols[0]:
                refs[cols[0]] = cols[1]
    for sub, name in (("librivox", "transcription"), ("cards", "cards.transcription")):
        with open(os.path.join(SHARED, "audio", sub, name)) as f:
            for line in f:
                m = re.match(r"<s>(.*)</s>\s*\((.*)\)", line.strip())
                if m:
                    refs[f"{sub}/{m.group(2)}.wav"] = m.group(1)
    return refs


def build(name, path):
    """The recording of longform-golden.json into a 16 kHz WAV; its reference."""
    with open(os.path.join(ROOT, "tests", "data", "longform-golden.json")) as f:
        rec = next(r for r in json.load(f)["recordings"] if r["name"] == name)
    refs, frames, ref = references(), [], []
    for p in rec["pieces"]:
        if "file" in p:
            with wave.open(os.path.join(SHARED, "audio", p["file"])) as w:
                frames.append(w.readframes(w.getnframes()))
            ref.append(refs.get(p["file"], ""))
        else:   # tests/recordings.h's noise
            x, out = p["seed"], []
            for _ in range(round(p["silence"] * 16000)):
                x = (x * 1664525 + 1013904223) % 2 ** 32
                out.append((x >> 16) % 7 - 3)
            frames.append(struct.pack("<%dh" % len(out), *out))
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"".join(frames))
    return " ".join(ref)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encdec", default=os.path.join(ROOT, "build", "encdec"))
    ap.add_argument("--model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--idle-step", type=float, default=0.5, help="encdec stream's --idle-step (0: off)")
    ap.add_argument("--vad", action="store_true")
    ap.add_argument("--compute", default="f32", help="encdec's --compute, live and offline")
    ap.add_argument("--isa", default="auto", help="encdec's --isa (auto, avx2, ...)")
    ap.add_argument("--recording", default="talk")
    ap.add_argument("audio", nargs="?")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    audio, ref = a.audio, None
    if not audio:
        audio = os.path.join(tmp, a.recording + ".wav")
        ref = build(a.recording, audio)
    with wave.open(audio) as w:
        seconds = w.getnframes() / w.getframerate()
    model = (["-m", a.model] if a.model else []) + ["--compute", a.compute, "--isa", a.isa]
    cmd = [a.encdec, "stream", "--realtime", "--json", "-t", str(a.threads), "--step",
           str(a.step), "--idle-step", str(a.idle_step)] + model + (["--vad"] if a.vad else []) + [audio]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lat, final = [], ""
    for line in out.splitlines():
        ev = json.loads(line)
        if ev["type"] != "final":
            continue
        final += ev["text"]
        ws = ev["text"].split()
        for i in range(len(ws)):   # each word's end, spread over the piece's span
            end = ev["start"] + (ev["end"] - ev["start"]) * (i + 1) / len(ws)
            lat.append(ev["wall"] - end)
    off = subprocess.run([a.encdec, "transcribe", "-t", str(a.threads)] + model + [audio],
                         capture_output=True, text=True, check=True).stdout
    print(f"{os.path.basename(audio)}: {seconds:.1f} s, step {a.step} s (idle {a.idle_step} s), {a.threads} threads, "
          f"{a.compute}"
          f"{', VAD' if a.vad else ''}")
    print(f"  final-word latency: median {pct(lat, 0.5):.2f} s, p90 {pct(lat, 0.9):.2f} s, "
          f"max {max(lat):.2f} s over {len(lat)} words")
    print(f"  wall {wall:.1f} s for {seconds:.1f} s of audio (model load included); CPU "
          f"{cpu / seconds:.2f} s per second of audio")
    if ref:
        r = words(ref)
        el, eo = edits(words(final), r), edits(words(off), r)
        print(f"  WER live {100 * el / len(r):.2f}% ({el} of {len(r)} words), offline "
              f"{100 * eo / len(r):.2f}% ({eo})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
