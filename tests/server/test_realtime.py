"""GET /v1/realtime (live transcription over a WebSocket) against OpenAI's
official Python client (its realtime connection, on the websockets library).

    test_realtime.py ENCDEC_BINARY [--sanitized] [--threaded]

Over whisper tiny.en: jfk's speech sent at 24 kHz as fast as the socket takes
it, committed by the client (turn_detection null): one item whose deltas add
up to its completed transcript, against the speech's reference text; server
VAD with partials at 16 kHz: jfk twice with silence between, more than one
item in order (speech_started, deltas, speech_stopped, committed, completed),
each delta the start of the partial before it (partials never contradict
finals) and carrying its span of the audio (audio_start_ms / audio_end_ms,
encdec's extension), previous_item_id chained; the beta's event names; every bad message answered
by an error event with its code while the session goes on (bad JSON, no type,
an unknown type, bad base64, an odd byte count, an empty commit, an unknown
model or language, another audio format, a binary frame); the handshake's
refusals (no upgrade 400, version 426 naming 13, a bad key, another intent,
an unknown model 404); --max-live (503, a place freed when a client goes,
even one that vanished mid-stream); a message over the limit (close 1009);
SIGTERM during a session: its audio transcribed and sent, close 1001, exit 0.
--threaded (ThreadSanitizer's pass) leaves out the beta's events and the bad
messages, which are one session's, not its threads'.
Exits 0, 1 on a failure, 77 when the client or the model is missing.
"""
import audioop
import base64
import json
import os
import re
import signal
import socket
import sys
import time
import wave
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)   # audioop
try:
    from openai import OpenAI
    from websockets.sync.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus
except ImportError:
    print("skip: the openai client or websockets is not installed (scripts/venv-client.sh)")
    sys.exit(77)

from common import AUDIO, JFK, Server, model_dir, timed

FAILED = []


def check(cond, what):
    print(("  ok   " if cond else "  FAIL ") + what)
    if not cond:
        FAILED.append(what)


def words(t):
    return re.sub(r"[^a-z0-9' ]", " ", t.lower()).split()


def wer(ref, hyp):
    r, h = words(ref), words(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)] / max(1, len(r))


