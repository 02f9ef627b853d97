"""Models by name in the CLI and the server: cli/hub.c's download (libcurl)
against a local HTTP server laid out as the Hugging Face hub ($HF_ENDPOINT):
/api/models/<repo> says whether a repository exists, /<repo>/resolve/main/<file>
answers with a 302 to another host name for the weights, as the hub sends
them to its CDN. Standard library only.

    test_hub_cli.py ENCDEC_BINARY

Checks: a hub id, a faster-whisper size name and its repository download
into the cache's folder (the files byte for byte; transcription the same as
from the model's own directory) and the second use asks the hub nothing; a
sharded safetensors repository (its index's shards); HF_TOKEN sent to the
hub's host and not to the CDN's; a missing repository, one needing a token,
a file failing with HTTP 500, a transfer cut short, an unreachable hub and
HF_HUB_OFFLINE each give exit 1, one line saying so, and nothing left in the
cache; encdec serve -m NAME downloads and serves it."""

import http.server
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
WHISPER = os.path.join(DATA, "tiny-random-whisper")
CT2 = os.path.join(DATA, "tiny-random-ct2-int8", "int8")
AUDIO = os.path.join(DATA, "base-de-guten-morgen.wav")
FAILED = []


def check(cond, what):
    print(("  ok   " if cond else "  FAIL ") + what, flush=True)
    if not cond:
        FAILED.append(what)


