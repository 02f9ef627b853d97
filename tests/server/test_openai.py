"""encdec serve against OpenAI's official Python client (tests/server/requirements.txt).

    test_openai.py ENCDEC_BINARY [--sanitized] [--threaded]

Starts servers on loopback (free ports) over whisper tiny.en, and whisper base
when installed, and checks through the client: every response format, segment
and word granularities, streaming, translations on the multilingual model,
models; vad_filter and vad_parameters; every error (unknown model, bad format, temperature, granularity,
undecodable audio, no file, malformed multipart, wrong method and path, upload
over the limit 413, a full queue 503 with Retry-After, the deadline 504), a
client that hangs up (its request is cancelled and counted 499), SIGTERM
draining what is in flight then exiting 0; whisper.cpp's /inference and /load
(another model swapped in while a request is in flight); last, two replicas behind Debian's
nginx (round-robin upstream, started here) pass the client checks too.
Exits 0, 1 on a failure, 77 when the client or the model is missing.
"""
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings

try:
    import openai
    from openai import OpenAI
except ImportError:
    print("skip: the openai client is not installed (scripts/venv-client.sh)")
    sys.exit(77)

from common import (AUDIO, HERE, JFK, Server, long_wav, model_dir, multipart, pieces_wav, timed,
                    vad_model)

warnings.filterwarnings("ignore", category=DeprecationWarning)   # the client marks translations
JFK_TEXT = "And so my fellow Americans ask not what your country can do for you ask what you can do for your country"
FAILED = []


def check(cond, what):
    if cond:
        print("  ok   " + what)
    else:
        print("  FAIL " + what)
        FAILED.append(what)


def raw_post(url, body, ctype, timeout=60):
    """(status, headers, body) of a POST with the given body."""
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def error_of(e):
    body = e.response.json()
    return e.status_code, body["error"]