def reference(name):
    """The transcript shipped with the audio (../shared/audio/TRANSCRIPTS.tsv)."""
    with open(os.path.join(AUDIO, "TRANSCRIPTS.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if cols[0] == name:
                return cols[1]
    raise RuntimeError(name + " has no reference transcript")


def pcm16(path, rate):
    w = wave.open(path)
    raw = w.readframes(w.getnframes())
    if w.getframerate() != rate:
        raw, _ = audioop.ratecv(raw, 2, 1, w.getframerate(), rate, None)
    return raw


def append_all(conn, pcm, rate, chunk_s=0.1):
    step = int(rate * chunk_s) * 2
    for i in range(0, len(pcm), step):
        conn.send({"type": "input_audio_buffer.append",
                   "audio": base64.b64encode(pcm[i:i + step]).decode()})


def events_until(conn, done, timeout=300):
    """Every event until done(event) is true (included)."""
    out, t0 = [], time.time()
    for ev in conn:
        out.append(ev)
        if done(ev) or time.time() - t0 > timeout:
            break
    return out


def completed(ev):
    return ev.type == "conversation.item.input_audio_transcription.completed"


def ga_session(rate=24000, turn=None, partials=None, **tr):
    s = {"type": "transcription",
         "audio": {"input": {"format": {"type": "audio/pcm", "rate": rate},
                             "transcription": {"model": "whisper-1", **tr},
                             "turn_detection": turn}}}
    if partials is not None:
        s["partials"] = partials
    return {"type": "session.update", "session": s}


def manual_commit(s, ref):
    c = s.client()
    pcm = pcm16(JFK, 24000)
    with c.realtime.connect(extra_query={"intent": "transcription"}) as conn:
        conn.send(ga_session())
        append_all(conn, pcm, 24000)
        conn.send({"type": "input_audio_buffer.commit"})
        evs = events_until(conn, completed)
    types = [e.type for e in evs]
    check(types[:2] == ["session.created", "session.updated"], "manual: created, then updated")
    upd = evs[1].session
    check(upd.audio.input.format.rate == 24000 and upd.audio.input.turn_detection is None,
          "manual: the update is echoed (24 kHz, no turn detection)")
    deltas = [e.delta for e in evs if e.type.endswith("transcription.delta")]
    done = evs[-1]
    check(completed(done), "manual: a completed transcript")
    check("".join(deltas).strip() == done.transcript, "manual: the deltas add up to the transcript")
    w = wer(ref, done.transcript)
    check(w <= 0.1, "manual: WER %.3f against the reference (at most 0.1): %r" % (w, done.transcript))
    com = [e for e in evs if e.type == "input_audio_buffer.committed"]
    check(len(com) == 1 and com[0].item_id == done.item_id and com[0].previous_item_id is None,
          "manual: one item committed, no previous item")
    check(types.index("input_audio_buffer.committed") < types.index(done.type),
          "manual: committed before completed")
    check("input_audio_buffer.speech_stopped" not in types
          and "input_audio_buffer.speech_started" not in types,
          "manual: no speech_started / speech_stopped without VAD (as OpenAI)")
    ids = [e.event_id for e in evs]
    check(len(set(ids)) == len(ids), "manual: event ids unique")
    check(done.usage.type == "duration" and 5 < done.usage.seconds < 12,
          "manual: usage in seconds (%.2f)" % done.usage.seconds)


def server_vad(s, ref):
    c = s.client()
    one = pcm16(JFK, 16000)
    pcm = one + b"\0\0" * 16000 * 2 + one
    with c.realtime.connect(extra_query={"intent": "transcription"}) as conn:
        conn.send(ga_session(16000, {"type": "server_vad", "silence_duration_ms": 600}, True))
        append_all(conn, pcm, 16000, 0.25)
        conn.send({"type": "input_audio_buffer.commit"})
        # events come in order: the sentinel's error follows everything the commit made
        conn.send({"type": "sentinel", "event_id": "sentinel"})
        evs = events_until(conn, lambda e: e.type == "error" and e.error.event_id == "sentinel")
    items = [e for e in evs if completed(e)]
    check(len(items) >= 2, "server VAD: %d items (at least 2: silence between)" % len(items))
    text = " ".join(e.transcript for e in items)
    w = wer(ref + " " + ref, text)
    check(w <= 0.15, "server VAD: WER %.3f over both (at most 0.15): %r" % (w, text))
    prev, chained, order = None, True, True
    for e in evs:
        if e.type == "input_audio_buffer.committed":
            chained &= e.previous_item_id == prev
            prev = e.item_id
    check(chained, "server VAD: previous_item_id chains the items")
    want = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed", "conversation.item.input_audio_transcription.completed"]
    for it in items:
        seq = [e.type for e in evs if getattr(e, "item_id", None) == it.item_id]
        order &= [t for t in seq if t in want] == want
        order &= all(seq.index(t) < seq.index(want[1]) for t in seq if t.endswith("delta"))
        d = "".join(e.delta for e in evs if e.type.endswith("transcription.delta")
                    and e.item_id == it.item_id).strip()
        order &= d == it.transcript
    check(order, "server VAD: each item's events in order, its deltas its transcript")
    check(any(e.type == "encdec.transcription.partial" for e in evs), "server VAD: partials sent")
    # partials never contradict finals: each delta (final text, never changed
    # after) is the start of the item's partial before it (the words then
    # not yet final), the first delta's leading space aside
    last, agree = {}, True
    for e in evs:
        if e.type == "encdec.transcription.partial":
            last[e.item_id] = getattr(e, "text", None) or ""
        elif e.type.endswith("transcription.delta"):
            p = last.get(e.item_id)
            ok = p is not None and p.lstrip().startswith(e.delta.lstrip())
            if not ok:
                print("  delta %r after partial %r" % (e.delta, p))
            agree &= ok
    check(agree, "server VAD: every delta is the start of the partial before it")
    # encdec's extension: each delta's span of the session's audio, in order,
    # within the audio sent; the second jfk's after the silence
    spans = [(getattr(e, "audio_start_ms", None), getattr(e, "audio_end_ms", None))
             for e in evs if e.type.endswith("transcription.delta")]
    total_ms = len(pcm) / 2 / 16
    ok = all(a is not None and b is not None and 0 <= a <= b <= total_ms + 100 for a, b in spans)
    ok = ok and all(spans[i][1] <= spans[i + 1][1] for i in range(len(spans) - 1))
    check(ok and spans and spans[-1][0] >= len(one) / 2 / 16 + 1500,
          "server VAD: each delta's audio_start_ms / audio_end_ms in order, within the audio: %s"
          % spans[:3])
    stops = [e.audio_end_ms for e in evs if e.type == "input_audio_buffer.speech_stopped"]
    starts = [e.audio_start_ms for e in evs if e.type == "input_audio_buffer.speech_started"]
    check(all(a < b for a, b in zip(starts, stops)) and all(a <= b for a, b in zip(stops, starts[1:])),
          "server VAD: speech_started / speech_stopped times in order")
    gap = [b for b in starts if b >= len(one) / 2 / 16 + 1500]
    check(len(gap) >= 1, "server VAD: an item starts after the silence")


def beta_and_errors(s, ref):
    url = "ws://127.0.0.1:%d/v1/realtime?intent=transcription" % s.port
    with ws_connect(url, max_size=None) as w:
        first = json.loads(w.recv(timeout=30))
        check(first["type"] == "session.created", "beta: session.created first")

        def ask(msg, raw=False):
            w.send(msg if raw else json.dumps(msg))
            return json.loads(w.recv(timeout=60))

        r = ask({"type": "transcription_session.update",
                 "session": {"input_audio_format": "pcm16", "turn_detection": None,
                             "input_audio_transcription": {"model": "whisper-1", "language": "en"}}})
        check(r["type"] == "transcription_session.updated" and
              r["session"]["input_audio_format"] == "pcm16" and r["session"]["turn_detection"] is None,
              "beta: transcription_session.updated in the beta's shape")
        cases = [
            ("{not json", True, "invalid_json"),
            ("", True, "invalid_json"),   # an empty message (found by fuzz_realtime)
            ({"event_id": "e1"}, False, "missing_required_parameter"),
            ({"type": "response.create", "event_id": "e2"}, False, "unknown_event"),
            ({"type": "input_audio_buffer.append", "audio": "!!!"}, False, "invalid_value"),
            ({"type": "input_audio_buffer.append", "audio": base64.b64encode(b"abc").decode()},
             False, "invalid_value"),
            ({"type": "input_audio_buffer.append"}, False, "missing_required_parameter"),
            ({"type": "input_audio_buffer.commit"}, False, "input_audio_buffer_commit_empty"),
            ({"type": "session.update", "session": {"audio": {"input": {"transcription":
                                                                       {"model": "nope"}}}}},
             False, "model_not_found"),
            ({"type": "session.update", "session": {"audio": {"input": {"transcription":
                                                                       {"language": "de"}}}}},
             False, "invalid_value"),
            ({"type": "session.update", "session": {"audio": {"input": {"format":
                                                                       {"type": "audio/pcmu"}}}}},
             False, "unsupported_audio_format"),
            ({"type": "session.update", "session": {"audio": {"input": {"format":
                                                                       {"type": "audio/pcm", "rate": 100}}}}},
             False, "invalid_value"),
            ({"type": "session.update", "session": {"type": "realtime"}}, False, "invalid_value"),
            ({"type": "session.update"}, False, "missing_required_parameter"),
            (b"\x01\x02", True, "invalid_event"),
        ]
        for msg, raw, code in cases:
            r = ask(msg, raw)
            check(r["type"] == "error" and r["error"]["code"] == code,
                  "error %s for %.60r" % (code, msg))
        r = ask({"type": "input_audio_buffer.commit", "event_id": "mine"})
        check(r["error"]["event_id"] == "mine", "an error names the client's event_id")
        # the session goes on: audio, then its transcript
        pcm = pcm16(JFK, 24000)
        for i in range(0, len(pcm), 48000):
            w.send(json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(pcm[i:i + 48000]).decode()}))
        w.send(json.dumps({"type": "input_audio_buffer.commit"}))
        text = None
        while text is None:
            e = json.loads(w.recv(timeout=300))
            if e["type"] == "conversation.item.input_audio_transcription.completed":
                text = e["transcript"]
        check(wer(ref, text) <= 0.1, "after the errors the session transcribes")
        w.send(json.dumps({"type": "input_audio_buffer.clear"}))
        check(json.loads(w.recv(timeout=30))["type"] == "input_audio_buffer.cleared", "clear: cleared")
        # a rate changed while audio is in applies after the commit: the open
        # stream's second half is still read at 24 kHz, the next stream at 16 kHz
        half = len(pcm) // 4 * 2

        def send(b, step):
            for i in range(0, len(b), step):
                w.send(json.dumps({"type": "input_audio_buffer.append",
                                   "audio": base64.b64encode(b[i:i + step]).decode()}))

        def transcript():
            while True:
                e = json.loads(w.recv(timeout=300))
                if e["type"] == "conversation.item.input_audio_transcription.completed":
                    return e["transcript"]

        send(pcm[:half], 48000)
        w.send(json.dumps({"type": "session.update", "session": {"audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}}}}}))
        send(pcm[half:], 48000)
        w.send(json.dumps({"type": "input_audio_buffer.commit"}))
        t1 = transcript()
        check(wer(ref, t1) <= 0.1, "a rate changed mid-stream waits for the commit: %r" % t1)
        send(pcm16(JFK, 16000), 32000)
        w.send(json.dumps({"type": "input_audio_buffer.commit"}))
        t2 = transcript()
        check(wer(ref, t2) <= 0.1, "then the next stream is read at 16 kHz: %r" % t2)


def raw_get(port, headers):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    req = "GET %s HTTP/1.1\r\nHost: x\r\n" % headers.pop("path", "/v1/realtime")
    req += "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
    s.sendall(req.encode())
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(4096)
        if not got:
            break
        data += got
    s.close()
    head = data.split(b"\r\n\r\n")[0].decode(errors="replace")
    return int(head.split()[1]), head


def handshake(s):
    ok = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    st, head = raw_get(s.port, dict(ok))
    check(st == 101 and "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head,
          "handshake: 101 with RFC 6455's accept value for its example key")
    st, _ = raw_get(s.port, {})
    check(st == 400, "handshake: a plain GET gets 400")
    st, head = raw_get(s.port, dict(ok, **{"Sec-WebSocket-Version": "8"}))
    check(st == 426 and "Sec-WebSocket-Version: 13" in head, "handshake: version 8 gets 426 naming 13")
    st, _ = raw_get(s.port, dict(ok, **{"Sec-WebSocket-Key": "short"}))
    check(st == 400, "handshake: a bad key gets 400")
    st, _ = raw_get(s.port, dict(ok, path="/v1/realtime?intent=conversation"))
    check(st == 400, "handshake: intent other than transcription gets 400")
    st, _ = raw_get(s.port, dict(ok, path="/v1/realtime?model=nope"))
    check(st == 404, "handshake: an unknown model gets 404")


def limits(binary, tiny):
    s = Server(binary, tiny, "--max-live", "1", "-q")
    url = "ws://127.0.0.1:%d/v1/realtime" % s.port
    try:
        w1 = ws_connect(url, max_size=None)
        w1.recv(timeout=30)
        try:
            ws_connect(url).close()
            check(False, "--max-live 1: a second session refused")
        except InvalidStatus as e:
            check(e.response.status_code == 503, "--max-live 1: a second session gets 503")
        # the first vanishes mid-stream (no close frame): its place comes back
        w1.send(json.dumps({"type": "input_audio_buffer.append",
                            "audio": base64.b64encode(pcm16(JFK, 24000)[:96000]).decode()}))
        w1.socket.close()
        ok = False
        for _ in range(100):
            try:
                with ws_connect(url, max_size=None) as w2:
                    ok = json.loads(w2.recv(timeout=30))["type"] == "session.created"
                    # a message over the limit (16 MiB): closed with 1009
                    try:   # refused from its header: the send itself may see the close
                        w2.send(json.dumps({"type": "input_audio_buffer.append",
                                            "audio": "A" * (17 << 20)}))
                        while True:
                            w2.recv(timeout=60)
                    except ConnectionClosed as e:
                        check(e.rcvd is not None and e.rcvd.code == 1009,
                              "a 17 MiB message closes the session with 1009")
                break
            except InvalidStatus:
                time.sleep(0.1)
        check(ok, "a client that vanished gives its place back")
        st, _ = raw_get(s.port, {"path": "/health"})
        check(st == 200, "the server serves on")
    finally:
        s.stop(signal.SIGTERM)


def sigterm(binary, tiny, ref):
    s = Server(binary, tiny, "-q")
    url = "ws://127.0.0.1:%d/v1/realtime" % s.port
    evs, code = [], None
    with ws_connect(url, max_size=None) as w:
        w.send(json.dumps(ga_session()))
        pcm = pcm16(JFK, 24000)
        for i in range(0, len(pcm), 4800):
            w.send(json.dumps({"type": "input_audio_buffer.append",
                               "audio": base64.b64encode(pcm[i:i + 4800]).decode()}))
        time.sleep(0.5)
        s.p.send_signal(signal.SIGTERM)
        try:
            while True:
                evs.append(json.loads(w.recv(timeout=300)))
        except ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd else None
    done = [e for e in evs if e["type"] == "conversation.item.input_audio_transcription.completed"]
    if len(done) != 1:
        print([e["type"] for e in evs], code, "".join(s.log[-20:]))
    check(len(done) == 1 and wer(ref, done[0]["transcript"]) <= 0.1,
          "SIGTERM: the session's audio transcribed and sent before the close")
    check(code == 1001, "SIGTERM: closed with 1001 (going away): %r" % code)
    check(s.p.wait(timeout=120) == 0, "SIGTERM: the server exits 0")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    tiny = model_dir()
    if not tiny or not os.path.exists(JFK):
        print("skip: whisper tiny.en or ../shared/audio missing")
        return 77
    ref = reference("jfk.wav")
    s = Server(binary, tiny, "-q")
    try:
        st, head = raw_get(s.port, {"Upgrade": "websocket", "Connection": "Upgrade",
                                    "Sec-WebSocket-Version": "13",
                                    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        if st == 501:
            print("skip: encdec was built without libwslay / nettle")
            return 77
        timed(handshake, s)
        timed(manual_commit, s, ref)
        timed(server_vad, s, ref)
        # ThreadSanitizer's pass (--threaded): the sessions, limits and
        # SIGTERM; the beta's shape and the errors are the other passes'
        if "--threaded" not in sys.argv:
            timed(beta_and_errors, s, ref)
    finally:
        s.stop(signal.SIGTERM)
    timed(limits, binary, tiny)
    timed(sigterm, binary, tiny, ref)
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
