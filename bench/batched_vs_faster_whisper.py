#!/usr/bin/env python3
"""Batched long-form against faster-whisper: encdec's sequential transcription, --vad and
--batch-size 8 / 16 against faster-whisper's transcribe(), transcribe(vad_filter=True) and
BatchedInferencePipeline (batch 8 / 16), on recordings of speech with pauses and noise whose
words are known: same model directory, threads and audio, in one run.

Usage (from the repository root, after scripts/venv.sh, scripts/fetch-model.sh vad and a
build):

    .venv/bin/python bench/batched_vs_faster_whisper.py [--minutes 10,60]
        [--models tiny.en,base] [--precisions f32=float32,int8=int8] [--threads 2]
        [--repeats 3] [--rows seq,vad,b8,b16] [--json OUT (figures and each row's texts)]
        [--peer-padding peer|openai] [--isa avx2|avx512]

The recordings are made here (bench/out/, reused): utterances of ../shared/audio (jfk,
LibriSpeech, LibriVox, cards, platforms) and of espeak-ng (sentences written below, two
voices, three speeds; scripts install espeak-ng from Debian when it is missing), in a seeded
random order, each followed by a pause of 0.3-6 s of silence, low noise or loud noise, until
the length asked. The reference text is the utterances' text in that order.

Rows (the same options on both sides: beam 5, English, temperature fallback 0, 0.2, ... 1.0
with thresholds 2.4 / -1 / 0.6 where the engine has it):
  seq    encdec transcribe          | faster-whisper WhisperModel.transcribe()
  vad    encdec transcribe --vad    | transcribe(vad_filter=True)
  bN     encdec transcribe --batch-size N --no-timestamps
                                    | BatchedInferencePipeline.transcribe(batch_size=N)
         (the peer's batched defaults: no timestamps, its VAD options; the peer decodes
         each chunk once, at the first temperature; encdec keeps its fallback)
--peer-padding openai: the peer's batched rows get openai-whisper's features for a chunk
(its samples and 30 s of zero samples, 3000 frames: what encdec decodes) instead of its own
(the chunk's frames, then frames of 0.0 in the normalised log-mel: not silence's value).
The one difference in what the two engines are given, to tell it from the engines.
--isa avx2 (or avx512): both engines held to that kernel set (encdec --isa, the peer's
CTranslate2 through CT2_FORCE_CPU_ISA), e.g. an AVX2 machine's kernels on an AVX-512 one.
Each run is a process of its own: encdec's CLI (-t T --json; its time: the process's wall
time less its model load, which --json reports), faster-whisper's in a Python process (the
model loaded, then the transcription timed, segments consumed). Peak RSS is the process's
(getrusage of the child). Medians of --repeats runs, the two engines' runs in turn (a
host's load moves both alike); speed-up: the medians' ratio, and in brackets the median of
each turn's own ratio. WER: words against the reference,
lower case, letters and digits, numbers as espeak-ng reads them written out in the
reference (the engines write "1" or "one": both are counted right through a small table).
"""

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "audio"
OUT = ROOT / "bench" / "out"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "encdec" / "models"
RATE = 16000
ENCDEC = str(ROOT / "build" / "encdec")

SENTENCES = [
    "the committee will meet again on thursday to review the budget",
    "please remember to bring your own notes to the next session",
    "the train to the coast leaves from platform four every hour",
    "we measured the temperature of the water twice a day for a month",
    "she opened the window and listened to the rain on the roof",
    "the results were better than anyone in the room had expected",
    "a small boat drifted slowly past the old stone bridge",
    "turn left at the second light and the library is on your right",
    "the new engine runs faster and uses less memory than the old one",
    "our guests arrived late because the road was closed for repairs",
    "he wrote the numbers on the board and asked the class to add them",
    "the garden looks beautiful in the early morning light",
    "most of the questions were about the schedule for next year",
    "the market sells fresh bread fish and vegetables every saturday",
    "they decided to postpone the launch until the tests were finished",
    "the museum is closed on mondays but open late on fridays",
]
NUMBERS = {"0": "zero", "1": "one", "2": "two", "3": "three", "4": "four", "5": "five",
           "6": "six", "7": "seven", "8": "eight", "9": "nine", "10": "ten"}


def read_wav(path):
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768


def write_wav(path, x):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())


def ensure_espeak():
    if shutil.which("espeak-ng"):
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print("installing espeak-ng (Debian)", file=sys.stderr)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                           "espeak-ng"], check=True, env=dict(os.environ,
                                                              DEBIAN_FRONTEND="noninteractive"))