def formats(s, label=""):
    """Every format and granularity, streaming, models: through the client."""
    c = s.client()
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f)
    check(r.text == JFK_TEXT, label + "json: the text")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="text")
    check(r.strip() == JFK_TEXT, label + "text")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="srt")
    check(r.startswith("1\n00:00:00,000 --> 00:00:0") and "\n\n2\n" in r, label + "srt")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="vtt")
    check(r.startswith("WEBVTT\n\n00:00.000 --> ") and "ask what you can do" in r, label + "vtt")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json")
    seg = r.segments[0] if r.segments else None
    check(r.language == "english" and abs(r.duration - 11.0) < 0.01 and r.text == JFK_TEXT,
          label + "verbose_json: language, duration, text")
    check(seg is not None and len(r.segments) == 2 and seg.id == 0 and seg.seek == 0
          and seg.start == 0.0 and 7.0 < seg.end < 8.5 and seg.text.startswith(" And so")
          and len(seg.tokens) > 10 and seg.temperature == 0.0 and seg.avg_logprob < 0
          and seg.compression_ratio > 1 and 0 <= seg.no_speech_prob < 0.1,
          label + "verbose_json: segments with OpenAI's fields")
    check(r.words is None, label + "verbose_json: no words unless asked")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                          timestamp_granularities=["word"])
    words = r.words or []
    check(len(words) == 22 and words[0].word == "And" and words[-1].word == "country"
          and all(w.start <= w.end for w in words)
          and all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))
          and r.segments is None, label + "word granularity: 22 words in order, no segments")
    with open(JFK, "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                          timestamp_granularities=["word", "segment"])
    check(len(r.words or []) == 22 and len(r.segments or []) == 2, label + "word and segment granularities")
    with open(JFK, "rb") as f:
        events = list(c.audio.transcriptions.create(model="whisper-1", file=f, stream=True))
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    check(len(events) == 3 and events[-1].type == "transcript.text.done"
          and events[-1].text == JFK_TEXT and "".join(deltas).strip() == JFK_TEXT,
          label + "stream: a delta per segment, then done")
    with open(os.path.join(AUDIO, "jfk.mp3"), "rb") as f:
        r = c.audio.transcriptions.create(model="whisper-1", file=f, prompt="Americans, country.",
                                          temperature=0.3)
    check("ask not what your country" in r.text, label + "mp3, prompt, temperature")
    ids = [m.id for m in c.models.list().data]
    check("whisper-1" in ids and len(ids) == 2, label + "models: the model and its alias")


def errors(s):
    c = s.client()
    t = s.url + "/v1/audio/transcriptions"

    def expect(fn, status, param, what, code=None):
        try:
            fn()
            check(False, what + ": no error")
        except openai.APIStatusError as e:
            st, err = error_of(e)
            check(st == status and err.get("param") == param and err["type"]
                  and err["message"] and (code is None or err.get("code") == code),
                  "%s: %d %s" % (what, st, err["message"][:70]))

    def tr(**kw):
        with open(JFK, "rb") as f:
            return c.audio.transcriptions.create(file=f, **{"model": "whisper-1", **kw})

    expect(lambda: tr(model="gpt-4o"), 404, "model", "unknown model", "model_not_found")
    expect(lambda: tr(response_format="xml"), 400, "response_format", "unknown response_format")
    expect(lambda: tr(temperature=1.5), 400, "temperature", "temperature out of range")
    expect(lambda: tr(timestamp_granularities=["word"]), 400, "timestamp_granularities",
           "granularities without verbose_json")
    expect(lambda: tr(language="xx"), 400, "language", "unknown language")
    expect(lambda: c.audio.translations.create(model="whisper-1", file=open(JFK, "rb")), 400,
           "model", "translation on an English-only model")
    expect(lambda: c.audio.transcriptions.create(model="whisper-1", file=("a.wav", b"RIFF junk")),
           400, "file", "undecodable audio", "invalid_audio")
    body, ct = multipart([("model", "whisper-1")])
    st, _, out = raw_post(t, body, ct)
    check(st == 400 and json.loads(out)["error"]["param"] == "file", "no file field: 400")
    body, ct = multipart([("model", "whisper-1"), ("file", ("a.wav", open(JFK, "rb").read()))])
    st, _, out = raw_post(t, body[: len(body) // 2], ct)
    check(st == 400 and "error" in json.loads(out), "a multipart body cut in half: 400")
    st, _, out = raw_post(t, b'{"model": "whisper-1"}', "application/json")
    check(st == 400 and "multipart" in json.loads(out)["error"]["message"], "JSON body: 400")
    st, _, out = raw_post(t, body, "multipart/form-data; boundary=other")
    check(st == 400, "a boundary that is not in the body: 400")
    st, _, out = raw_post(s.url + "/v1/nothing", body, ct)
    check(st == 404 and json.loads(out)["error"]["code"] == "not_found", "unknown path: 404")
    try:
        urllib.request.urlopen(t)
        check(False, "GET on transcriptions")
    except urllib.error.HTTPError as e:
        check(e.code == 405, "GET on transcriptions: 405")
    big = os.urandom(26 << 20)
    expect(lambda: c.audio.transcriptions.create(model="whisper-1", file=("big.wav", big)), 413,
           "file", "a 26 MB upload", "file_too_large")
    with urllib.request.urlopen(s.url + "/health") as r:
        check(r.status == 200 and json.loads(r.read())["status"] == "ok", "health")
    with open(JFK, "rb") as f:
        c.audio.transcriptions.create(model="whisper-1", file=f)
    time.sleep(1.05)   # the rate counts the last whole seconds
    m = s.metrics()
    check(m.get('encdec_requests_total{status="200"}', 0) >= 10 and m.get("encdec_tokens_per_second", 0) > 0
          and m.get("encdec_decode_steps_total", 0) > 0 and m.get("encdec_resident_memory_bytes", 0) > 1e7
          and m.get('encdec_step_batch_size_bucket{le="+Inf"}') == m.get("encdec_step_batch_size_count"),
          "metrics: requests, tokens/s, steps, batch histogram, RSS")


def whisper_cpp(s):
    """whisper.cpp server's clients: /inference with its fields and formats,
    no model field (the one served), the audio as the whole body
    (Content-Type audio/..., the fields in the query), and its fields'
    errors."""
    jfk = open(JFK, "rb").read()
    ask = "ask not what your country can do for you"

    def inference(fields, path="/inference"):
        body, ct = multipart(fields + [("file", ("jfk.wav", jfk))])
        return raw_post(s.url + path, body, ct)

    st, _, out = inference([("temperature", "0.0"), ("temperature_inc", "0.2"),
                            ("response_format", "json")])
    check(st == 200 and ask in json.loads(out)["text"], "/inference json, no model field")
    st, _, out = inference([("response_format", "text")])
    check(st == 200 and out.decode().strip().startswith("And so my fellow"), "/inference text")
    st, _, out = inference([("response_format", "srt"), ("offset_t", "2000"), ("duration", "4000")])
    cues = out.decode().split("\n\n")
    check(st == 200 and out.startswith(b"1\n00:00:02,000 --> ") and
          all(c.split("\n")[1] <= "00:00:06,000 --> 00:00:06,000" for c in cues if c.strip()),
          "/inference offset_t and duration: a clip of 2..6 s")
    st, _, out = inference([("response_format", "verbose_json"), ("no_timestamps", "true"),
                            ("beam_size", "2"), ("best_of", "2"), ("no_speech_thold", "0.5"),
                            ("logprob_thold", "-1.5"), ("language", "auto")])
    j = json.loads(out)
    check(st == 200 and len(j["segments"]) == 1 and j["language"] == "english",
          "/inference no_timestamps: one segment for the 30 s window")
    st, _, out = inference([("translate", "true")])
    check(st == 400 and json.loads(out)["error"]["param"] == "model",
          "/inference translate on an English-only model: 400")
    for field, value in [("beam_size", "2.5"), ("temperature_inc", "7"), ("translate", "maybe"),
                         ("offset_t", "-5")]:
        st, _, out = inference([(field, value)])
        check(st == 400 and json.loads(out)["error"]["param"] == field,
              "/inference %s=%s: 400 naming it" % (field, value))
    st, _, out = raw_post(s.url + "/v1/audio/transcriptions?response_format=text&language=en",
                          jfk, "audio/wav")
    check(st == 200 and ask in out.decode(), "raw audio/wav body, fields in the query")
    st, _, out = raw_post(s.url + "/inference", jfk, "application/octet-stream")
    check(st == 200 and ask in json.loads(out)["text"], "raw octet-stream body on /inference")
    for name, ctype in [("jfk6.m4a", "audio/mp4"), ("jfk6.webm", "audio/webm")]:   # FFmpeg's
        data = open(os.path.join(HERE, "..", "data", "av", name), "rb").read()
        st, _, out = raw_post(s.url + "/v1/audio/transcriptions?response_format=text", data, ctype)
        check(st == 200 and "my fellow Americans" in out.decode(), "a raw %s body" % name)
        body, ct = multipart([("file", (name, data))])
        st, _, out = raw_post(s.url + "/inference", body, ct)
        check(st == 200 and "my fellow Americans" in json.loads(out)["text"],
              "%s uploaded as a form's file" % name)
    st, _, out = raw_post(s.url + "/inference", b"", "audio/wav")
    check(st == 400 and json.loads(out)["error"]["param"] == "file", "an empty raw body: 400")
    st, _, out = raw_post(s.url + "/v1/audio/transcriptions?model=gpt-4o", jfk, "audio/wav")
    check(st == 404 and json.loads(out)["error"]["code"] == "model_not_found",
          "raw body naming an unknown model: 404")


def load(binary, tiny, sanitized):
    """whisper.cpp's POST /load: 403 without --allow-load; with it, another
    model in place of the served one while a long transcription runs (that
    one finishes on the old model, the same answer as alone; a request
    during the swap gets 503 model_loading; a second /load 409), then back;
    a path that is no model, an unknown name and a T5 model: 400, the served
    one unchanged."""
    jfk = open(JFK, "rb").read()
    rnd = os.path.join(HERE, "..", "data", "tiny-random-whisper")
    t5 = os.path.join(HERE, "..", "data", "tiny-random-t5-v1_0")

    def post_load(s, model):
        body, ct = multipart([("model", model)])
        return raw_post(s.url + "/load", body, ct, timeout=600)

    def text(s, data=jfk):
        st, _, out = raw_post(s.url + "/v1/audio/transcriptions?response_format=json", data,
                              "audio/wav", timeout=600)
        return st, json.loads(out).get("text") if st == 200 else json.loads(out)["error"]

    def served(s):
        with urllib.request.urlopen(s.url + "/v1/models", timeout=60) as r:
            return json.loads(r.read())["data"][0]["id"]

    s = Server(binary, tiny, "-q")
    try:
        st, _, out = post_load(s, rnd)
        check(st == 403 and json.loads(out)["error"]["code"] == "load_not_allowed",
              "/load without --allow-load: 403")
    finally:
        s.stop()
    # in flight while /load arrives: 44 s; 22 s under the sanitizers, where
    # its one window takes seconds and the two runs of it were half the part
    long = long_wav(2 if sanitized else 4)
    s = Server(binary, tiny, "-q", "--allow-load")
    try:
        st0, ask = text(s)
        st1, long_alone = text(s, long)
        check(st0 == 200 and "ask not what your country" in ask and st1 == 200,
              "tiny.en served before /load")
        res = {}
        th = threading.Thread(target=lambda: res.update(long=text(s, long), t_long=time.time()))
        th.start()
        time.sleep(0.3)
        th2 = threading.Thread(target=lambda: res.update(load=post_load(s, rnd), t_load=time.time()))
        th2.start()
        refused, second = None, None
        for _ in range(6000):   # until a request meets the swap
            st, err = text(s)
            if st == 503:
                refused = err
                second = post_load(s, tiny)
                break
            if not th2.is_alive():
                break
            time.sleep(0.01)
        th.join()
        th2.join()
        check(refused is not None and refused["code"] == "model_loading",
              "a request during the swap: 503 model_loading (%s)" % refused)
        check(second is not None and second[0] == 409, "a second /load meanwhile: 409")
        check(res["long"] == (200, long_alone), "the long request in flight: finished on the "
              "old model, the same text as alone")
        st, _, out = res["load"]
        check(st == 200 and json.loads(out) == {"status": "loaded", "model": "tiny-random-whisper"},
              "/load: 200 once the long request was done")
        check(served(s) == "tiny-random-whisper", "/v1/models names the new model")
        st, txt = text(s)
        check(st == 200 and txt != ask, "a transcription now runs on the new model")
        for bad, what in [("/nonexistent/model", "a path that is not there"),
                          (rnd + "/config.json", "a file that is no model"),
                          ("no-such-model-name", "an unknown name"), (t5, "a T5 model")]:
            st, _, out = post_load(s, bad)
            check(st == 400 and json.loads(out)["error"]["param"] == "model" and
                  served(s) == "tiny-random-whisper" and text(s) == (200, txt),
                  "/load %s: 400, the served model unchanged (%s)" % (what, out[:120]))
        st, _, out = post_load(s, tiny)
        check(st == 200 and text(s) == (200, ask) and served(s) == os.path.basename(tiny.rstrip("/")),
              "/load back to tiny.en: its answers again")
    finally:
        check(s.stop() == 0, "exit status 0 after /load")


def limits(binary, tiny, sanitized):
    """A full queue (503, Retry-After), the deadline (504), a client that
    hangs up (cancelled, 499), then SIGTERM: in-flight work finishes, exit 0."""
    long = long_wav(3 if sanitized else 6)   # in flight: seconds under the sanitizers
    s = Server(binary, tiny, "--max-queue", "1", "--max-active", "1")
    try:
        c = s.client()
        done = {}

        def slow():
            done["r"] = c.audio.transcriptions.create(model="whisper-1", file=("long.wav", long))

        th = threading.Thread(target=slow)
        th.start()
        while s.metrics().get("encdec_inflight_requests", 0) < 1:
            time.sleep(0.01)
        try:
            with open(JFK, "rb") as f:
                c.audio.transcriptions.create(model="whisper-1", file=f)
            check(False, "a full queue refuses")
        except openai.APIStatusError as e:
            check(e.status_code == 503 and e.response.headers.get("retry-after") == "1"
                  and error_of(e)[1]["code"] == "server_overloaded", "a full queue: 503 + Retry-After")
        # SIGTERM while the long one runs: it finishes, new connections are refused
        time.sleep(0.2)
        s.p.send_signal(signal.SIGTERM)
        th.join(300)
        check("r" in done and "ask not what your country" in done["r"].text,
              "SIGTERM: the request in flight finished")
        check(s.p.wait(60) == 0, "SIGTERM: exit status 0")
        check(any("finishing 1 requests in flight" in l for l in s.log), "SIGTERM: said so")
    finally:
        s.stop(signal.SIGKILL)

    s = Server(binary, tiny, "--timeout", "0.5")
    try:
        try:
            s.client().audio.transcriptions.create(model="whisper-1", file=("long.wav", long))
            check(False, "the deadline")
        except openai.APIStatusError as e:
            check(e.status_code == 504 and error_of(e)[1]["code"] == "timeout", "past the deadline: 504")
        check(s.metric_soon('encdec_requests_total{status="504"}', lambda v: v >= 1) == 1, "the 504 counted")
    finally:
        check(s.stop() == 0, "exit status 0")
    hang_up(binary, tiny)


def hang_up(binary, tiny):
    """A client that hangs up: its request is cancelled and its place freed
    long before the request could have finished (a server with no deadline:
    on a busy machine a deadline would race the hang-up). The bound is
    measured in this run: a quarter of the least time the recording's 44
    windows take alone, each at least what jfk.wav's one window takes (the
    median of three); cancelling takes at most one window's pass."""
    copies = 120   # 22 minutes, 42 MB
    long = long_wav(copies)
    s = Server(binary, tiny, "--max-upload-mb", "64")
    try:
        c = s.client()
        jfk_alone = []
        for _ in range(3):
            t0 = time.time()
            with open(JFK, "rb") as f:
                c.audio.transcriptions.create(model="whisper-1", file=f)
            jfk_alone.append(time.time() - t0)
        bound = 0.25 * math.ceil(copies * 11.0 / 30) * sorted(jfk_alone)[1]
        body, ct = multipart([("model", "whisper-1"), ("file", ("long.wav", long))])
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                      "Content-Length: %d\r\n\r\n" % (ct, len(body))).encode() + body)
        while s.metrics().get("encdec_active_requests", 0) < 1:
            time.sleep(0.01)
        t0 = time.time()
        sock.close()
        m = s.metrics()
        while (m.get("encdec_active_requests", 1) > 0 or m.get("encdec_inflight_requests", 1) > 0) \
                and time.time() - t0 < 600:
            time.sleep(0.02)
            m = s.metrics()
        took = time.time() - t0
        check(m.get("encdec_active_requests") == 0 and took < bound,
              "a client that hangs up: its request ends in %.2f s (bound %.2f s)" % (took, bound))
        check(m.get('encdec_requests_total{status="499"}') == 1, "counted as 499")
    finally:
        check(s.stop() == 0, "exit status 0")


def vad(binary, tiny):
    """vad_filter / vad_parameters: the words of a recording with gaps lie in
    the speech faster-whisper 1.2.1 finds in it (tests/data/vad-golden.json),
    options reach the VAD, bad ones are 400; a server without the model says so."""
    golden = json.load(open(os.path.join(HERE, "..", "data", "vad-golden.json")))
    rec = golden["recordings"]["speech_gaps"]
    spans = [sp for sp in rec["speech"] if not sp["options"]][0]["spans"]
    wav = pieces_wav(rec["pieces"])
    t = None
    s = Server(binary, tiny, "-q")
    try:
        t = s.url + "/v1/audio/transcriptions"

        def post(*fields):
            body, ct = multipart([("model", "whisper-1"), ("file", ("gaps.wav", wav)), *fields])
            st, _, out = raw_post(t, body, ct, timeout=300)
            return st, json.loads(out) if out.startswith(b"{") else out

        st, r = post(("vad_filter", "true"), ("response_format", "verbose_json"),
                     ("timestamp_granularities[]", "word"))
        words = r.get("words", []) if st == 200 else []
        inside = lambda x: any(a / 16000 - 0.05 <= x <= b / 16000 + 0.05 for a, b in spans)
        check(st == 200 and len(words) > 40 and "ask not what your country" in r["text"]
              and abs(r["duration"] - rec["n_samples"] / 16000) < 0.01
              and all(inside(w["start"]) and inside(w["end"]) for w in words),
              "vad_filter: %d words, every one in faster-whisper's speech spans" % len(words))
        st, r = post(("vad_filter", "true"), ("response_format", "verbose_json"),
                     ("vad_parameters", json.dumps({"min_speech_duration_ms": 60000})))
        check(st == 200 and r["text"] == "" and r["segments"] == [],
              "vad_parameters reach the VAD: no span of a minute, no text")
        st, r = post(("vad_filter", "false"), ("response_format", "json"))
        check(st == 200 and "ask not what your country" in r["text"], "vad_filter false")
        for fields, param, what in [
                ((("vad_filter", "maybe"),), "vad_filter", "vad_filter maybe"),
                ((("vad_filter", "true"), ("vad_parameters", "[1]")), "vad_parameters",
                 "vad_parameters a list"),
                ((("vad_filter", "true"), ("vad_parameters", "{\"threshold\": ")), "vad_parameters",
                 "vad_parameters cut short"),
                ((("vad_filter", "true"), ("vad_parameters", "{\"bogus\": 1}")), "vad_parameters",
                 "vad_parameters an unknown key"),
                ((("vad_filter", "true"), ("vad_parameters", "{\"threshold\": \"high\"}")),
                 "vad_parameters", "vad_parameters a string for a number"),
                ((("vad_filter", "true"), ("vad_parameters", "{\"threshold\": 2}")), None,
                 "vad_parameters threshold 2")]:
            st, r = post(*fields)
            check(st == 400 and r["error"]["param"] == param and r["error"]["message"],
                  "%s: %d %s" % (what, st, r["error"]["message"][:70] if st == 400 else r))
    finally:
        check(s.stop() == 0, "vad: exit status 0")
    with tempfile.TemporaryDirectory() as empty:
        env = {k: v for k, v in os.environ.items() if k != "ENCDEC_VAD"}
        env["XDG_CACHE_HOME"] = empty
        s = Server(binary, tiny, "-q", env=env)
        try:
            body, ct = multipart([("model", "whisper-1"), ("file", ("gaps.wav", wav)),
                                  ("vad_filter", "true")])
            st, _, out = raw_post(s.url + "/v1/audio/transcriptions", body, ct)
            err = json.loads(out)["error"]
            check(st == 400 and err["param"] == "vad_filter" and "--vad-model" in err["message"],
                  "no VAD model: 400 that says how to give one")
        finally:
            s.stop()


def multilingual(binary, base):
    s = Server(binary, base)
    try:
        c = s.client()
        with open(JFK, "rb") as f:
            r = c.audio.translations.create(model="whisper-1", file=f, response_format="verbose_json")
        check(r.language == "english" and "ask not what your country" in r.text.lower()
              and r.task == "translate", "base: translations (verbose_json, task translate)")
        with open(JFK, "rb") as f:
            r = c.audio.transcriptions.create(model="whisper-base", file=f, language="en",
                                              response_format="verbose_json")
        check(r.language == "english" and r.task == "transcribe" and "country" in r.text,
              "base: transcription with a language, by the model's own name")
        with open(JFK, "rb") as f:
            r = c.audio.translations.create(model="whisper-1", file=f, response_format="text")
        check("country" in r, "base: translations as text")
    finally:
        check(s.stop() == 0, "base: exit status 0")


NGINX_CONF = """
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
daemon off;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream encdec {{
        server 127.0.0.1:{a};
        server 127.0.0.1:{b};
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 26m;
        client_body_buffer_size 26m;
        location / {{
            proxy_pass http://encdec;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 900s;
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def behind_nginx(binary, tiny):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        check(False, "nginx: not installed (scripts/deps.sh installs nginx-light)")
        return
    a, b = Server(binary, tiny, "-q"), Server(binary, tiny, "-q")
    d = tempfile.mkdtemp(prefix="encdec-nginx-")
    os.chmod(d, 0o755)   # nginx's workers may run as another user
    port = free_port()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF.format(dir=d, a=a.port, b=b.port, port=port))
    ng = subprocess.Popen([nginx, "-c", os.path.join(d, "nginx.conf"), "-p", d],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.02)

        class Front:
            url = "http://127.0.0.1:%d" % port

            def client(self, **kw):
                return OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0, **kw)

        try:
            formats(Front(), "nginx: ")
        except Exception as e:
            check(False, "nginx: %r" % e)
            with open(os.path.join(d, "error.log")) as f:
                print(f.read()[-3000:])
        served = [x.metrics().get('encdec_requests_total{status="200"}', 0) for x in (a, b)]
        check(all(n >= 3 for n in served), "nginx: both replicas served (%d, %d)" % tuple(served))
    finally:
        ng.terminate()
        ng.wait(30)
        check(a.stop() == 0 and b.stop() == 0, "nginx: replicas exit 0")
        shutil.rmtree(d, ignore_errors=True)


def start_errors(binary, tiny):
    """Bad options, a busy port, a T5 model: the server says why and exits non-zero."""
    def run(*args):
        r = subprocess.run([binary, "serve", *args], capture_output=True, text=True, timeout=60)
        return r.returncode, r.stderr

    rc, err = run("-m", tiny, "--host", "nowhere")
    check(rc == 1 and "not an IPv4 or IPv6 address" in err, "start: a bad --host")
    rc, err = run("-m", tiny, "--port", "99999")
    check(rc == 2 and "--port" in err, "start: a port out of range")
    rc, err = run("-m", tiny, "--max-upload-mb", "0")
    check(rc == 2 and "--max-upload-mb" in err, "start: an upload limit of 0")
    rc, err = run("-m", tiny, "--keepalive", "0")
    check(rc == 2 and "--keepalive" in err, "start: a keep-alive interval of 0")
    rc, err = run("-m", tiny, "--vad-model", "/nonexistent")
    check(rc == 1 and "/nonexistent" in err, "start: a VAD model that is not there")
    rc, err = run("-m", tiny, "--bogus")
    check(rc == 2 and "unknown option --bogus" in err, "start: an unknown option")
    s = Server(binary, tiny, "-q")
    try:
        rc, err = run("-m", tiny, "--port", str(s.port))
        check(rc == 1 and "Address already in use" in err, "start: a port in use")
    finally:
        s.stop()


def cut(text, stop):
    """OpenAI's stop: the text before the first place a stop sequence begins."""
    at = min([text.index(x) for x in stop if x in text], default=len(text))
    return text[:at], at < len(text)


def stops(c, name, prompts, want, beams):
    """stop sequences: each choice is the same request's text without them,
    cut where the first begins (finish_reason "stop"), greedy, sampled,
    beams, streamed or not; a stop sequence across tokens is held back while
    it may still come, and one that never completes goes out at the end."""
    first = want[0]
    mid = first[len(first) // 3:len(first) // 3 + 3]   # a piece of the greedy text
    # one across two tokens: the end of one token's text and the start of the next's
    pieces = [ch.choices[0].text for ch in c.completions.create(model=name, prompt=prompts[0], max_tokens=8,
                                                                 temperature=0, stream=True)]
    pieces = [x for x in pieces if x]
    across = pieces[1][-1:] + pieces[2][:1]
    for stop in ([mid], [mid, "zzz-never"], ["zzz-never"], [first[-2:]], [across]):
        r = c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0, stop=stop)
        got = [(ch.text, ch.finish_reason) for ch in r.choices]
        exp = [(cut(t, stop)[0], "stop" if cut(t, stop)[1] else "length") for t in want]
        check(got == exp, "completions: stop %r: %r (want %r)" % (stop, got, exp))
        texts, ends, late = ["", ""], [None, None], 0
        for ch in c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0, stop=stop,
                                       stream=True):
            x = ch.choices[0]
            late += ends[x.index] is not None     # a chunk after its choice's end
            texts[x.index] += x.text
            ends[x.index] = x.finish_reason
        check(list(zip(texts, ends)) == exp and not late,
              "completions: stop %r, stream: %r" % (stop, list(zip(texts, ends))))
    plain = c.completions.create(model=name, prompt=prompts[1], max_tokens=8, temperature=0.8, n=3, seed=11)
    stop = [plain.choices[0].text[2:4] or "x"]
    r = c.completions.create(model=name, prompt=prompts[1], max_tokens=8, temperature=0.8, n=3, seed=11,
                             stop=stop)
    check([ch.text for ch in r.choices] == [cut(ch.text, stop)[0] for ch in plain.choices],
          "completions: stop with samples, each cut as its own")
    stop = [beams[0].text[1:3] or "x"]
    r = c.completions.create(model=name, prompt=prompts[1], max_tokens=8, best_of=4, n=2, temperature=0,
                             stop=stop)
    check([ch.text for ch in r.choices] == [cut(ch.text, stop)[0] for ch in beams]
          and r.choices[0].finish_reason == "stop", "completions: stop with beams: each cut")


