"""What the server tests share (the standard library only; OpenAI's client
is imported when a test asks for one): where the audio and the models are,
a server on a free port, recordings and multipart bodies."""
import array
import io
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("ENCDEC_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "shared"))
AUDIO = os.path.join(SHARED, "audio")
JFK = os.path.join(AUDIO, "jfk.wav")



def timed(fn, *args):
    """fn(*args), then its wall time on a line of its own (where a long
    test's minutes go)."""
    t0 = time.monotonic()
    try:
        return fn(*args)
    finally:
        print("  [%s: %.1f s]" % (fn.__name__, time.monotonic() - t0), flush=True)

def model_dir(env="ENCDEC_TINY_EN", name="whisper-tiny.en"):
    """An installed model: $env, else the cache's; None when absent."""
    d = os.environ.get(env)
    if d:
        return d
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    d = os.path.join(cache, "encdec", "models", name)
    return d if os.path.isdir(d) else None


class Server:
    """encdec serve on a free port; .url, .port, .log (its standard error),
    .stop(sig) -> exit status."""

    def __init__(self, binary, model, *args, env=None):
        self.p = subprocess.Popen([binary, "serve", "-m", model, "--port", "0", "-t", "2", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)
        line = self.p.stdout.readline()
        m = re.search(r"http://([^ :]+):(\d+)", line)
        if not m:
            err = self.p.stderr.read()
            raise RuntimeError("the server did not start: " + line + err)
        self.port = int(m.group(2))
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.p.stderr:
            self.log.append(line)

    def client(self, **kw):
        from openai import OpenAI
        return OpenAI(base_url=self.url + "/v1", api_key="unused", max_retries=0, **kw)

    def metrics(self):
        with urllib.request.urlopen(self.url + "/metrics", timeout=60) as r:
            out = {}
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#"):
                    k, v = line.rsplit(" ", 1)
                    out[k] = float(v)
            return out

    def metric_soon(self, name, ok, within=10.0):
        """A counter the server updates once the answer is written: the
        client may read the answer first, so it is polled for a while."""
        t0 = time.time()
        while True:
            v = self.metrics().get(name, 0)
            if ok(v) or time.time() - t0 > within:
                return v
            time.sleep(0.05)

    def proc_status(self, key):
        """A field of /proc/PID/status (VmRSS in kB, Threads, ...)."""
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self, sig=signal.SIGTERM, timeout=120):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return -1


def long_wav(repeats):
    """jfk.wav repeated: a recording of several windows, as bytes."""
    with wave.open(JFK, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setparams(params)
        for _ in range(repeats):
            w.writeframes(frames)
    return out.getvalue()


def vad_model():
    """The Silero VAD's directory (scripts/fetch-model.sh vad); None when absent."""
    return model_dir("ENCDEC_VAD", "silero-vad-v6")


def pieces_wav(pieces):
    """A 16 kHz recording of tests/data/vad-golden.json's pieces (files of
    ../shared/audio, and gaps of tools/golden_vad.py's seeded noise, whole
    16-bit steps at scale 1), as WAV bytes."""
    out = array.array("h")
    for p in pieces:
        if isinstance(p, str):
            with wave.open(os.path.join(AUDIO, p), "rb") as w:
                assert w.getframerate() == 16000 and w.getnchannels() == 1
                out.frombytes(w.readframes(w.getnframes()))
        else:
            s = p["seed"]
            for _ in range(int(round(p["seconds"] * 16000))):
                s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
                out.append(int(round(((s >> 16) % 7 - 3) * p["scale"])))
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(out.tobytes())
    return b.getvalue()


def multipart(fields, boundary="encdecboundary"):
    """A multipart/form-data body of fields [(name, text or (filename, bytes))]
    and its Content-Type."""
    b = io.BytesIO()
    for name, value in fields:
        b.write(("--%s\r\n" % boundary).encode())
        if isinstance(value, tuple):
            fname, data = value
            b.write(('Content-Disposition: form-data; name="%s"; filename="%s"\r\n'
                     "Content-Type: application/octet-stream\r\n\r\n" % (name, fname)).encode())
            b.write(data)
        else:
            b.write(('Content-Disposition: form-data; name="%s"\r\n\r\n' % name).encode())
            b.write(value.encode())
        b.write(b"\r\n")
    b.write(("--%s--\r\n" % boundary).encode())
    return b.getvalue(), "multipart/form-data; boundary=" + boundary
