"""encdec serve under concurrent load (the standard library only).

    python3 bench/serve_bench.py [-m MODEL] [-t THREADS] [--binary build/encdec]
                                 [--whisper-server PATH] [--t5 DIR [--t5-tokens N]] [--t5-only]

Starts the server on loopback and measures, checking every answer first:
  1. throughput: 32 short clips of ../shared/audio sent one at a time, then
     by 16 concurrent clients: requests/s of each and their ratio;
  2. head-of-line blocking: the latency of a short clip (jfk.wav) alone
     (median of 5), and while a 10-minute recording is being transcribed
     (the median of the requests sent while it runs, at most 5: a server
     that serves one request at a time answers the first only after it).
  3. with --t5 DIR (a T5-family model), completions: 64 prompts (greedy,
     --t5-tokens new tokens) one at a time, then by 16 concurrent clients:
     requests/s of each, their ratio, and the encoder passes the engine ran
     for them (/metrics: several prompts packed into one pass).
With --whisper-server (whisper.cpp's examples/server binary, built from its
source beside this project; MODEL must then be a ggml-*.bin file, which both
servers load), the same measurements against it, same model file and
threads, greedy decoding on both (its default), its answers checked against
encdec's (the same words, case and punctuation aside, for most clips).
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


def post(url, data, name="a.wav", fields=None):
    boundary = uuid.uuid4().hex
    extra = "".join('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (boundary, k, v)
                    for k, v in (fields or {}).items())
    body = ('--%s\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n%s'
            '--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n\r\n'
            % (boundary, extra, boundary, name)).encode() + data + ("\r\n--%s--\r\n" % boundary).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "multipart/form-data; boundary=" + boundary})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=3600) as r:
        out = r.read()
    return out, time.time() - t0


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.decode("utf-8", "replace").lower()).split()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_encdec(a):
    p = subprocess.Popen([a.binary, "serve", "-m", a.model, "--port", "0", "-t", str(a.threads), "-q",
                          "--max-active", "16"], stdout=subprocess.PIPE, text=True)
    port = re.search(r"http://[^ :]+:(\d+)", p.stdout.readline()).group(1)
    return p, "http://127.0.0.1:%s/v1/audio/transcriptions" % port, {"response_format": "text"}


def start_whisper_server(a):
    port = free_port()
    p = subprocess.Popen([a.whisper_server, "-m", a.model, "-t", str(a.threads), "--port", str(port),
                          "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=1).read()
            break
        except Exception:
            time.sleep(0.1)
    return p, "http://127.0.0.1:%d/inference" % port, {"response_format": "text", "temperature": "0.0"}


def concurrently(n_clients, n_jobs, job):
    """job(0..n_jobs-1) from n_clients threads, each taking the next job as it
    finishes one; returns the seconds it took."""
    nxt, lock = [0], threading.Lock()

    def client():
        while True:
            with lock:
                k = nxt[0]
                nxt[0] += 1
            if k >= n_jobs:
                return
            job(k)

    t0 = time.time()
    th = [threading.Thread(target=client) for _ in range(n_clients)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return time.time() - t0


def measure(name, start, a, files, clips, reference=None):
    """The measurements against one server; returns its answers and rows."""
    p, url, fields = start(a)
    rows = []
    try:
        want = {i: post(url, c, fields=fields)[0] for i, c in enumerate(clips)}   # warm-up, answers
        tally = [0, 0]

        def check(i, out):
            """encdec: every answer is the one it gives alone (its outputs do not depend on
            what else it runs); the peer: most answers carry encdec's words (whisper.cpp's
            server reuses the previous request's text as context, so its own answers vary
            with the order of requests)."""
            if reference is None:
                assert out == want[i], "an answer differs under load"
                return
            tally[0] += words(out) == words(reference[i])
            tally[1] += 1

        for i in want:
            check(i, want[i])
        plan = [i % len(clips) for i in range(32)]

        t0 = time.time()
        for i in plan:
            out, _ = post(url, clips[i], fields=fields)
            check(i, out)
        seq = len(plan) / (time.time() - t0)

        def job(k):
            out, _ = post(url, clips[plan[k]], fields=fields)
            check(plan[k], out)

        conc = len(plan) / concurrently(16, len(plan), job)

        jfk = clips[0]
        alone = statistics.median(post(url, jfk, fields=fields)[1] for _ in range(5))
        ten = wav_of(files, 600)
        done = {}
        long_t = threading.Thread(target=lambda: done.update(r=post(url, ten, "ten.wav", fields)))
        t0 = time.time()
        long_t.start()
        time.sleep(2.0)
        during = []     # the latencies of requests sent while the long one runs
        for _ in range(5):
            if not long_t.is_alive():
                break
            out, dt = post(url, jfk, fields=fields)
            check(0, out)
            during.append(dt)
        long_t.join()
        long_s = time.time() - t0
        if reference is not None:   # correctness first: the peer hears what encdec hears
            print("%s: %d of %d answers carry encdec's words" % (name, tally[0], tally[1]))
            assert tally[0] * 2 > tally[1], "the peer's answers differ from encdec's"
        d = statistics.median(during)
        rows = [("32 short clips one at a time", "%.2f requests/s" % seq, seq),
                ("the same from 16 concurrent clients", "%.2f requests/s (%.2fx)" % (conc, conc / seq), conc),
                ("jfk.wav alone (median of 5)", "%.2f s" % alone, alone),
                ("jfk.wav while a 10-minute recording is transcribed (median of those sent "
                 "while it ran, at most 5)",
                 "%.2f s (%.1fx, %d sent)" % (d, d / alone, len(during)), d),
                ("the 10-minute recording, sharing with them", "%.1f s" % long_s, long_s)]
        return want, rows
    finally:
        p.terminate()
        p.wait(60)


T5_WORDS = ("the house is wonderful and the garden is green in the early summer while a cat sleeps "
            "under an old tree near the river where children play with a small red ball after school "
            "and their parents talk about the weather the news and the price of bread").split()


def t5_prompts(n):
    """n prompts of 6..40 words, the same every run."""
    out = []
    for i in range(n):
        k = 6 + (i * 7) % 35
        out.append("summarize: " + " ".join(T5_WORDS[(i * 5 + j) % len(T5_WORDS)] for j in range(k)))
    return out


def metric(url, name):
    text = urllib.request.urlopen(url + "/metrics", timeout=60).read().decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else 0.0


def measure_t5(a):
    """Completions on a T5-family model: one at a time, then 16 clients."""
    import json
    p = subprocess.Popen([a.binary, "serve", "-m", a.t5, "--port", "0", "-t", str(a.threads), "-q",
                          "--max-active", "16"], stdout=subprocess.PIPE, text=True)
    base = "http://127.0.0.1:%s" % re.search(r"http://[^ :]+:(\d+)", p.stdout.readline()).group(1)
    name = json.loads(urllib.request.urlopen(base + "/v1/models", timeout=60).read())["data"][0]["id"]

    def ask(prompt):
        body = json.dumps({"model": name, "prompt": prompt, "max_tokens": a.t5_tokens,
                           "temperature": 0}).encode()
        req = urllib.request.Request(base + "/v1/completions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=3600) as r:
            return json.loads(r.read())["choices"][0]["text"]

    try:
        prompts = t5_prompts(64)
        want = [ask(q) for q in prompts]       # warm-up; the answers alone
        t0 = time.time()
        for i, q in enumerate(prompts):
            assert ask(q) == want[i], "a completion differs from its first answer"
        seq = len(prompts) / (time.time() - t0)
        e0 = metric(base, "encdec_encoder_passes_total")
        bad = []

        def job(k):
            if ask(prompts[k]) != want[k]:
                bad.append(k)

        conc = len(prompts) / concurrently(16, len(prompts), job)
        passes = metric(base, "encdec_encoder_passes_total") - e0
        assert not bad, "completions differ under load: %s" % bad
        what = "%s, %d prompts, greedy, %d tokens" % (os.path.basename(a.t5.rstrip("/")), len(prompts),
                                                     a.t5_tokens)
        return [("T5 completions (%s), one at a time" % what, "%.1f requests/s" % seq, seq),
                ("the same from 16 concurrent clients (every answer as alone)",
                 "%.1f requests/s (%.2fx), %d encoder passes" % (conc, conc / seq, passes), conc)]
    finally:
        p.terminate()
        p.wait(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=os.path.expanduser("~/.cache/encdec/models/whisper-tiny.en"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "encdec"))
    ap.add_argument("--whisper-server", help="whisper.cpp's server binary: measure it too")
    ap.add_argument("--t5", help="a T5-family model directory: measure completions too")
    ap.add_argument("--t5-tokens", type=int, default=64)
    ap.add_argument("--t5-only", action="store_true", help="only the T5 measurements")
    a = ap.parse_args()
    if a.t5_only:
        print("CPU: %s" % cpu_flags())
        print("%d threads\n| measure | value |\n|---|---|" % a.threads)
        for name, text, _ in measure_t5(a):
            print("| %s | %s |" % (name, text))
        return
    files = [os.path.join(AUDIO, f) for f in ("jfk.wav", "platforms_en.wav")]
    files += sorted(os.path.join(AUDIO, "librivox", f) for f in os.listdir(os.path.join(AUDIO, "librivox"))
                    if f.endswith(".wav"))
    files.append(os.path.join(AUDIO, "librispeech", "1272-128104-0000.wav"))
    clips = [open(f, "rb").read() for f in files]
    want, ours = measure("encdec", start_encdec, a, files, clips)
    if a.t5:
        ours += measure_t5(a)
    peer = None
    if a.whisper_server:
        _, peer = measure("whisper.cpp", start_whisper_server, a, files, clips, reference=want)
    print("CPU: %s" % cpu_flags())
    print("model %s, %d threads" % (os.path.basename(a.model.rstrip("/")), a.threads))
    if not peer:
        print("| measure | value |\n|---|---|")
        for name, text, _ in ours:
            print("| %s | %s |" % (name, text))
        return
    print("| measure | encdec serve | whisper.cpp server | encdec / whisper.cpp |\n|---|---|---|---|")
    for (name, text, v), (_, ptext, pv) in zip(ours, peer):
        better = v / pv if "requests/s" in text else pv / v
        print("| %s | %s | %s | %.2fx |" % (name, text, ptext, better))


if __name__ == "__main__":
    sys.exit(main())
