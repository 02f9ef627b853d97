#!/usr/bin/env python3
"""Live sessions over the server's WebSocket (GET /v1/realtime, docs/LIVE.md):
N clients at once, each sending a recording at the pace it would be spoken
(PCM16 at 24 kHz in 100 ms messages, server VAD), beside file requests, on
one `encdec serve`. Run with .venv-client's Python (the websockets package):

    .venv-client/bin/python bench/realtime_sessions.py [--encdec build/encdec]
        [--model DIR] [--threads 2] [--compute f32] [--isa auto] [--sessions 1,8]
        [--recording talk]

For each N: every session's final-word latency (the wall-clock time a
word's delta arrived minus the word's end in the audio: the delta's
audio_start_ms / audio_end_ms, encdec's extension, with its words spread
evenly over that span, as bench/live_latency.py does), its utterance
latency (the wall-clock time its
`completed` event arrived minus its speech_stopped's audio_end_ms, the
stream's clock starting with the first sample sent; at least the 600 ms of
silence that ends an utterance), median and p90 over all sessions; whether
every session kept up with real time (its last transcript within 5 s of the
audio's end; the server reads ahead of its decodes by up to 2 MB and the
sockets hold more, so a minute of audio is sent on time even by a session
that falls far behind) and how long after the audio's end its last
transcript came; WER of each session's transcripts against
the reference (tests/data/longform-golden.json's recording, as
bench/live_latency.py builds it); a file request (jfk.wav, json) sent during
the sessions against the same request alone; the server's RSS at the end.
"""
import argparse
import audioop
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import wave
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)   # audioop
from websockets.sync.client import connect   # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from live_latency import SHARED, build, edits, pct, words   # noqa: E402


def session(port, pcm, out):
    """One client at speaking pace; out gets its events with arrival times."""
    rate, step = 24000, 4800   # 100 ms
    evs, t0 = [], None
    with connect("ws://127.0.0.1:%d/v1/realtime?intent=transcription" % port, max_size=None,
                 ping_timeout=None) as w:
        w.send(json.dumps({"type": "session.update", "session": {
            "type": "transcription", "audio": {"input": {
                "format": {"type": "audio/pcm", "rate": rate},
                "turn_detection": {"type": "server_vad", "silence_duration_ms": 600}}}}}))

        def reader():
            try:
                while True:
                    e = json.loads(w.recv())
                    evs.append((time.time(), e))
            except Exception:
                pass

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        t0 = time.time()
        for i in range(0, len(pcm), step * 2):
            due = t0 + i / 2 / rate
            if due > time.time():
                time.sleep(due - time.time())
            w.send(json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(pcm[i:i + step * 2]).decode()}))
        sent = time.time() - t0
        w.send(json.dumps({"type": "input_audio_buffer.commit"}))
        w.send(json.dumps({"type": "sentinel", "event_id": "end"}))
        while not any(e.get("type") == "error" and e["error"].get("event_id") == "end"
                      for _, e in evs):
            time.sleep(0.05)
    out.append({"t0": t0, "sent": sent, "events": evs, "seconds": len(pcm) / 2 / rate})


def file_request(url, path):
    with open(path, "rb") as f:
        body = f.read()
    b = "encdecbench"
    data = (f"--{b}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
            f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
            f"Content-Type: audio/wav\r\n\r\n").encode() + body + f"\r\n--{b}--\r\n".encode()
    req = urllib.request.Request(url + "/v1/audio/transcriptions", data=data,
                                 headers={"Content-Type": f"multipart/form-data; boundary={b}"})
    t = time.time()
    urllib.request.urlopen(req, timeout=600).read()
    return time.time() - t


