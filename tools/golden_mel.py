#!/usr/bin/env python3
"""golden_mel.py - reference log-mels for tests/test_mel.c from openai-whisper.

    .venv/bin/python tools/golden_mel.py [--shared ../shared] [--out tests/data/mel_golden.safetensors]

The reference is whisper.audio.log_mel_spectrogram (torch STFT, float32) and
whisper's own mel_filters.npz. Full [n_mels, 3000] mels are large, so only a
subset of frames is stored, with its frame indices:

  synth_pcm        F32 [40000]        seeded chirp + noise, 2.5 s at 16 kHz
  synth_mel80      F32 [80, 250]      log_mel_spectrogram(synth) (no padding: 250 frames)
  synth30_mel80    F32 [80, F]        log_mel_spectrogram(pad_or_trim(synth)), frames synth30_frames
  synth30_frames   I32 [F]
  jfk_mel80        F32 [80, G]        the same for jfk.wav (int16 / 32768), frames jfk_frames
  jfk_mel128       F32 [128, G]
  jfk_frames       I32 [G]
  filt80_idx       I32 [K]            flat indices of the nonzero entries of mel_filters.npz mel_80
  filt80_val       F32 [K]            their values (every other entry is 0)
  filt128_idx, filt128_val            the same for mel_128
"""
import argparse
import os
import sys
import wave

import numpy as np
import torch
from safetensors.numpy import save_file
import whisper.audio as wa

# ../shared beside the repository (override with $ENCDEC_SHARED)
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

SR = 16000


def synth_signal():
    rng = np.random.default_rng(20240611)
    n = int(2.5 * SR)
    t = np.arange(n) / SR
    f0, f1, dur = 100.0, 7000.0, n / SR
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * dur))
    x = 0.5 * np.sin(phase) * np.hanning(n) ** 0.25 + 0.01 * rng.standard_normal(n)
    return x.astype(np.float32)


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == SR
        raw = w.readframes(w.getnframes())
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def frame_subset(edge):
    """Frames 0..63, 2970..2999, 50 strided ones, and 20 around the end of the audio."""
    f = set(range(64)) | set(range(2970, 3000)) | set(range(7, 3000, 60))
    f |= set(range(edge - 10, edge + 10))
    return np.array(sorted(f), dtype=np.int32)


def mel(x, n_mels):
    return wa.log_mel_spectrogram(torch.from_numpy(x), n_mels=n_mels).numpy().astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=SHARED + "")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(repo, "tests", "data", "mel_golden.safetensors"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = {}

    s = synth_signal()
    out["synth_pcm"] = s
    out["synth_mel80"] = mel(s, 80)
    assert out["synth_mel80"].shape == (80, 250)
    fr = frame_subset(len(s) // 160)
    out["synth30_mel80"] = np.ascontiguousarray(mel(wa.pad_or_trim(s), 80)[:, fr])
    out["synth30_frames"] = fr

    jfk = read_wav(os.path.join(a.shared, "audio", "jfk.wav"))
    fr = frame_subset(len(jfk) // 160)
    padded = wa.pad_or_trim(jfk)
    for nm in (80, 128):
        full = mel(padded, nm)
        assert full.shape == (nm, 3000)
        out["jfk_mel%d" % nm] = np.ascontiguousarray(full[:, fr])
    out["jfk_frames"] = fr

    filt = np.load(os.path.join(a.shared, "assets", "openai-whisper", "mel_filters.npz"))
    for nm in (80, 128):
        f = filt["mel_%d" % nm].reshape(-1)
        idx = np.nonzero(f)[0]
        out["filt%d_idx" % nm] = idx.astype(np.int32)
        out["filt%d_val" % nm] = f[idx].astype(np.float32)

    save_file(out, a.out)
    print("wrote %s (%d bytes)" % (a.out, os.path.getsize(a.out)), file=sys.stderr)


if __name__ == "__main__":
    main()
