"""A load test of encdec serve on loopback (the standard library only).

    load_test.py ENCDEC_BINARY [--requests N] [--clients C] [--long K] [--long-seconds S]
                 [--t5 T] [--rss-mb MB]

Starts the server over whisper tiny.en, runs every kind of request once alone
(the references), then N requests from C concurrent clients (default 1000 and
64): short clips of ../shared/audio with several parameter sets (greedy,
words, beam 5, sampling, no timestamps, text and srt formats) and K
recordings of S seconds (default 120: four windows); and T of them (default 100) T5 completions (greedy,
sampling with n, best_of, a list of prompts, a list streamed token by
token) to a second server over the
seeded random T5 of tests/data, at the same time. Checks: no request fails,
every answer is the same as the same request's alone (transcripts: the same
bytes, verbose_json's tokens, times, words; completions: all but id and
time; streamed: each choice's text and finish_reason), no head-of-line
blocking (a short clip sent while a long recording is transcribed is
answered first), the servers' peak RSS together stays under MB (default
1024), and both exit 0 on SIGTERM. Nothing is timed against a clock: what
it asserts holds on a busy machine as on a quiet one.
Prints p50 / p90 / p99 latency per kind and the throughput.

The suite runs a short version (CMakeLists.txt: 40 requests, 8 clients,
1 long, 8 T5, besides the head-of-line one; about a minute and a half on 2 busy cores); the defaults are the long
one, a benchmark of the server under load (docs/BENCHMARKS.md).
"""
import io
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
import wave

from common import AUDIO, HERE, model_dir


def wav_concat(paths, seconds):
    """The files one after the other, repeated to `seconds` (16 kHz mono s16)."""
    frames, params = [], None
    for p in paths:
        with wave.open(p, "rb") as w:
            if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
                continue
            params = w.getparams()
            frames.append(w.readframes(w.getnframes()))
    out, total = io.BytesIO(), 0
    with wave.open(out, "wb") as w:
        w.setparams(params)
        while total < seconds * 16000:
            for f in frames:
                w.writeframes(f)
                total += len(f) // 2
    return out.getvalue()


def body_of(fields, data, name):
    boundary = uuid.uuid4().hex
    b = io.BytesIO()
    for k, v in fields:
        b.write(('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (boundary, k, v)).encode())
    b.write(('--%s\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n'
             "Content-Type: application/octet-stream\r\n\r\n" % (boundary, name)).encode())
    b.write(data)
    b.write(("\r\n--%s--\r\n" % boundary).encode())
    return b.getvalue(), "multipart/form-data; boundary=" + boundary


def post(url, fields, data, name):
    if fields is None:   # a completion: data is the JSON body
        body, ct = data, "application/json"
    else:
        body, ct = body_of(fields, data, name)
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ct})
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=1200) as r:
            return r.status, r.read(), time.time() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read(), time.time() - t0
    except Exception as e:   # connection refused, reset
        return -1, repr(e).encode(), time.time() - t0


def start_server(binary, model):
    """(process, port) of `encdec serve` over model on a free port, or (None, 0)."""
    p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "-t", "2", "-q",
                          "--max-active", "16", "--max-queue", "256"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"http://[^ :]+:(\d+)", p.stdout.readline())
    if not m:
        print("the server over %s did not start:" % model, p.stderr.read())
        p.kill()
        return None, 0
    return p, int(m.group(1))


def strip_ids(body):
    """A completion without what differs by design between two answers (id,
    created); a streamed one as each choice's text joined and its
    finish_reason (how its chunks interleave depends on the timing)."""
    if body.startswith(b"data: "):
        events = [e[6:] for e in body.decode().split("\n\n") if e.startswith("data: ")]
        if not events or events[-1] != "[DONE]":
            return "no [DONE] at the end"
        texts, ends, late = {}, {}, 0
        for e in events[:-1]:
            c = json.loads(e)["choices"][0]
            late += c["index"] in ends and ends[c["index"]] is not None
            texts[c["index"]] = texts.get(c["index"], "") + c["text"]
            ends[c["index"]] = c["finish_reason"]
        return texts, ends, late
    j = json.loads(body)
    j.pop("id", None)
    j.pop("created", None)
    return j


