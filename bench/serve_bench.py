"""encdec serve under concurrent load (the standard library only).

    python3 bench/serve_bench.py [-m MODEL_DIR] [-t THREADS] [--binary build/encdec]

Starts the server on loopback and measures, checking every answer first:
  1. throughput: 32 short clips of ../shared/audio sent one at a time, then
     by 16 concurrent clients: requests/s of each and their ratio;
  2. head-of-line blocking: the latency of a short clip (jfk.wav) alone, and
     while a 10-minute recording is being transcribed (median of 5 each).
Prints a table with the CPU's vector extensions.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
from load_test import wav_concat as wav_of   # noqa: E402  (the load test's recordings)
AUDIO = os.path.join(os.environ.get("ENCDEC_SHARED_DIR", os.path.join(ROOT, "..", "shared")), "audio")


def cpu_flags():
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "?"
    model = re.search(r"model name\s*:\s*(.*)", text)
    flags = sorted(set(re.findall(r"\b(avx512[a-z_0-9]*|amx[a-z_0-9]*|avx2|avx_vnni|fma|f16c)\b", text)))
    return "%s; %s" % (model.group(1).strip() if model else "?", " ".join(flags))


def post(url, data, name="a.wav"):
    boundary = uuid.uuid4().hex
    body = ('--%s\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'
            '--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n\r\n'
            % (boundary, boundary, name)).encode() + data + ("\r\n--%s--\r\n" % boundary).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=3600) as r:
        out = r.read()
    return out, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=os.path.expanduser("~/.cache/encdec/models/whisper-tiny.en"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "encdec"))
    a = ap.parse_args()
    p = subprocess.Popen([a.binary, "serve", "-m", a.model, "--port", "0", "-t", str(a.threads), "-q",
                          "--max-active", "16"], stdout=subprocess.PIPE, text=True)
    port = re.search(r"http://[^ :]+:(\d+)", p.stdout.readline()).group(1)
    url = "http://127.0.0.1:%s/v1/audio/transcriptions" % port
    try:
        files = [os.path.join(AUDIO, f) for f in ("jfk.wav", "platforms_en.wav")]
        files += sorted(os.path.join(AUDIO, "librivox", f) for f in os.listdir(os.path.join(AUDIO, "librivox"))
                        if f.endswith(".wav"))
        files.append(os.path.join(AUDIO, "librispeech", "1272-128104-0000.wav"))
        clips = [open(f, "rb").read() for f in files]
        want = {i: post(url, c)[0] for i, c in enumerate(clips)}   # warm-up and the answers
        plan = [i % len(clips) for i in range(32)]

        t0 = time.time()
        for i in plan:
            out, _ = post(url, clips[i])
            assert out == want[i], "an answer differs"
        seq = len(plan) / (time.time() - t0)

        nxt, lock = [0], threading.Lock()

        def client():
            while True:
                with lock:
                    k = nxt[0]
                    nxt[0] += 1
                if k >= len(plan):
                    return
                out, _ = post(url, clips[plan[k]])
                assert out == want[plan[k]], "an answer differs under load"

        t0 = time.time()
        th = [threading.Thread(target=client) for _ in range(16)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        conc = len(plan) / (time.time() - t0)

        jfk = clips[0]
        alone = statistics.median(post(url, jfk)[1] for _ in range(5))
        ten = wav_of(files, 600)
        done = {}
        long_t = threading.Thread(target=lambda: done.update(r=post(url, ten, "ten.wav")))
        t0 = time.time()
        long_t.start()
        time.sleep(2.0)
        during = []
        for _ in range(5):
            out, dt = post(url, jfk)
            assert out == want[0]
            during.append(dt)
        still = long_t.is_alive()
        long_t.join()
        long_s = time.time() - t0
        print("CPU: %s" % cpu_flags())
        print("model %s, %d threads" % (os.path.basename(a.model.rstrip("/")), a.threads))
        print("| measure | value |\n|---|---|")
        print("| 32 short clips one at a time | %.2f requests/s |" % seq)
        print("| the same from 16 concurrent clients | %.2f requests/s (%.2fx) |" % (conc, conc / seq))
        print("| jfk.wav alone (median of 5) | %.2f s |" % alone)
        print("| jfk.wav while a 10-minute recording is transcribed (median of 5) | %.2f s (%.1fx)%s |"
              % (statistics.median(during), statistics.median(during) / alone,
                 "" if still else " [the long one had finished]"))
        print("| the 10-minute recording, sharing with them | %.1f s |" % long_s)
    finally:
        p.terminate()
        p.wait(60)


if __name__ == "__main__":
    sys.exit(main())