def utterances():
    """[(samples, text)]: ../shared/audio's and espeak-ng's."""
    strip = lambda l: l.split("</s>")[0].replace("<s>", "").strip()
    out = [(read_wav(SHARED / "jfk.wav"), "and so my fellow americans ask not what your country "
            "can do for you ask what you can do for your country"),
           (read_wav(SHARED / "librispeech" / "1272-128104-0000.wav"),
            "mr quilter is the apostle of the middle classes and we are glad to welcome his gospel"),
           (read_wav(SHARED / "platforms_en.wav"), "today only platforms one and three are used")]
    books = (SHARED / "librivox" / "transcription").read_text().splitlines()
    for f, t in zip(sorted((SHARED / "librivox").glob("*.wav")), books):
        out.append((read_wav(f), strip(t)))
    cards = (SHARED / "cards" / "cards.transcription").read_text().splitlines()
    for f, t in zip(sorted((SHARED / "cards").glob("*.wav")), cards):
        out.append((read_wav(f), strip(t)))
    ensure_espeak()
    OUT.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(SENTENCES):
        for voice, speed in (("en-us", 150), ("en-gb", 175), ("en-us+f3", 135)):
            path = OUT / f"espeak-{i}-{voice}-{speed}.wav"
            if not path.exists():
                raw = OUT / "espeak.raw.wav"
                subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), s],
                               check=True)
                x = resample(raw)
                write_wav(path, x)
            out.append((read_wav(path), s))
    return out


def resample(path):
    """espeak-ng's 22050 Hz wav at 16 kHz (linear interpolation: speech for a benchmark)."""
    with wave.open(str(path)) as w:
        r = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    t = np.arange(0, len(x) / r, 1 / RATE)
    return np.interp(t, np.arange(len(x)) / r, x).astype(np.float32) * 0.8


def recording(minutes):
    """The recording's path and text, made by a child process when missing: the peak RSS
    of every process this one starts includes this process's own peak (Linux keeps it
    across exec), so the samples of an hour must never be held here."""
    path, ref = OUT / f"batched-{minutes}min.wav", OUT / f"batched-{minutes}min.txt"
    if not (path.exists() and ref.exists()):
        subprocess.run([sys.executable, __file__, "--make-recording", str(minutes)], check=True)
    return path, ref.read_text()


def make_recording(minutes):
    path, ref = OUT / f"batched-{minutes}min.wav", OUT / f"batched-{minutes}min.txt"
    rng = random.Random(minutes)
    nrng = np.random.default_rng(minutes)
    utts = utterances()
    parts, words, total = [], [], 0
    while total < minutes * 60 * RATE:
        x, t = utts[rng.randrange(len(utts))]
        gap = int(RATE * rng.uniform(0.3, 6.0))
        kind = rng.random()
        g = np.zeros(gap, np.float32) if kind < 0.4 else \
            (nrng.standard_normal(gap) * (0.003 if kind < 0.8 else 0.05)).astype(np.float32)
        parts += [x, g]
        words.append(t)
        total += len(x) + gap
    write_wav(path, np.concatenate(parts))
    ref.write_text(" ".join(words))


def norm(text):
    w = "".join(c if c.isalnum() or c.isspace() else " " for c in text.lower()).split()
    return [NUMBERS.get(x, x) for x in w]