def shard(src, dest):
    """model.safetensors of src split in two shards and their index in dest."""
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        body = f.read()
    names = sorted(k for k in head if k != "__metadata__")
    index = {"metadata": {}, "weight_map": {}}
    for part, group in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        fname = "model-%05d-of-00002.safetensors" % (part + 1)
        h, chunks, off = {}, [], 0
        for k in group:
            a, b = head[k]["data_offsets"]
            h[k] = dict(head[k], data_offsets=[off, off + b - a])
            chunks.append(body[a:b])
            off += b - a
        hj = json.dumps(h).encode()
        hj += b" " * (-len(hj) % 8)
        with open(os.path.join(dest, fname), "wb") as f:
            f.write(struct.pack("<Q", len(hj)) + hj + b"".join(chunks))
        for k in group:
            index["weight_map"][k] = fname
    with open(os.path.join(dest, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    for name in os.listdir(src):
        if name != "model.safetensors":
            shutil.copy(os.path.join(src, name), dest)


class Hub(http.server.BaseHTTPRequestHandler):
    repos = {}          # repo id -> folder
    log = []            # (path, Authorization) of every request
    port = 0

    def log_message(self, *a):
        pass

    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        auth = self.headers.get("Authorization")
        Hub.log.append((self.headers.get("Host", "").split(":")[0], self.path, auth))
        p = self.path.lstrip("/")
        if p.startswith("api/models/"):
            repo = p[len("api/models/"):]
            if repo == "acme/private" and auth != "Bearer s3cret":
                return self.send(401)
            return self.send(200 if repo in Hub.repos else 404, b"{}")
        if p.startswith("cdn/"):   # the CDN: another host name
            repo, _, f = p[4:].rpartition("/")
            path = os.path.join(Hub.repos.get(repo, "/nonexistent"), f)
            if repo == "acme/broken" and f == "model.safetensors":
                return self.send(500, b"oops")
            if repo == "acme/cut" and f == "model.safetensors":   # the connection drops
                self.send_response(200)
                self.send_header("Content-Length", str(os.path.getsize(path)))
                self.end_headers()
                with open(path, "rb") as fh:
                    self.wfile.write(fh.read(1000))
                self.close_connection = True
                return None
            if not os.path.isfile(path):
                return self.send(404)
            with open(path, "rb") as fh:
                return self.send(200, fh.read())
        repo, sep, f = p.partition("/resolve/main/")
        if not sep or repo not in Hub.repos:
            return self.send(404)
        if not os.path.isfile(os.path.join(Hub.repos[repo], f)):
            return self.send(404, b"Entry not found")
        # the weights go to the CDN (localhost, not 127.0.0.1), the rest is answered here
        if f.endswith((".safetensors", ".bin")):
            return self.send(302, headers=[("Location", "http://localhost:%d/cdn/%s/%s" %
                                            (Hub.port, repo, f))])
        with open(os.path.join(Hub.repos[repo], f), "rb") as fh:
            return self.send(200, fh.read())


def run(binary, cache, hub, *args, env=None, timeout=300):
    e = dict(os.environ, XDG_CACHE_HOME=cache, HF_ENDPOINT=hub)
    for k in ("HF_TOKEN", "HF_HUB_OFFLINE"):
        e.pop(k, None)
    e.update(env or {})
    args = list(args)
    if args[:1] == ["transcribe"]:   # the random models' decodes: short (what they say is noise)
        args[1:1] = ["--max-tokens", "16"]
    return subprocess.run([binary] + args, env=e, capture_output=True, text=True,
                          timeout=timeout)


def same_tree(a, b):
    fa, fb = sorted(os.listdir(a)), sorted(os.listdir(b))
    if fa != fb:
        return False
    for f in fa:
        with open(os.path.join(a, f), "rb") as x, open(os.path.join(b, f), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def leftovers(models):
    return [f for f in os.listdir(models)] if os.path.isdir(models) else []


def refused(binary, cache, hub, name, said, env=None):
    models = os.path.join(cache, "encdec", "models")
    before = set(leftovers(models))
    r = run(binary, cache, hub, "transcribe", "-m", name, AUDIO, env=env)
    lines = [l for l in r.stderr.splitlines()
             if not (l.startswith("encdec: downloading") and "failed" not in l)]
    check(r.returncode == 1 and len(lines) == 1 and said in lines[0],
          "%s: exit 1, one line saying '%s' (rc %d: %r)" % (name, said, r.returncode, r.stderr))
    check(set(leftovers(models)) == before,
          "%s: nothing left in the cache (%s)" % (name, sorted(set(leftovers(models)) - before)))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    probe = subprocess.run([binary, "transcribe", "-m", "x/y", AUDIO], capture_output=True,
                           text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if "built without libcurl" in probe.stderr:
        print("skip: this encdec was built without libcurl")
        return 77
    tmp = tempfile.mkdtemp(prefix="encdec-hub-")
    try:
        return tests(binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tests(binary, tmp):
    sharded = os.path.join(tmp, "sharded")
    os.makedirs(sharded)
    shard(WHISPER, sharded)
    Hub.repos = {"acme/tiny-whisper": WHISPER, "Systran/faster-whisper-small": CT2,
                 "acme/private": WHISPER, "acme/sharded": sharded, "acme/broken": WHISPER,
                 "acme/cut": WHISPER}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    Hub.port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    hub = "http://127.0.0.1:%d/" % Hub.port   # a trailing slash, as users write it
    cache = os.path.join(tmp, "cache")
    models = os.path.join(cache, "encdec", "models")

    # a hub id: downloaded into its last part, transcribed as from its own folder
    ref = run(binary, cache, hub, "transcribe", "-m", WHISPER, "-f", "json", AUDIO)
    check(ref.returncode == 0, "the random model transcribes from its folder (%s)" % ref.stderr)
    r = run(binary, cache, hub, "transcribe", "-m", "acme/tiny-whisper", "-f", "json", AUDIO)
    check(r.returncode == 0 and r.stdout == ref.stdout,
          "-m acme/tiny-whisper: downloaded, the same transcript (rc %d: %s)" % (r.returncode, r.stderr))
    check(same_tree(os.path.join(models, "tiny-whisper"), WHISPER),
          "tiny-whisper in the cache: the repository's files, byte for byte")
    Hub.log.clear()
    r = run(binary, cache, hub, "transcribe", "-m", "acme/tiny-whisper", "-f", "json", AUDIO)
    check(r.returncode == 0 and r.stdout == ref.stdout and not Hub.log,
          "the second time: from the cache, the hub not asked (%d requests)" % len(Hub.log))

    # faster-whisper's size name: its repository into whisper-small; its id then resolves there
    r = run(binary, cache, hub, "transcribe", "-m", "small", AUDIO)
    check(r.returncode == 0 and same_tree(os.path.join(models, "whisper-small"), CT2),
          "-m small: Systran/faster-whisper-small into whisper-small (rc %d: %s)" % (r.returncode, r.stderr))
    Hub.log.clear()
    r2 = run(binary, cache, hub, "transcribe", "-m", "Systran/faster-whisper-small", AUDIO)
    check(r2.returncode == 0 and r2.stdout == r.stdout and not Hub.log,
          "-m Systran/faster-whisper-small: the same folder, the hub not asked")

    # a sharded repository: the index and every shard it names
    ref2 = run(binary, cache, hub, "transcribe", "-m", sharded, "-f", "json", AUDIO)
    r = run(binary, cache, hub, "transcribe", "-m", "acme/sharded", "-f", "json", AUDIO)
    check(r.returncode == 0 and r.stdout == ref2.stdout == ref.stdout and
          same_tree(os.path.join(models, "sharded"), sharded),
          "-m acme/sharded: the index and both shards, the same transcript (%s)" % r.stderr)

    # a token: sent to the hub, not to the CDN's host
    refused(binary, cache, hub, "acme/private", "acme/private needs a Hugging Face token")
    Hub.log.clear()
    r = run(binary, cache, hub, "transcribe", "-m", "acme/private", AUDIO,
            env={"HF_TOKEN": "s3cret"})
    to_hub = [a for h, p, a in Hub.log if h == "127.0.0.1"]
    to_cdn = [a for h, p, a in Hub.log if h == "localhost"]
    check(r.returncode == 0 and to_cdn and all(a == "Bearer s3cret" for a in to_hub) and
          not any(to_cdn), "HF_TOKEN: the hub gets it, the CDN does not (%s)" % r.stderr)

    # failures: one line, exit 1, nothing left behind
    refused(binary, cache, hub, "acme/nothing", "no repository acme/nothing on the Hugging Face hub")
    refused(binary, cache, hub, "acme/broken", "downloading model.safetensors of acme/broken failed (HTTP 500)")
    refused(binary, cache, hub, "acme/cut", "downloading acme/cut from")
    refused(binary, cache, "http://127.0.0.1:9", "base.en",
            "cannot reach http://127.0.0.1:9 to download Systran/faster-whisper-base.en")
    Hub.log.clear()
    refused(binary, cache, hub, "medium", "HF_HUB_OFFLINE is set", env={"HF_HUB_OFFLINE": "1"})
    check(not Hub.log, "HF_HUB_OFFLINE: the hub not asked")
    refused(binary, cache, hub, "no-such-name", "nor a name to download")

    # the server resolves -m the same way
    cache2 = os.path.join(tmp, "cache2")
    e = dict(os.environ, XDG_CACHE_HOME=cache2, HF_ENDPOINT=hub)
    p = subprocess.Popen([binary, "serve", "-m", "acme/tiny-whisper", "--port", "0"], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    check("encdec serve: tiny-whisper" in line and p.returncode == 0 and
          same_tree(os.path.join(cache2, "encdec", "models", "tiny-whisper"), WHISPER),
          "serve -m acme/tiny-whisper: downloaded and served (%r, %s)" % (line, err))
    srv.shutdown()
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