def metric(port, name):
    """The value of one line of the server's /metrics (0 when absent)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def peak_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else float("nan")


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    binary = args[0]
    opt = {"--requests": 1000, "--clients": 64, "--long": 8, "--long-seconds": 120, "--t5": 100,
           "--rss-mb": 1024}
    for i, a in enumerate(args):
        if a in opt:
            opt[a] = int(args[i + 1])
    tiny = model_dir()
    jfk = os.path.join(AUDIO, "jfk.wav")
    if not tiny or not os.path.exists(jfk):
        print("skip: needs whisper tiny.en and ../shared/audio")
        return 77
    clips = {os.path.basename(p): open(p, "rb").read() for p in
             [jfk, os.path.join(AUDIO, "platforms_en.wav"), os.path.join(AUDIO, "jfk.mp3"),
              os.path.join(AUDIO, "librispeech", "1272-128104-0000.wav")] +
             sorted(os.path.join(AUDIO, "librivox", f) for f in os.listdir(os.path.join(AUDIO, "librivox"))
                    if f.endswith(".wav"))}
    lv = sorted(os.path.join(AUDIO, "librivox", f) for f in os.listdir(os.path.join(AUDIO, "librivox"))
                if f.endswith(".wav"))
    long_wav = wav_concat([jfk] + lv, opt["--long-seconds"])
    V = [("model", "whisper-1"), ("response_format", "verbose_json")]
    kinds = []   # (label, fields, data, name)
    for name, data in clips.items():
        kinds.append(("short", V, data, name))
    kinds += [
        ("short-words", V + [("timestamp_granularities[]", "word"), ("timestamp_granularities[]", "segment")],
         clips["jfk.wav"], "jfk.wav"),
        ("short-sample", V + [("temperature", "0.4")], clips["platforms_en.wav"], "p.wav"),
        ("short-text", [("model", "whisper-1"), ("response_format", "text")], clips["jfk.mp3"], "j.mp3"),
        ("short-srt", [("model", "whisper-1"), ("response_format", "srt")],
         clips["1272-128104-0000.wav"], "l.wav"),
    ]
    long_kind = ("long", V, long_wav, "long.wav")
    kinds.append(long_kind)
    t5_dir = os.path.join(HERE, "..", "data", "tiny-random-t5-v1_1")
    t5_kinds = []   # (label, None, json body, "t5")
    for i, (prompt, extra) in enumerate([
            ("translate English to German: The house is wonderful.", {"temperature": 0}),
            ("summarize: studies have shown that owning a dog is good for you", {"temperature": 0.7, "n": 3, "seed": 4}),
            ("question: what is the capital of France?", {"best_of": 4, "n": 2}),
            (["a list of prompts", "the second one"], {"temperature": 0}),
            (["streamed token by token", "and sampled"], {"temperature": 0.9, "n": 2, "seed": 9,
                                                           "stream": True})]):
        body = dict({"model": "tiny-random-t5-v1_1", "prompt": prompt, "max_tokens": 24}, **extra)
        t5_kinds.append(("t5", None, json.dumps(body).encode(), "t5"))

    p, port = start_server(binary, tiny)
    if not p:
        return 1
    url = "http://127.0.0.1:%d/v1/audio/transcriptions" % port
    p5, port5 = start_server(binary, t5_dir)
    if not p5:
        p.terminate()
        return 1
    url5 = "http://127.0.0.1:%d/v1/completions" % port5

    def target(k):
        return url5 if k[1] is None else url

    failures = []
    try:
        ref, alone = {}, {}
        for k in kinds + t5_kinds:
            st, out, dt = post(target(k), k[1], k[2], k[3])
            if st != 200:
                failures.append("reference %s %s: %d %s" % (k[0], k[3], st, out[:200]))
            ref[id(k)] = out
            alone.setdefault(k[0], []).append(dt)
        # no head-of-line blocking: a short clip sent while a long
        # recording is being transcribed is answered before that one (an
        # order of events, which a busy machine does not change: the long
        # one takes many times the short one's time alone)
        hol = {}

        def long_one():
            st, out, dt = post(url, long_kind[1], long_kind[2], long_kind[3])
            hol["long"] = (st if out == ref[id(long_kind)] else -2, time.time())

        th = threading.Thread(target=long_one)
        th.start()
        t_wait = time.time()
        while metric(port, "encdec_active_requests") < 1 and th.is_alive() and time.time() - t_wait < 600:
            time.sleep(0.01)
        short = kinds[0]
        st, out, dt = post(url, short[1], short[2], short[3])
        hol["short"] = (st if out == ref[id(short)] else -2, time.time())
        th.join()
        if hol["short"][0] != 200 or hol["long"][0] != 200:
            failures.append("head-of-line phase: status %d and %d (-2: not the answer alone)"
                            % (hol["short"][0], hol["long"][0]))
        elif hol["short"][1] >= hol["long"][1]:
            failures.append("head-of-line blocking: the short clip (%s) was answered after the %d s "
                            "recording that started before it" % (short[3], opt["--long-seconds"]))
        else:
            print("head of line: %s answered in %.2f s while a %d s recording ran (%.2f s alone; "
                  "the recording ended %.2f s later)" % (short[3], dt, opt["--long-seconds"],
                                                          pct(alone[short[0]], 50),
                                                          hol["long"][1] - hol["short"][1]))
        rng = random.Random(1)
        n, n_long = opt["--requests"], min(opt["--long"], opt["--requests"])
        n_t5 = min(opt["--t5"], n - n_long)
        plan = [long_kind] * n_long + [rng.choice(t5_kinds) for _ in range(n_t5)] + \
            [rng.choice(kinds[:-1]) for _ in range(n - n_long - n_t5)]
        rng.shuffle(plan)
        lat, lock, nxt = {}, threading.Lock(), [0]

        def client():
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(plan):
                    return
                k = plan[i]
                st, out, dt = post(target(k), k[1], k[2], k[3])
                with lock:
                    lat.setdefault(k[0], []).append(dt)
                    if st != 200:
                        failures.append("request %d (%s %s): %d %s" % (i, k[0], k[3], st, out[:200]))
                    elif k[1] is None and strip_ids(out) != strip_ids(ref[id(k)]):
                        failures.append("request %d (%s): differs from the same request alone" % (i, k[0]))
                    elif k[1] is not None and out != ref[id(k)]:
                        failures.append("request %d (%s %s): differs from the same request alone"
                                        % (i, k[0], k[3]))

        t0 = time.time()
        ths = [threading.Thread(target=client) for _ in range(opt["--clients"])]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        wall = time.time() - t0
        rss = peak_rss_mb(p.pid) + peak_rss_mb(p5.pid)
        print("%d requests (%d long, %d T5) from %d clients in %.1f s: %.2f requests/s; "
              "peak RSS %.0f MB (both servers)" % (n, n_long, n_t5, opt["--clients"], wall, n / wall, rss))
        print("%-14s %6s %8s %8s %8s %8s" % ("kind", "count", "alone", "p50", "p90", "p99"))
        for kname in sorted(lat):
            xs = lat[kname]
            print("%-14s %6d %7.2fs %7.2fs %7.2fs %7.2fs" % (kname, len(xs), pct(alone[kname], 50),
                                                       pct(xs, 50), pct(xs, 90), pct(xs, 99)))
        allx = [x for xs in lat.values() for x in xs]
        print("%-14s %6d %8s %7.2fs %7.2fs %7.2fs" % ("all", len(allx), "", pct(allx, 50),
                                                   pct(allx, 90), pct(allx, 99)))
        if rss > opt["--rss-mb"]:
            failures.append("peak RSS %.0f MB over the bound of %d MB" % (rss, opt["--rss-mb"]))
    finally:
        for proc in (p, p5):
            if proc.poll() is None:
                proc.terminate()
            rc = proc.wait(120)
            if rc != 0:
                failures.append("exit status %d on SIGTERM: %s" % (rc, proc.stderr.read()[-2000:]))
    for f in failures[:20]:
        print("FAIL", f)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
