"""Goldens for the files of LibreTranslate's /translate_file (tests/test_lt_doc.c):
what its engine's libraries give on the same inputs, never encdec's output.

  wrap:   Python's textwrap.fill(text, 40), as argos-translate-files wraps a
          subtitle's translation;
  srt:    pysrt 1.1.2 (argos-translate-files' reader): the texts it hands to
          the translation (a cue's lines joined by spaces, as
          argos-translate-files cleans them) and the file it saves after
          each cue's text is set to textwrap.fill(translation, 40);
  secure: werkzeug's secure_filename (LibreTranslate's name of an upload).

    python3 -m venv /tmp/gv && /tmp/gv/bin/pip install pysrt==1.1.2 werkzeug
    /tmp/gv/bin/python tools/golden_lt_files.py > tests/data/lt-files/golden.json
"""
import importlib.metadata
import json
import os
import tempfile
import textwrap

import pysrt

from werkzeug.utils import secure_filename

WRAP = [
    "",
    "short",
    "Hello world, this is a sentence that is longer than forty characters in all.",
    "  leading and trailing spaces  ",
    "tabs\tand\tmore\ttabs in a line that goes on and on for a while",
    "well-known state-of-the-art hyphen-ated words go on and on and on",
    "a very-long-hyphenated-compound-word-that-never-ends-at-all-anywhere here",
    "supercalifragilisticexpialidocious-and-antidisestablishmentarianism words",
    "https://example.com/a/very/long/path/that/does/not/break/anywhere/at/all",
    "em--dash between words--and more--dashes -- spaced too",
    "Ünïcödé wörds wïth äccents ärë cöüntéd äs öne chäräctër ëäch, nöt bytës",
    "日本語のテキストは空白がないので長い単語として扱われて切られますがそれでも四十文字で折り返されるはずです",
    "x" * 95,
    "multiple    spaces     between     words     are     kept     as     they     are",
    "line\nbreaks\nbecome\nspaces in the wrapped text of a subtitle cue",
    "numbers 1234567890-1234567890 and 12-34 with hyphens",
    "ab-cd-ef-gh-ij-kl-mn-op-qr-st-uv-wx-yz-ab-cd-ef-gh-ij-kl-mn-op-qr",
    "x-y z-w a-b", "re-do e-mail co-op", "--leading dashes and trailing dashes--",
    "word, word. word! word? 'quoted'--\"dashed\" end",
]

SRT = [
    "1\n00:00:01,000 --> 00:00:02,500\nHello there, my friend.\nHow are you?\n\n"
    "2\n00:00:03,0 --> 00:00:04,000 X1:10 X2:20\nGood.\n\n"
    "3\n00:01:05.250 --> 01:02:03,004\n  indented line  \nand another\n",
    "1\r\n00:00:00,500 --> 00:00:01,000\r\nWindows line ends\r\n\r\n2\r\n00:00:02,000 --> 00:00:03,000\r\n"
    "two\r\nlines\r\n",
    "7\n00:00:01,000 --> 00:00:02,000\nno blank line at the end",
    "1\n00:00:01,000 --> 00:00:02,000\nfirst\n\n\n\n2\n00:00:02,000 --> 00:00:03,000\nafter blank lines\n\n",
    "\ufeff1\n00:00:01,000 --> 00:00:02,000\nwith a byte-order mark\n",
]

OUTS = [
    "Hallo da, mein Freund. Wie geht es dir? Das ist eine lange Übersetzung, die umbrochen wird.",
    "Gut.",
    "eine-sehr-lange-Bindestrich-Wortkette-die-nicht-endet und mehr",
    "",
    "x" * 50,
]

SECURE = ["My cool movie.mov", "../../../etc/passwd", "i contain cool \xfcml\xe4uts.txt", "report.docx",
          "  spaced   out name .txt", "a/b/c.html", "x\\y.srt", "..hidden.txt", "_under_.odt", "tab\there.txt",
          "weird!@#$%^&*()name.txt", "ÆØÅ ßþ Ça.txt", "données été.srt", "a . b.txt", "___.txt"]


def srt_case(content):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.srt"), os.path.join(d, "out.srt")
        with open(src, "w", encoding="utf-8", newline="") as f:
            f.write(content)
        subs = pysrt.open(src)
        units, outs = [], []
        for i, sub in enumerate(subs):
            cleaned = sub.text.replace('\r\n', ' ').replace('\n', ' ').replace('\r', ' ')
            units.append(cleaned)
            out = OUTS[i % len(OUTS)]
            outs.append(out)
            sub.text = textwrap.fill(out, width=40)
        subs.save(dst, encoding="utf-8")
        with open(dst, encoding="utf-8", newline="") as f:
            saved = f.read()
    return {"file": content, "units": units, "out": outs, "saved": saved}


print(json.dumps({
    "versions": {"pysrt": importlib.metadata.version("pysrt"), "werkzeug": importlib.metadata.version("werkzeug")},
    "wrap": [{"text": t, "out": textwrap.fill(t, width=40)} for t in WRAP],
    "srt": [srt_case(c) for c in SRT],
    "secure": [{"in": n, "out": secure_filename(n)} for n in SECURE],
}, ensure_ascii=False, indent=1))