def wer(ref, hyp):
    r, h = norm(ref), norm(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
    return d[len(h)] / max(1, len(r))


ISA = None   # --isa: both engines held to one kernel set


def child(cmd, env=None):
    """Runs cmd; (stdout, wall seconds, peak RSS MB of that process)."""
    import tempfile
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            err.seek(0)
            raise RuntimeError(f"{cmd[0]} failed: {err.read()[-2000:].decode(errors='replace')}")
    return out.decode(), wall, ru.ru_maxrss / 1024.0


FW = r'''
import json, sys, time
from faster_whisper import WhisperModel, BatchedInferencePipeline
model, ct, threads, audio, row, padding = sys.argv[1:7]
m = WhisperModel(model, device="cpu", compute_type=ct, cpu_threads=int(threads))
if padding == "openai":   # a batched chunk's features as openai-whisper's window of it
    fe, call = m.feature_extractor, m.feature_extractor.__call__

    class Window:   # the chunk and 30 s of zero samples, cut to 3000 frames (+ the one dropped)
        def __getattr__(self, k):
            return getattr(fe, k)

        def __call__(self, wav, padding=160, chunk_length=None):
            if padding == 160 and chunk_length is None and len(wav) <= 480000:
                return call(wav, padding=480000)[..., :3001]
            return call(wav, padding=padding, chunk_length=chunk_length)

    m.feature_extractor = Window()
t0 = time.perf_counter()
if row == "seq":
    segs, _ = m.transcribe(audio, beam_size=5, language="en")
elif row == "vad":
    segs, _ = m.transcribe(audio, beam_size=5, language="en", vad_filter=True)
else:
    segs, _ = BatchedInferencePipeline(m).transcribe(audio, beam_size=5, language="en",
                                                     batch_size=int(row[1:]))
text = " ".join(s.text for s in segs)
print(json.dumps({"seconds": time.perf_counter() - t0, "text": text}))
'''


def run_encdec(model, prec, threads, audio, row):
    cmd = [ENCDEC, "transcribe", "-q", "--json", "-m", model,
           "-t", str(threads), "--beam", "5", "-l", "en", "--compute", prec, str(audio)]
    if row == "vad":
        cmd.insert(2, "--vad")
    elif row.startswith("b"):
        cmd[2:2] = ["--batch-size", row[1:], "--no-timestamps"]
    if ISA:
        cmd[2:2] = ["--isa", ISA]
    out, wall, rss = child(cmd)
    j = json.loads(out)
    return wall - j["timings"]["load_ms"] / 1e3, j["text"], rss


def run_fw(model, ct, threads, audio, row, padding="peer"):
    env = dict(os.environ, CT2_FORCE_CPU_ISA=ISA.upper()) if ISA else None
    out, wall, rss = child([sys.executable, "-c", FW, model, ct, str(threads), str(audio), row,
                            padding], env)
    j = json.loads(out.strip().splitlines()[-1])
    return j["seconds"], j["text"], rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", default="10,60")
    ap.add_argument("--models", default="tiny.en,base")
    ap.add_argument("--precisions", default="f32=float32,int8=int8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", default="seq,vad,b8,b16")
    ap.add_argument("--json")
    ap.add_argument("--encdec", default=str(ROOT / "build" / "encdec"), help="the CLI to run")
    ap.add_argument("--peer-padding", choices=("peer", "openai"), default="peer",
                    help="openai: the peer's batched chunks get openai-whisper's features")
    ap.add_argument("--isa", choices=("avx2", "avx512"),
                    help="both engines held to this kernel set (encdec --isa, CT2_FORCE_CPU_ISA)")
    ap.add_argument("--make-recording", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make_recording:
        make_recording(a.make_recording)
        return
    global ENCDEC, ISA
    ENCDEC, ISA = a.encdec, a.isa
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    flags = next((l for l in open("/proc/cpuinfo") if l.startswith("flags")), "")
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
    if a.isa:
        isa += f", both engines held to {a.isa}"
    print(f"# {cpu} ({isa}), {a.threads} threads, medians of {a.repeats}")
    results = []
    for minutes in [int(m) for m in a.minutes.split(",")]:
        audio, ref = recording(minutes)
        dur = minutes * 60
        for name in a.models.split(","):
            model = str(CACHE / f"whisper-{name}")
            for prec in a.precisions.split(","):
                ours, theirs = prec.split("=")
                print(f"\n## {minutes} min, {name}, encdec {ours} / faster-whisper {theirs}")
                print("| row | encdec s | RTF | RSS MB | WER | faster-whisper s | RTF | RSS MB "
                      "| WER | speed-up |")
                print("|---|---|---|---|---|---|---|---|---|---|")
                for row in a.rows.split(","):
                    e, f = [], []
                    for _ in range(a.repeats):   # in turn: a host's load moves both alike
                        e.append(run_encdec(model, ours, a.threads, audio, row))
                        f.append(run_fw(model, theirs, a.threads, audio, row, a.peer_padding))
                    es, fs = statistics.median(x[0] for x in e), statistics.median(x[0] for x in f)
                    pair = statistics.median(y[0] / x[0] for x, y in zip(e, f))
                    er, fr = max(x[2] for x in e), max(x[2] for x in f)
                    ew, fw_ = wer(ref, e[0][1]), wer(ref, f[0][1])
                    print(f"| {row} | {es:.1f} | {es / dur:.4f} | {er:.0f} | {ew:.3f} | {fs:.1f} "
                          f"| {fs / dur:.4f} | {fr:.0f} | {fw_:.3f} | {fs / es:.2f}x "
                          f"(pairs {pair:.2f}x) |", flush=True)
                    results.append(dict(minutes=minutes, model=name, precision=prec, row=row,
                                        encdec_s=es, encdec_rss_mb=er, encdec_wer=ew,
                                        fw_s=fs, fw_rss_mb=fr, fw_wer=fw_, pair_speedup=pair,
                                        encdec_runs=[x[0] for x in e], fw_runs=[x[0] for x in f],
                                        encdec_text=e[0][1], fw_text=f[0][1]))
    if a.json:
        Path(a.json).write_text(json.dumps(dict(cpu=cpu, isa=isa, threads=a.threads,
                                                repeats=a.repeats, results=results), indent=1))


if __name__ == "__main__":
    main()