def completions(binary):
    """A T5 model (the seeded random T5 v1.1 of tests/data): /v1/completions
    through the client; greedy as `encdec generate` decodes it (the session
    test_t5_golden pins against transformers), sampling reproducible by seed,
    best_of as beam search, streaming, the errors."""
    t5 = os.path.join(HERE, "..", "data", "tiny-random-t5-v1_1")
    name = "tiny-random-t5-v1_1"
    prompts = ["translate English to German: The house is wonderful.", "summarize: a dog is good"]
    want = []
    for p in prompts:
        r = subprocess.run([binary, "generate", "-m", t5, "--max-new-tokens", "8", p],
                           capture_output=True, text=True, timeout=60)
        want.append(r.stdout.strip())
    s = Server(binary, t5)
    try:
        c = s.client()
        r = c.completions.create(model=name, prompt=prompts[0], max_tokens=8, temperature=0)
        check(r.choices[0].text == want[0] and r.object == "text_completion"
              and r.usage.completion_tokens == 8 and r.usage.prompt_tokens > 5,
              "completions: greedy = encdec generate (%r)" % r.choices[0].text)
        r = c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0)
        check([ch.text for ch in r.choices] == want and [ch.index for ch in r.choices] == [0, 1],
              "completions: a list of prompts, in order")
        a = c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0.8, n=3, seed=5)
        b = c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0.8, n=3, seed=5)
        check(len(a.choices) == 6 and [x.text for x in a.choices] == [x.text for x in b.choices],
              "completions: n samples per prompt, the same for the same seed")
        r = c.completions.create(model=name, prompt=prompts[1], max_tokens=8, best_of=4, n=2,
                                 temperature=0)
        check(len(r.choices) == 2 and r.choices[0].text != r.choices[1].text,
              "completions: best_of as beam search, the n best")
        chunks = list(c.completions.create(model=name, prompt=prompts, max_tokens=8, temperature=0,
                                           stream=True))
        texts, ends, late = ["", ""], [None, None], 0
        for ch in chunks:
            x = ch.choices[0]
            late += ends[x.index] is not None     # a chunk after its choice's finish_reason
            texts[x.index] += x.text
            ends[x.index] = x.finish_reason
        check(texts == want and ends == ["length", "length"] and len(chunks) >= 8 and not late
              and len({ch.id for ch in chunks}) == 1,
              "completions: stream, token by token (%d chunks for 2 x 8 tokens), then each "
              "choice's finish_reason" % len(chunks))
        one = c.completions.create(model=name, prompt=prompts[1], max_tokens=8, temperature=0.8, n=2,
                                   seed=7)
        texts = ["", ""]
        for ch in c.completions.create(model=name, prompt=prompts[1], max_tokens=8, temperature=0.8,
                                       n=2, seed=7, stream=True):
            texts[ch.choices[0].index] += ch.choices[0].text
        check(texts == [x.text for x in one.choices], "completions: stream, samples token by token")
        beams = [ch.choices[0] for ch in c.completions.create(
            model=name, prompt=prompts[1], max_tokens=8, best_of=4, n=2, temperature=0, stream=True)]
        check([x.text for x in beams] == [x.text for x in r.choices]
              and all(x.finish_reason for x in beams),
              "completions: stream with best_of (beams): each choice whole, once final")

        stops(c, name, prompts, want, r.choices)

        def expect(fn, status, param, what):
            try:
                fn()
                check(False, what + ": no error")
            except openai.APIStatusError as e:
                st, err = error_of(e)
                check(st == status and err.get("param") == param, "%s: %d %s" % (what, st, err["message"][:60]))

        expect(lambda: c.completions.create(model="gpt-3.5-turbo-instruct", prompt="x"), 404, "model",
               "completions: unknown model")
        expect(lambda: c.completions.create(model=name, prompt="x", stop=["a", "b", "c", "d", "e"]), 400, "stop",
               "completions: 5 stop sequences")
        expect(lambda: c.completions.create(model=name, prompt="x", stop=""), 400, "stop",
               "completions: an empty stop sequence")
        st, _, out = raw_post(s.url + "/v1/completions", b'{"model":"%s","prompt":"x","stop":3}' % name.encode(),
                              "application/json")
        check(st == 400 and json.loads(out)["error"]["param"] == "stop", "completions: stop a number")
        expect(lambda: c.completions.create(model=name, prompt="x", max_tokens=0), 400, "max_tokens",
               "completions: max_tokens 0")
        expect(lambda: c.completions.create(model=name, prompt="x", n=40), 400, "n", "completions: n 40")
        expect(lambda: c.completions.create(model=name, prompt="x", temperature=3), 400, "temperature",
               "completions: temperature 3")
        expect(lambda: c.completions.create(model=name, prompt=""), 400, "prompt", "completions: empty prompt")
        st, _, out = raw_post(s.url + "/v1/completions", b"{not json", "application/json")
        check(st == 400 and "JSON" in json.loads(out)["error"]["message"], "completions: malformed JSON")
        expect(lambda: c.audio.transcriptions.create(model=name, file=open(JFK, "rb")), 404, "model",
               "a T5 model: no audio endpoints")
    finally:
        check(s.stop() == 0, "completions: exit status 0")


