#!/usr/bin/env python3
"""encdec's text language identifier against the packages LibreTranslate runs
(langdetect 1.0.9's detect_langs at seed 0, lexilang 1.0.7's detect), on the
texts of tests/data/langid/golden.json (sentences of 40 languages, texts that
walk the detectors' rules, random strings), one thread, in one run:

    .venv/bin/python bench/langid_vs_langdetect.py [--rounds 5] [--repeat 3]
        [--lib build/libencdec.so.0] [--model ~/.cache/encdec/models/langdetect]

Rows: "langdetect" (every text, n-gram profiles), "lexilang" (every text,
word lists), "load" (the profiles and lists read). Each round times every
text --repeat times on both sides, engines alternating; the median round is
reported as texts per second (load: seconds), with the answers compared
first (the same languages, probabilities within 1e-12: a bench of a wrong
answer is no bench).
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class TL(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p), ("probability", ctypes.c_double)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libencdec.so.0"))
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/encdec/models/langdetect"))
    a = ap.parse_args()

    import langdetect
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException
    from lexilang.detector import detect as lexi

    DetectorFactory.seed = 0
    lib = ctypes.CDLL(a.lib)
    lib.encdec_last_error.restype = ctypes.c_char_p
    texts = [c["text"] for c in json.load(open(os.path.join(ROOT, "tests", "data", "langid", "golden.json"),
                                               encoding="utf-8"))["cases"]]
    enc = [t.encode() for t in texts]

    def load_ours():
        h = ctypes.c_void_p()
        if lib.encdec_langid_load(a.model.encode(), ctypes.byref(h)):
            sys.exit("encdec_langid_load: %s" % lib.encdec_last_error().decode())
        return h

    h = load_ours()
    out, n, w, found = (TL * 64)(), ctypes.c_int(), TL(), ctypes.c_int()

    def ours_ld(b):
        lib.encdec_langid_detect(h, b, out, 64, ctypes.byref(n))
        return [(out[i].language.decode(), out[i].probability) for i in range(n.value)]

    def theirs_ld(t):
        try:
            return [(x.lang, x.prob) for x in detect_langs(t)]
        except LangDetectException:
            return []

    def ours_lx(b):
        lib.encdec_langid_words(h, b, None, 0, ctypes.byref(w), ctypes.byref(found))
        return (w.language.decode(), w.probability) if found.value else ("en", 0)

    theirs_ld(texts[0])   # langdetect reads its profiles at the first call
    lexi(texts[0])
    for t, b in zip(texts, enc):   # the same answers first
        x, y = ours_ld(b), theirs_ld(t)
        if len(x) != len(y) or any(p[0] != q[0] or abs(p[1] - q[1]) > 1e-12 for p, q in zip(x, y)):
            sys.exit("langdetect differs on %r: %r against %r" % (t[:40], x, y))
        x, y = ours_lx(b), lexi(t)
        if x[0] != y[0] or x[1] != y[1]:
            sys.exit("lexilang differs on %r: %r against %r" % (t[:40], x, y))

    def rate(fn, items):
        t0 = time.perf_counter()
        for _ in range(a.repeat):
            for it in items:
                fn(it)
        return len(items) * a.repeat / (time.perf_counter() - t0)

    rows = {"langdetect": ([], []), "lexilang": ([], []), "load": ([], [])}
    for _ in range(a.rounds):
        rows["langdetect"][0].append(rate(ours_ld, enc))
        rows["langdetect"][1].append(rate(theirs_ld, texts))
        rows["lexilang"][0].append(rate(ours_lx, enc))
        rows["lexilang"][1].append(rate(lexi, texts))
        t0 = time.perf_counter()
        h2 = load_ours()
        rows["load"][0].append(time.perf_counter() - t0)
        lib.encdec_langid_free(h2)
        t0 = time.perf_counter()
        f = DetectorFactory()
        f.load_profile(os.path.join(os.path.dirname(langdetect.__file__), "profiles"))
        rows["load"][1].append(time.perf_counter() - t0)
    print("%d texts, %d rounds of %d passes, one thread" % (len(texts), a.rounds, a.repeat))
    print("%-11s %14s %14s %9s" % ("row", "encdec", "peer", "speed-up"))
    for k in ("langdetect", "lexilang"):
        o, p = statistics.median(rows[k][0]), statistics.median(rows[k][1])
        print("%-11s %10.0f t/s %10.0f t/s %8.1fx" % (k, o, p, o / p))
    o, p = statistics.median(rows["load"][0]), statistics.median(rows["load"][1])
    print("%-11s %12.3f s %12.3f s %8.1fx   (peer: langdetect's profiles only)" % ("load", o, p, p / o))


if __name__ == "__main__":
    main()
