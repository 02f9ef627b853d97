#!/usr/bin/env python3
"""Live transcription's memory over a long stream (docs/LIVE.md): an hour (or
--minutes) of speech with pauses, fed to `encdec stream --json` as fast as
the model decodes it, while this samples the process's resident memory
(VmRSS) every second against the stream's clock (the end time of the last
event). A live session holds at most 30 s of audio and its text goes out as
events, so memory must not grow with the stream: prints the RSS at every
--every minutes of audio, the growth from the end of the first interval to
the end, the wall time and the real-time factor, and exits 1 when the
growth is over --max-growth-mb. Standard library only.

    python3 bench/live_memory.py [--encdec build/encdec] [--model DIR] [--threads 2]
        [--minutes 60] [--every 5] [--recording talk] [--max-growth-mb 16]

The hour is tests/data/longform-golden.json's recording (the "talk": 62 s
of ../shared/audio's utterances with pauses of low noise, as
bench/live_latency.py builds it) said over and over.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_latency import ROOT, build   # noqa: E402


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encdec", default=os.path.join(ROOT, "build", "encdec"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--every", type=float, default=5)
    ap.add_argument("--recording", default="talk")
    ap.add_argument("--max-growth-mb", type=float, default=16)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "one.wav")
        build(a.recording, one)
        with wave.open(one) as w:
            frames = w.readframes(w.getnframes())
        piece_s = len(frames) / 2 / 16000
        reps = max(1, int(a.minutes * 60 / piece_s + 0.999))
        path = os.path.join(tmp, "long.wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            for _ in range(reps):
                w.writeframes(frames)
        audio_s = reps * piece_s
        cmd = [a.encdec, "stream", "--json", "-t", str(a.threads), path]
        if a.model:
            cmd[2:2] = ["-m", a.model]
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        clock = [0.0]
        samples = []   # (stream seconds, RSS MB)

        def sample():
            while p.poll() is None:
                r = rss_mb(p.pid)
                if r is not None:
                    samples.append((clock[0], r))
                time.sleep(1.0)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        finals = 0
        for line in p.stdout:
            ev = json.loads(line)
            if ev.get("end") is not None:
                clock[0] = max(clock[0], ev["end"])
            finals += ev.get("type") == "final"
        rc = p.wait()
        th.join()
        wall = time.time() - t0
    if rc != 0 or not samples:
        print(f"encdec stream failed (exit {rc})", file=sys.stderr)
        return 1
    print(f"{audio_s / 60:.1f} min of audio ({a.recording} x {reps}), {finals} final events, "
          f"wall {wall:.0f} s, real-time factor {wall / audio_s:.3f}, threads {a.threads}")
    print("| audio (min) | RSS (MB) |\n|---|---|")
    marks, k = [], 1
    for t, r in samples:
        while t >= k * a.every * 60:
            marks.append((k * a.every, r))
            k += 1
    for m, r in marks:
        print(f"| {m:g} | {r:.1f} |")
    first = next((r for t, r in samples if t >= a.every * 60), samples[-1][1])
    peak_late = max(r for t, r in samples if t >= a.every * 60) if marks else samples[-1][1]
    growth = peak_late - first
    print(f"RSS after the first {a.every:g} min {first:.1f} MB; the most after it {peak_late:.1f} MB "
          f"(growth {growth:+.1f} MB, limit {a.max_growth_mb:g})")
    return 0 if growth <= a.max_growth_mb else 1


if __name__ == "__main__":
    sys.exit(main())
