#!/usr/bin/env python3
"""Live transcription's memory over a long stream (docs/LIVE.md): an hour (or
--minutes) of speech with pauses, fed to `encdec stream --json` as fast as
the model decodes it, while this samples the process's resident memory
(VmRSS) every second against the stream's clock (the end time of the last
event). A live session holds at most 30 s of audio and its text goes out as
events (and encdec stream reads its file a step at a time), so memory must
not grow with the stream: prints, for every --every minutes of audio, the
RSS at its end, its median and its most (a decode's transient buffers come
and go), the growth of the median from the second interval (the first
warms up) to the last, the wall time and the real-time factor, and exits 1
when that growth is over --max-growth-mb. Standard library only.

    python3 bench/live_memory.py [--encdec build/encdec] [--model DIR] [--threads 2]
        [--compute f32] [--minutes 60] [--every 5] [--recording talk]
        [--max-growth-mb 16] [--server]

--server: the same audio over `encdec serve`'s GET /v1/realtime instead (one
WebSocket session, PCM16 at 24 kHz in 100 ms messages sent as fast as the
server reads them, server VAD; the clock from the deltas' audio_end_ms),
sampling the server's memory; run it with .venv-client's Python (the
websockets package).

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


def serve_stream(a, frames, clock, started):
    """One live session over the server: the 16 kHz PCM frames as 24 kHz
    PCM16 as fast as the server reads them. Returns (server pid, finals,
    the server's Popen) once the session has ended."""
    import audioop   # noqa: E402 (deprecated, still in 3.11)
    import base64
    from websockets.sync.client import connect
    pcm, _ = audioop.ratecv(frames, 2, 1, 16000, 24000, None)
    cmd = [a.encdec, "serve", "--port", "0", "-t", str(a.threads), "-q", "--compute", a.compute]
    p = subprocess.Popen(cmd + (["-m", a.model] if a.model else []), stdout=subprocess.PIPE,
                         text=True)
    port = int(p.stdout.readline().strip().rsplit(":", 1)[1])
    started.append(p)
    finals = [0]
    with connect("ws://127.0.0.1:%d/v1/realtime?intent=transcription" % port, max_size=None,
                 ping_timeout=None) as w:
        w.send(json.dumps({"type": "session.update", "session": {
            "type": "transcription", "audio": {"input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "turn_detection": {"type": "server_vad", "silence_duration_ms": 600}}}}}))
        done = threading.Event()

        def reader():
            try:
                while True:
                    e = json.loads(w.recv())
                    t = e.get("type", "")
                    if t.endswith("transcription.delta") and "audio_end_ms" in e:
                        clock[0] = max(clock[0], e["audio_end_ms"] / 1e3)
                    finals[0] += t.endswith("transcription.completed")
                    if t == "error" and e["error"].get("event_id") == "end":
                        done.set()
            except Exception:
                done.set()

        threading.Thread(target=reader, daemon=True).start()
        step = 4800 * 2
        for i in range(0, len(pcm), step):
            w.send(json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(pcm[i:i + step]).decode()}))
        w.send(json.dumps({"type": "input_audio_buffer.commit"}))
        w.send(json.dumps({"type": "sentinel", "event_id": "end"}))
        done.wait()
    return finals[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encdec", default=os.path.join(ROOT, "build", "encdec"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--every", type=float, default=5)
    ap.add_argument("--recording", default="talk")
    ap.add_argument("--max-growth-mb", type=float, default=16)
    ap.add_argument("--compute", default="f32", help="encdec's --compute")
    ap.add_argument("--server", action="store_true", help="over encdec serve's /v1/realtime")
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
        clock = [0.0]
        samples = []   # (stream seconds, RSS MB)
        procs = []     # the process sampled, once started

        def sample():
            while not procs:
                time.sleep(0.05)
            while procs[0].poll() is None:
                r = rss_mb(procs[0].pid)
                if r is not None:
                    samples.append((clock[0], r))
                time.sleep(1.0)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t0 = time.time()
        if a.server:
            finals = serve_stream(a, frames * reps, clock, procs)
            wall = time.time() - t0
            procs[0].terminate()
            rc = procs[0].wait()
            rc = 0 if rc in (0, -15) else rc
        else:
            cmd = [a.encdec, "stream", "--json", "-t", str(a.threads), "--compute", a.compute, path]
            if a.model:
                cmd[2:2] = ["-m", a.model]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            finals = 0
            for line in p.stdout:
                ev = json.loads(line)
                if ev.get("end") is not None:
                    clock[0] = max(clock[0], ev["end"])
                finals += ev.get("type") == "final"
            rc = p.wait()
            wall = time.time() - t0
        th.join()
    if rc != 0 or not samples:
        print(f"encdec {'serve' if a.server else 'stream'} failed (exit {rc})", file=sys.stderr)
        return 1
    print(f"{audio_s / 60:.1f} min of audio ({a.recording} x {reps}), "
          f"{'over the server' if a.server else 'encdec stream'}, {a.compute}, {finals} final "
          f"{'transcripts' if a.server else 'events'}, wall {wall:.0f} s, real-time factor "
          f"{wall / audio_s:.3f}, threads {a.threads}")
    # per interval of --every minutes of audio: the RSS at its end, its
    # median (where the process rests) and its most (a decode's transient
    # buffers come and go); growth: the last interval's median against the
    # second's (the first warms up)
    span = a.every * 60
    groups = {}
    last = max(0, int(audio_s // span) - 1)   # a short tail joins the last whole interval
    for t, r in samples:
        groups.setdefault(min(int(t // span), last), []).append(r)
    print("| audio (min) | RSS at the end (MB) | median (MB) | most (MB) |\n|---|---|---|---|")
    rows = []
    for k in sorted(groups):
        g = sorted(groups[k])
        rows.append(((k + 1) * a.every if k < last else audio_s / 60, groups[k][-1],
                     g[len(g) // 2], g[-1]))
    for m, end, med, most in rows:
        print(f"| {m:.1f} | {end:.1f} | {med:.1f} | {most:.1f} |")
    base = rows[1][2] if len(rows) > 2 else rows[0][2]
    growth = rows[-1][2] - base
    peak = max(r[3] for r in rows[1:]) if len(rows) > 1 else rows[0][3]
    print(f"median RSS {base:.1f} MB in the second interval, {rows[-1][2]:.1f} MB in the last "
          f"(growth {growth:+.1f} MB, limit {a.max_growth_mb:g}); the most after the first "
          f"{peak:.1f} MB")
    return 0 if growth <= a.max_growth_mb else 1


if __name__ == "__main__":
    sys.exit(main())