def metrics(url):
    """The server's /metrics as {name: value} (unlabelled series)."""
    out = {}
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#") and "{" not in line:
                k, v = line.split()[:2]
                out[k] = float(v)
    return out


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def run(a, n, pcm, ref, jfk):
    cmd = [a.encdec, "serve", "--port", "0", "-t", str(a.threads), "-q", "--max-live", str(n),
           "--compute", a.compute, "--cross-kv", a.cross_kv, "--isa", a.isa]
    p = subprocess.Popen(cmd + (["-m", a.model] if a.model else []), stdout=subprocess.PIPE,
                         text=True)
    port = int(p.stdout.readline().strip().rsplit(":", 1)[1])
    url = "http://127.0.0.1:%d" % port
    try:
        alone = file_request(url, jfk)
        cpu0, m0 = cpu_s(p.pid), metrics(url)
        outs, ths = [], []
        for _ in range(n):
            ths.append(threading.Thread(target=session, args=(port, pcm, outs)))
            ths[-1].start()
            time.sleep(0.25)   # sessions a little apart, as clients are
        time.sleep(10)
        during = file_request(url, jfk)
        for t in ths:
            t.join()
        m = metrics(url)
        rss = m.get("encdec_resident_memory_bytes", float("nan")) / 2 ** 20
        cpu = cpu_s(p.pid)
    finally:
        p.terminate()
        p.wait()
    lat, wlat, behind, tails, wers = [], [], 0, [], []
    r = words(ref)
    for o in outs:
        stops = {}
        text = []
        last = 0
        for t, e in o["events"]:
            if e["type"] == "conversation.item.input_audio_transcription.delta" and \
                    "audio_end_ms" in e:   # each word's end, spread over the delta's span
                ws = words(e["delta"])
                s0, s1 = e["audio_start_ms"] / 1e3, e["audio_end_ms"] / 1e3
                wlat += [t - o["t0"] - (s0 + (s1 - s0) * (i + 1) / len(ws)) for i in range(len(ws))]
            if e["type"] == "input_audio_buffer.speech_stopped":
                stops[e["item_id"]] = e["audio_end_ms"] / 1e3
            if e["type"] == "conversation.item.input_audio_transcription.completed":
                text.append(e["transcript"])
                last = t - o["t0"]
                if e["item_id"] in stops and stops[e["item_id"]] < o["seconds"] - 0.7:
                    lat.append(t - o["t0"] - stops[e["item_id"]])
        behind += last - o["seconds"] > 5
        tails.append(last - o["seconds"])
        wers.append(100 * edits(words(" ".join(text)), r) / len(r))
        if a.texts:
            print(f"  session {len(wers)} ({wers[-1]:.2f}%): {' | '.join(text)}")
    print(f"{n} session(s), {a.threads} threads, {len(pcm) / 48000:.1f} s each:")
    print(f"  utterance latency (completed after its audio's end): median {pct(lat, 0.5):.2f} s, "
          f"p90 {pct(lat, 0.9):.2f} s over {len(lat)} utterances")
    if wlat:
        print(f"  final-word latency (a word's delta after its end in the audio): median "
              f"{pct(wlat, 0.5):.2f} s, p90 {pct(wlat, 0.9):.2f} s over {len(wlat)} words")
    print(f"  sessions behind real time: {behind} of {n}; last transcript {max(tails):.2f} s "
          f"after the audio's end at worst")
    print(f"  WER per session: median {statistics.median(wers):.2f}%, worst {max(wers):.2f}%")
    print(f"  a file request (jfk.wav): {alone:.2f} s alone, {during:.2f} s during the sessions")
    print(f"  server RSS at the end: {rss:.0f} MB")
    d = {k: m.get(k, 0) - m0.get(k, 0) for k in m}
    audio = n * len(pcm) / 48000
    steps = d.get("encdec_decode_steps_total", 0)
    print(f"  server CPU: {cpu - cpu0:.1f} s for {audio:.0f} s of audio ({(cpu - cpu0) / audio:.3f} s a second); "
          f"{d.get('encdec_encoder_passes_total', 0):.0f} encoder passes, {steps:.0f} decode steps, "
          f"{d.get('encdec_decoded_sequences_total', 0) / max(steps, 1):.2f} sequences a step")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encdec", default=os.path.join(os.path.dirname(HERE), "build", "encdec"))
    ap.add_argument("--model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compute", default="f32", help="encdec serve's --compute (f32, bf16, int8)")
    ap.add_argument("--cross-kv", default="f32", help="encdec serve's --cross-kv (f32, f16, bf16)")
    ap.add_argument("--isa", default="auto", help="encdec serve's --isa (auto, avx2, ...)")
    ap.add_argument("--sessions", default="1,8")
    ap.add_argument("--recording", default="talk")
    ap.add_argument("--texts", action="store_true", help="print each session's transcripts")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, a.recording + ".wav")
    ref = build(a.recording, path)
    with wave.open(path) as w:
        pcm, _ = audioop.ratecv(w.readframes(w.getnframes()), 2, 1, w.getframerate(), 24000, None)
    jfk = os.path.join(SHARED, "audio", "jfk.wav")
    for n in [int(x) for x in a.sessions.split(",")]:
        run(a, n, pcm, ref, jfk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