def completions_bart(binary):
    """A BART-family model (the seeded random Marian of tests/data, with its
    tokenizer): /v1/completions greedy as transformers' generate() and
    MarianTokenizer give it (tests/data/bart-golden/marian.json), best_of as
    `encdec generate --beam` (whose beams test_bart_golden pins)."""
    d = os.path.join(HERE, "..", "data", "tiny-random-marian")
    gold = json.load(open(os.path.join(HERE, "..", "data", "bart-golden", "marian.json"), encoding="utf-8"))
    api, n = gold["api"], gold["max_new_tokens"]
    s = Server(binary, d)
    try:
        c = s.client()
        r = c.completions.create(model="tiny-random-marian", prompt=api["inputs"], max_tokens=n,
                                 temperature=0)
        check([ch.text for ch in r.choices] == api["greedy"]["text"],
              "completions, Marian: greedy as transformers")
        want = subprocess.run([binary, "generate", "-m", d, "--max-new-tokens", str(n), "--beam", "4",
                               "--num-return", "2", api["inputs"][0]],
                              capture_output=True, text=True, timeout=60).stdout.splitlines()
        r = c.completions.create(model="tiny-random-marian", prompt=api["inputs"][0], max_tokens=n,
                                 best_of=4, n=2, temperature=0)
        check([ch.text for ch in r.choices] == want and len(want) == 2,
              "completions, Marian: best_of 4 as encdec generate --beam 4 (%r)" % want)
    finally:
        check(s.stop() == 0, "completions, Marian: exit status 0")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary, sanitized = sys.argv[1], "--sanitized" in sys.argv
    # --threaded (ThreadSanitizer's pass): the parts where requests, /load,
    # signals and hang-ups meet on the server's threads; the single requests
    # of the other parts are the release and AddressSanitizer passes'
    threaded = "--threaded" in sys.argv
    tiny = model_dir("ENCDEC_TINY_EN", "whisper-tiny.en")
    if not tiny or not os.path.exists(JFK):
        print("skip: needs whisper tiny.en and ../shared/audio")
        return 77
    print("openai", openai.__version__)
    if threaded:
        timed(load, binary, tiny, sanitized)
        timed(limits, binary, tiny, sanitized)
        print("%d failed" % len(FAILED))
        return 1 if FAILED else 0
    s = Server(binary, tiny)
    try:
        timed(formats, s)
        timed(errors, s)
        timed(whisper_cpp, s)
    finally:
        check(s.stop() == 0, "exit status 0")
    timed(start_errors, binary, tiny)
    timed(load, binary, tiny, sanitized)
    timed(completions, binary)
    timed(completions_bart, binary)
    if vad_model():
        timed(vad, binary, tiny)
    else:
        print("  (the Silero VAD is not installed: vad_filter not checked)")
    timed(limits, binary, tiny, sanitized)
    base = model_dir("ENCDEC_BASE", "whisper-base")
    if base:
        timed(multilingual, binary, base)
    else:
        print("  (whisper base not installed: translations not checked)")
    if not sanitized:
        timed(behind_nginx, binary, tiny)
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
