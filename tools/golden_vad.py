"""Goldens of the Silero VAD (tests/data/vad-golden.json): onnxruntime's
speech probability for every frame of test recordings, through the ONNX
graph faster-whisper 1.2.1 ships, fed as faster-whisper feeds it; and
faster-whisper's get_speech_timestamps on the same recordings with several
option sets.

    .venv/bin/python tools/golden_vad.py [SHARED_DIR]

The recordings are built from ../shared/audio the way tests/recordings.h
builds them (16 kHz mono files as read, s16 / 32768; gaps of low noise from
the seeded LCG), plus louder noise (the same LCG, scaled) and digital
silence, so the C test rebuilds them exactly.
"""
import json
import os
import sys
import wave

import numpy as np
import onnxruntime
from faster_whisper import vad as fwvad

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "shared")
ONNX = os.path.join(os.path.dirname(fwvad.__file__), "assets", "silero_vad_v6.onnx")


def read(name):
    with wave.open(os.path.join(SHARED, "audio", name)) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768


def lcg(n, seed, scale):
    """recordings.h's rec_noise: ((s >> 16) % 7 - 3) / 32768, times scale."""
    out = np.empty(n, np.float32)
    s = seed
    for i in range(n):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = ((s >> 16) % 7 - 3) / 32768.0 * scale
    return out


# pieces: a file, or (silence seconds, seed, scale): scale 0 is digital silence
RECORDINGS = {
    "speech_gaps": ["jfk.wav", (3.0, 11, 1.0), "librispeech/1272-128104-0000.wav", (2.5, 12, 1.0),
                    "platforms_en.wav"],
    "noise_speech": [(4.0, 21, 600.0), "cards/001.wav", (6.0, 0, 0.0), "cards/002.wav",
                     (1.5, 22, 300.0)],
}
OPTIONS = [
    {},
    {"threshold": 0.6, "min_silence_duration_ms": 300, "speech_pad_ms": 100},
    {"min_speech_duration_ms": 1500, "min_silence_duration_ms": 500, "speech_pad_ms": 30},
    {"max_speech_duration_s": 4.0, "min_silence_duration_ms": 100, "speech_pad_ms": 200},
    {"threshold": 0.3, "neg_threshold": 0.2, "max_speech_duration_s": 2.5, "speech_pad_ms": 0},
]


def build(pieces):
    parts = []
    for p in pieces:
        if isinstance(p, str):
            parts.append(read(p))
        else:
            n = int(round(p[0] * 16000))
            parts.append(lcg(n, p[1], p[2]) if p[2] else np.zeros(n, np.float32))
    return np.concatenate(parts)


def probs(audio):
    """As faster-whisper 1.2.1: padded to whole frames, each with the 64
    samples before it, one session run (the LSTM over every frame)."""
    sess = onnxruntime.InferenceSession(ONNX, providers=["CPUExecutionProvider"])
    x = np.pad(audio, (0, 512 - audio.shape[0] % 512))
    fr = x.reshape(-1, 512)
    ctx = np.zeros((len(fr), 64), np.float32)
    ctx[1:] = fr[:-1, -64:]
    h = np.zeros((1, 1, 128), np.float32)
    out, _, _ = sess.run(None, {"input": np.concatenate([ctx, fr], 1), "h": h, "c": h.copy()})
    return out


def main():
    out = {"onnx": "faster-whisper 1.2.1 assets/silero_vad_v6.onnx", "recordings": {}}
    for name, pieces in RECORDINGS.items():
        audio = build(pieces)
        p = probs(audio)
        ref = fwvad.get_vad_model()(np.pad(audio, (0, 512 - audio.shape[0] % 512)))
        assert np.abs(p - ref).max() < 1e-6   # faster-whisper's own call gives the same
        spans = []
        for o in OPTIONS:
            ts = fwvad.get_speech_timestamps(audio, fwvad.VadOptions(**o))
            spans.append({"options": o, "spans": [[s["start"], s["end"]] for s in ts]})
        out["recordings"][name] = {
            "pieces": [p if isinstance(p, str) else {"seconds": p[0], "seed": p[1], "scale": p[2]}
                       for p in pieces],
            "n_samples": int(audio.shape[0]),
            "probs": [round(float(v), 7) for v in p],
            "speech": spans,
        }
    path = os.path.join(HERE, "..", "tests", "data", "vad-golden.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
