"""LibreTranslate's API on translation models: its own Python client
(libretranslatepy, unchanged) and raw requests against `encdec serve`.

  mBART-50 (tests/data/tiny-random-mbart, tokenizer and 52 language codes of
  tools/golden_text_tok.py): /languages in ISO 639-1, /translate (form body
  from the client, JSON bodies, a list of texts, alternatives) giving what
  `encdec translate --beam 4` gives (whose beams test_bart_golden pins to
  transformers' generate), and LibreTranslate's errors ({"error": ...}).
  Argos Translate packages (tests/data/tiny-random-argos, -prefix: a
  multilingual one with a target_prefix, and -bpe: tokenized by bpe.model):
  their pair, and their translations as encdec translate's.
  Marian (tests/data/tiny-random-marian, en -> de in its
  tokenizer_config.json, and a >>de<< token): the pair, and a target it
  lacks refused. Its CTranslate2 directory: translations holding <unk>
  replaced as LibreTranslate's engine gives them
  (tools/golden_lt_unknowns.py).

    tests/server/run.sh tests/server/test_libretranslate.py build/encdec
"""
import html
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from common import HERE, Server

FAILED = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILED.append(what)


def post(url, body, ctype):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def cli(binary, model, src, tgt, text, ret=1):
    """encdec translate as Argos Translate asks CTranslate2 (beam 4,
    length_penalty 0.2, beam ends with 4 finished, 1 token at least,
    unknowns replaced)."""
    out = subprocess.run([binary, "translate", "-m", model, "--src-lang", src, "--tgt-lang", tgt,
                          "--beam", "4", "--num-return", str(ret), "--max-new-tokens", "63",
                          "--length-penalty", "0.2", "--early-stopping", "--min-new-tokens", "1",
                          "--replace-unknowns", text],
                         capture_output=True, text=True, timeout=120)
    return out.stdout.splitlines()


PUNCT = "!?.,;\u3002"


def touched(source, t):
    """A text translation as LibreTranslate hands it out (server/lt_format.h's
    rules, which tests/test_lt_format.c checks one by one): the source's
    final punctuation, a one-word source's repeated-word salad cut, the
    source's letter case; then its HTML entities unescaped."""
    source = source.strip()
    if not source or not t:
        return source
    if source[-1] in PUNCT and t[-1] != source[-1]:
        t = (t[:-1] if t[-1] in PUNCT else t) + source[-1]
    elif source[-1] not in PUNCT and t[-1] in PUNCT:
        t = t[:-1]
    words = t.split()
    if len(source) < 20 and " " not in source and " " in t and \
            max(words.count(w) for w in words) >= 2 * len(set(words)):
        t = words[0]
    if source.islower():
        t = t.lower()
    elif source.isupper():
        t = t.upper()
    elif not t:
        t = source
    elif source[0].islower() or source[0].isupper():
        t = (t[0].lower() if source[0].islower() else t[0].upper()) + t[1:]
    return html.unescape(t)


def unique(alts, main):
    """LibreTranslate's alternatives: empty ones, the translation and repeats left out."""
    out = []
    for a in alts:
        if a and a != main and a not in out:
            out.append(a)
    return out


def mbart(binary):
    from libretranslatepy import LibreTranslateAPI

    d = os.path.join(HERE, "..", "data", "tiny-random-mbart")
    texts = json.load(open(os.path.join(HERE, "..", "data", "bart-golden", "mbart.json"),
                           encoding="utf-8"))["api"]["inputs"]
    s = Server(binary, d)
    try:
        lt = LibreTranslateAPI(s.url + "/")
        langs = lt.languages()
        codes = [x["code"] for x in langs]
        fr = [x for x in langs if x["code"] == "fr"]
        check(len(langs) == 52 and "ar" in codes and "zh-Hans" in codes and "zh" not in codes and fr
              and fr[0]["name"] == "French" and "de" in fr[0]["targets"] and "fr" not in fr[0]["targets"],
              "languages: mBART-50's 52, ISO 639-1 codes (zh as LibreTranslate's API spells it), names, "
              "every other one a target")
        zh_fr = [post(s.url + "/translate", json.dumps({"q": texts[0], "source": code, "target": "fr"}).encode(),
                      "application/json") for code in ("zh", "zh-Hans", "ZH-HANS", "zh_CN")]
        check(all(st == 200 for st, _ in zh_fr) and len({o["translatedText"] for _, o in zh_fr}) == 1,
              "translate: zh, zh-Hans (any case) and the model's zh_CN are one language (%r)" % zh_fr[0][1])
        want = [touched(texts[0], t) for t in cli(binary, d, "fr_XX", "de_DE", texts[0])]
        got = lt.translate(texts[0], "fr", "de")
        check([got] == want, "translate (the client's form body): as encdec translate --beam 4, touched (%r)" % want)
        st, out = post(s.url + "/translate", json.dumps({"q": texts, "source": "fr_XX", "target": "de_DE",
                                                         "format": "text", "alternatives": 1}).encode(),
                       "application/json")
        want2 = [[touched(t, w) for w in cli(binary, d, "fr_XX", "de_DE", t, 2)] for t in texts]
        check(st == 200 and out["translatedText"] == [w[0] for w in want2]
              and out["alternatives"] == [unique(w[1:], w[0]) for w in want2],
              "translate: a list of texts in the model's codes, one alternative each")
        for body, code, what in [
            ({"q": "x", "source": "fr", "target": "xx"}, 400, "target language xx is not supported"),
            ({"source": "fr", "target": "de"}, 400, "missing q"),
            ({"q": "x", "source": "fr"}, 400, "missing target"),
            ({"q": "x", "source": "fr", "target": "de", "format": "xml"}, 400, "text or html"),
            ({"q": "<b>x</b>", "source": "fr", "target": "de", "format": "html", "alternatives": 1}, 400,
             "for format text only"),
            ({"q": "<p>x</p>" * 600, "source": "fr", "target": "de", "format": "html"}, 400,
             "at most 512 texts"),
            ({"q": ["x", 3], "source": "fr", "target": "de"}, 400, "q must be a string"),
            ({"q": "x", "source": "fr", "target": "de", "alternatives": 99}, 400, "alternatives"),
            ({"q": " ".join("w%d" % i for i in range(400)), "source": "fr", "target": "de"}, 400,
             "the model accepts at most 64"),
            ({"q": "Aa. " * 1100, "source": "fr", "target": "de"}, 400, "at most 1024 sentences"),
        ]:
            st, out = post(s.url + "/translate", json.dumps(body).encode(), "application/json")
            check(st == code and what in out.get("error", ""), "translate refuses %r: %s (%r)" % (
                {k: v if len(str(v)) < 40 else "..." for k, v in body.items()}, what, out))
        # format html: each text node translated as a text alone, the markup kept
        a, b = texts[0], texts[1]
        doc = ("<!DOCTYPE html><p class=\"x\">%s <b>%s</b></p>\n<code>keep me</code>"
               "<span translate=\"no\">Keep</span><p>42</p>" % (html.escape(a, False), html.escape(b, False)))
        ta, tb = cli(binary, d, "fr_XX", "de_DE", a)[0], cli(binary, d, "fr_XX", "de_DE", b)[0]
        want = ("<!DOCTYPE html><p class=\"x\">%s <b>%s</b></p>\n<code>keep me</code>"
                "<span translate=\"no\">Keep</span><p>42</p>" % (html.escape(ta, False), html.escape(tb, False)))
        st, out = post(s.url + "/translate", json.dumps({"q": [doc, "<br>"], "source": "fr", "target": "de",
                                                         "format": "html"}).encode(), "application/json")
        check(st == 200 and out["translatedText"] == [want, "<br>"],
              "translate format html: text nodes as texts alone, markup and kept elements as they were")
        # entities: the node the model gets is the text html.unescape reads
        # (its sentence, then " ..." kept: no letter)
        node = "caf&eacute; &mdash; &laquo;%s&raquo; &hellip;" % html.escape(a, False)
        tn = cli(binary, d, "fr_XX", "de_DE", html.unescape(node)[:-2])[0]
        st, out = post(s.url + "/translate", json.dumps({"q": "<i>%s</i>" % node, "source": "fr", "target": "de",
                                                         "format": "html"}).encode(), "application/json")
        check(st == 200 and out["translatedText"] == "<i>%s</i>" % html.escape(tn + " \u2026", False),
              "translate format html: entities decoded as html.unescape does (%r)" % out)
        # texts of spaces and emoji alone (LibreTranslate's detect_translatable):
        # back as they are, no alternatives, "en" at 0 for auto (no identifier needed)
        emo = "\U0001F600\U0001F389 \U0001F44D\U0001F3FD"
        st, out = post(s.url + "/translate", json.dumps({"q": emo, "source": "auto", "target": "fr",
                                                         "alternatives": 2}).encode(), "application/json")
        check(st == 200 and out == {"translatedText": emo, "alternatives": [],
                                    "detectedLanguage": {"confidence": 0, "language": "en"}},
              "translate: emoji alone come back, en at 0 detected (%r)" % out)
        st, out = post(s.url + "/translate", json.dumps({"q": [emo, " "], "source": "de", "target": "fr"}).encode(),
                       "application/json")
        check(st == 200 and out == {"translatedText": [emo, " "]}, "translate: a list of them (%r)" % out)
        st, out = post(s.url + "/translate", json.dumps({"q": [emo, texts[0]], "source": "fr", "target": "de"}).encode(),
                       "application/json")
        check(st == 200 and out["translatedText"][1] == want2[0][0],
              "translate: one text of a list has words: every text is translated (%r)" % out)
        # a text of lines and sentences: each sentence translated alone, what is between
        # them kept; longer than the model's 64 positions together
        doc = "%s  %s\n\n142. %s\n%s %s" % (a, b, texts[2], a, b)
        sents = [a, b, texts[2], a, b]
        tr = [cli(binary, d, "fr_XX", "de_DE", x, 2) for x in sents]
        st, out = post(s.url + "/translate", json.dumps({"q": doc, "source": "fr", "target": "de",
                                                         "alternatives": 1}).encode(), "application/json")
        want = touched(doc, "%s  %s\n\n142. %s\n%s %s" % tuple(t[0] for t in tr))
        alt = touched(doc, "%s  %s\n\n142. %s\n%s %s" % tuple(t[1] for t in tr))
        check(st == 200 and out["translatedText"] == want and out["alternatives"] == unique([alt], want),
              "translate: lines and sentences each translated alone, the rest kept (%r)" % out)
        st, out = post(s.url + "/translate", b"q=%3Cp%3EBonjour%3C%2Fp%3E&source=fr&target=de&format=html",
                       "application/x-www-form-urlencoded")
        check(st == 200 and out["translatedText"].startswith("<p>") and out["translatedText"].endswith("</p>"),
              "translate format html from a form (%r)" % out)
        # a form's line breaks as LibreTranslate makes them: each one \n, the last dropped
        st, out = post(s.url + "/translate", b"q=%s%%E2%%80%%A8%s%%0D%%0A&source=fr&target=de" % (
            a.encode(), b.encode()), "application/x-www-form-urlencoded")
        st2, out2 = post(s.url + "/translate", json.dumps({"q": "%s\n%s" % (a, b), "source": "fr",
                                                          "target": "de"}).encode(), "application/json")
        check(st == 200 and st2 == 200 and out["translatedText"] == out2["translatedText"]
              and out["translatedText"].count("\n") == 1,
              "translate from a form: U+2028 as \\n, the last line break (CRLF) dropped (%r)" % out)
        # LibreTranslate's page and clients: its settings (files on), suggestions refused as it refuses them off
        with urllib.request.urlopen(s.url + "/frontend/settings", timeout=60) as r:
            fs = json.loads(r.read())
        check(fs["charLimit"] == -1 and fs["apiKeys"] is False and fs["keyRequired"] is False
              and fs["suggestions"] is False and fs["filesTranslation"] is True
              and fs["supportedFilesFormat"] == [".txt", ".odt", ".odp", ".docx", ".pptx", ".epub", ".html", ".srt"]
              and fs["language"]["source"] == {"code": "ar", "name": "Arabic"}
              and fs["language"]["target"]["code"] == "cs",
              "frontend/settings: no keys or suggestions, argos-translate-files' formats; the first language "
              "and its first target (%r)" % fs)
        st, out = post(s.url + "/suggest", b"q=a&s=b&source=fr&target=de", "application/x-www-form-urlencoded")
        check(st == 403 and out["error"] == "Suggestions are disabled on this server.", "suggest: 403 (%r)" % out)
        st, out = post(s.url + "/translate_file", *form({"source": "fr", "target": "de"}, {}))
        check(st == 400 and out["error"] == "Invalid request: missing file parameter",
              "translate_file: a form without its file (%r)" % out)
        st, out = post(s.url + "/translate_file", b"--x\r\n\r\n--x--\r\n", "multipart/form-data; boundary=x")
        check(st == 400 and "multipart/form-data" in out["error"], "translate_file: a broken form (%r)" % out)
        st, out = post(s.url + "/translate_file", b"{}", "application/json")
        check(st == 400 and "multipart/form-data" in out["error"], "translate_file: JSON (%r)" % out)
        st, out = post(s.url + "/translate", b"{not json", "application/json")
        check(st == 400 and "JSON" in out["error"], "translate: malformed JSON")
        st, out = post(s.url + "/translate", b"q=%FF%FE+12.+Bonjour.&source=fr&target=de",
                       "application/x-www-form-urlencoded")
        check(st == 400 and "not UTF-8 (byte 0)" in out["error"], "translate: a text that is no UTF-8 (%r)" % out)
        # a value quoted in an error stays UTF-8 (a byte that is none, or a character cut at 40 bytes)
        st, out = post(s.url + "/translate", b"q=x&source=fr&target=%FF", "application/x-www-form-urlencoded")
        check(st == 400 and "target language  is not supported" in out["error"], "translate: target %%FF (%r)" % out)
        st, out = post(s.url + "/translate", ("q=x&source=fr&target=" + "\u00e9" * 30).encode(),
                       "application/x-www-form-urlencoded")
        check(st == 400 and "\u00e9" * 20 + " is not" in out["error"], "translate: a long target cut whole (%r)" % out)
        st, out = post(s.url + "/translate", b"q=%zz&target=de", "application/x-www-form-urlencoded")
        check(st == 400 and "escape" in out["error"], "translate: a malformed form")
    finally:
        check(s.stop() == 0, "mBART: exit status 0")


def detection(binary):
    """POST /detect and source "auto" as LibreTranslate answers them
    (tests/data/langid/golden.json's "lt", tools/golden_langid.py: its
    rules over langdetect and lexilang themselves), on mBART-50's languages;
    without the identifier installed, /detect is a 400 and auto the
    tokenizer's source."""
    from libretranslatepy import LibreTranslateAPI

    d = os.path.join(HERE, "..", "data", "tiny-random-mbart")
    g = json.load(open(os.path.join(HERE, "..", "data", "langid", "golden.json"), encoding="utf-8"))["lt"]
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    lid = os.environ.get("ENCDEC_LANGID") or os.path.join(cache, "encdec", "models", "langdetect")
    if not os.path.isfile(os.path.join(lid, "words.tsv")):
        print("skip: the language identifier is not installed (scripts/fetch-model.sh langid)")
        s = Server(binary, d, "--langid", "/nonexistent-langid")
        try:
            st, out = post(s.url + "/detect", b"q=Bonjour", "application/x-www-form-urlencoded")
            check(st == 500, "detect: a --langid that is not there: 500 (%r)" % out)
        finally:
            check(s.stop() == 0, "detection: exit status 0")
        return
    s = Server(binary, d, "--langid", lid)
    try:
        with urllib.request.urlopen(s.url + "/languages", timeout=60) as r:
            codes = [x["code"] for x in json.loads(r.read())]
        iso2model = {"zh-Hans": "zh", "zh-Hant": "zt", "pt-BR": "pb"}
        check([iso2model.get(c, c) for c in codes] == g["codes"], "detect: the server's languages are the golden's")
        lt = LibreTranslateAPI(s.url + "/")
        for q, want in g["detect"]:
            st, out = post(s.url + "/detect", json.dumps({"q": q}).encode(), "application/json")
            check(st == 200 and out == want, "detect %r: %r (%r)" % (q if len(str(q)) < 40 else "...", want, out))
        q, want = g["detect"][0]
        check(lt.detect(q) == want, "detect: LibreTranslate's own client (a form)")
        for q, want in g["auto"]:   # (nothing known: "en" at 0, which mBART-50 has)
            want_src = want["language"]
            tgt = "fr" if want_src != "fr" else "de"
            st, out = post(s.url + "/translate", json.dumps({"q": q, "source": "auto", "target": tgt}).encode(),
                           "application/json")
            direct = post(s.url + "/translate", json.dumps({"q": q, "source": want_src, "target": tgt}).encode(),
                          "application/json")[1]
            dl = [want] * len(q) if isinstance(q, list) else want
            check(st == 200 and out.get("detectedLanguage") == dl
                  and out["translatedText"] == direct["translatedText"],
                  "translate auto %r: detectedLanguage %r, the translation from it (%r)" % (
                      q if len(str(q)) < 40 else "...", want, out.get("detectedLanguage")))
        st, out = post(s.url + "/detect", b"x=1", "application/x-www-form-urlencoded")
        check(st == 400 and "missing q" in out["error"], "detect: no q (%r)" % out)
        st, out = post(s.url + "/detect", b"q=%FF", "application/x-www-form-urlencoded")
        check(st == 400 and "not UTF-8" in out["error"], "detect: no UTF-8 (%r)" % out)
        st, out = post(s.url + "/detect", json.dumps({"q": ["a", 3]}).encode(), "application/json")
        check(st == 400 and "q must be a string" in out["error"], "detect: q of a number (%r)" % out)
    finally:
        check(s.stop() == 0, "detection: exit status 0")
    # the Marian pair: only its source may be detected
    s = Server(binary, os.path.join(HERE, "..", "data", "tiny-random-marian"), "--langid", lid)
    try:
        st, out = post(s.url + "/translate", json.dumps({"q": "Der Zug fährt um acht Uhr ab und kommt vor Mittag an.",
                                                         "source": "auto", "target": "de"}).encode(),
                       "application/json")
        check(st == 400 and "translates from en" in out["error"], "translate auto: Marian en->de given German (%r)" % out)
        st, out = post(s.url + "/translate", json.dumps({"q": "The train leaves at eight in the morning.",
                                                         "source": "auto", "target": "de"}).encode(),
                       "application/json")
        check(st == 200 and out["detectedLanguage"] == {"confidence": 100, "language": "en"},
              "translate auto: Marian given English (%r)" % out)
    finally:
        check(s.stop() == 0, "detection (Marian): exit status 0")


def argos(binary, name="tiny-random-argos"):
    """An Argos Translate package as LibreTranslate runs it (tests/data/
    tiny-random-argos: metadata.json's pair, its SentencePiece model, its
    CTranslate2 model/; tiny-random-argos-prefix: a multilingual one, its
    target_prefix token forced first; tiny-random-argos-bpe: tokenized by
    bpe.model, Moses + BPE, which scripts/fetch-model.sh moses's data serve):
    /languages names the pair;
    /translate gives, touched as LibreTranslate touches it, what `encdec
    translate` gives with no search option (a package's: Argos Translate's
    search; the package's own texts
    are held to CTranslate2's by tests/test_argos.c), and for the
    multilingual package what CTranslate2 gives Argos Translate for it
    (tools/gen_tiny_argos_prefix.py: its translate_batch with the target
    prefix, the prefix's token left out of the text)."""
    d = os.path.join(HERE, "..", "data", name)
    prefix = name.endswith("-prefix")
    if prefix:
        with open(os.path.join(HERE, "..", "data", "bart-golden", "argos-prefix.json"), encoding="utf-8") as f:
            cases = [(c["text"], c["translation"]) for c in json.load(f)["server"] if c["translation"]]
    else:
        cases = [("The house is wonderful.", None)]
    s = Server(binary, d)
    try:
        with urllib.request.urlopen(s.url + "/languages", timeout=60) as r:
            langs = json.loads(r.read())
        check(langs == [{"code": "en", "name": "English", "targets": ["de"]}],
              "%s: languages are the package's pair (%r)" % (name, langs))
        for text, want in cases:
            # encdec translate with no search option: the package's, Argos Translate's
            out = subprocess.run([binary, "translate", "-m", d, text], capture_output=True, text=True, timeout=120)
            line = out.stdout.splitlines()[0] if out.stdout else None
            if want is None:
                want = line
            else:
                check(line == want, "%s: encdec translate as CTranslate2 for Argos Translate (%r)" % (name, line))
            want = touched(text, want) if want else None
            st, got = post(s.url + "/translate", json.dumps({"q": text, "source": "en", "target": "de"}).encode(),
                           "application/json")
            check(st == 200 and want and got["translatedText"] == want,
                  "%s: translate as %s (%r, %r)" % (name, "CTranslate2 for Argos Translate" if prefix else
                                                    "encdec translate with Argos Translate's search", got, want))
        check(len(cases) >= 1, "%s: a translation to compare" % name)
    finally:
        check(s.stop() == 0, "%s: exit status 0" % name)


def form(fields, files):
    """A multipart/form-data body: (body, content type)."""
    b = "encdec-test-boundary"
    out = []
    for k, v in fields.items():
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (b, k, v)).encode())
    for k, (name, data) in files.items():
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n" % (b, k, name)).encode() + data + b"\r\n")
    out.append(("--%s--\r\n" % b).encode())
    return b"".join(out), "multipart/form-data; boundary=" + b


def fetch(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.status, r.headers, r.read()


def translate_file(s, name, data, source="en", target="de"):
    body, ctype = form({"source": source, "target": target}, {"file": (name, data)})
    return post(s.url + "/translate_file", body, ctype)


def files(binary):
    """POST /translate_file with the Argos package: each text of a .txt,
    .srt, .html and .docx translated as /translate translates it (encdec
    translate with Argos Translate's search: the oracle of argos()), the
    rest of the file as argos-translate-files leaves it (subtitles saved as
    pysrt saves them, wrapped by Python's textwrap at 40; the document's
    markup and other ZIP entries kept), fetched from translatedFileUrl under
    the name argos-translate-files gives it; LibreTranslate's refusals."""
    import io
    import textwrap
    import zipfile
    from xml.sax.saxutils import escape

    d = os.path.join(HERE, "..", "data", "tiny-random-argos")
    memo = {}

    def tr(text):
        if text not in memo:
            out = subprocess.run([binary, "translate", "-m", d, "--beam", "4", "--max-new-tokens", "127",
                                  "--length-penalty", "0.2", "--early-stopping", "--min-new-tokens", "1",
                                  "--replace-unknowns", text], capture_output=True, text=True, timeout=120)
            memo[text] = out.stdout.splitlines()[0]
        return memo[text]

    s = Server(binary, d)
    try:
        a, b = "The house is wonderful.", "Good morning."
        st, out = translate_file(s, "notes.txt", a.encode())
        url = out.get("translatedFileUrl", "")
        check(st == 200 and url.startswith(s.url + "/download_file/") and url.endswith(".notes_de.txt"),
              "translate_file: a URL to the translated file (%r)" % out)
        st, h, got = fetch(url)
        check(st == 200 and got.decode() == tr(a) and h["Content-Disposition"] == "attachment; filename=notes_de.txt"
              and h["Content-Type"].startswith("text/plain"), "txt: the text translated (%r, %r)" % (got, dict(h)))

        st, out = translate_file(s, "notes.txt", a.encode(), source="auto")
        got = fetch(out["translatedFileUrl"])[2].decode() if st == 200 else None
        check(got == tr(a), "txt: source auto, detected from the file's text (%r)" % out)

        srt = "1\n00:00:01,000 --> 00:00:02,500\nThe house\nis wonderful.\n\n2\n00:00:03,0 --> 00:00:04,000\n%s\n" % b
        st, out = translate_file(s, "film.srt", srt.encode())
        want = "1\n00:00:01,000 --> 00:00:02,500\n%s\n\n2\n00:00:03,000 --> 00:00:04,000\n%s\n\n" % (
            textwrap.fill(tr(a), 40), textwrap.fill(tr(b), 40))
        got = fetch(out["translatedFileUrl"])[2].decode() if st == 200 else None
        check(got == want, "srt: each cue's lines translated as one text, wrapped at 40 (%r)" % got)

        page = "<!DOCTYPE html><p>%s <b>%s</b></p><script>x()</script>" % (a, b)
        st, out = translate_file(s, "page.html", page.encode())
        want = "<!DOCTYPE html><p>%s <b>%s</b></p><script>x()</script>" % (escape(tr(a)), escape(tr(b)))
        got = fetch(out["translatedFileUrl"])[2].decode() if st == 200 else None
        check(got == want, "html: the text nodes translated, the markup kept (%r)" % got)

        doc = ('<?xml version="1.0" encoding="UTF-8"?>\n<w:document><w:body><w:p><w:r><w:t>%s</w:t></w:r>'
               '<w:r><w:instrText> PAGE </w:instrText></w:r></w:p><w:p><w:r><w:t xml:space="preserve"> %s </w:t>'
               '</w:r></w:p></w:body></w:document>')
        png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("[Content_Types].xml", "<Types/>", compress_type=zipfile.ZIP_DEFLATED)
            z.writestr("word/document.xml", doc % (a, b), compress_type=zipfile.ZIP_DEFLATED)
            z.writestr("word/media/image1.png", png, compress_type=zipfile.ZIP_STORED)
            z.writestr("docProps/core.xml", "<dc:title>%s</dc:title>" % a, compress_type=zipfile.ZIP_DEFLATED)
        st, out = translate_file(s, "My Report.docx", buf.getvalue())
        ok = st == 200 and out["translatedFileUrl"].endswith(".My_Report_de.docx")
        if ok:
            st, h, data = fetch(out["translatedFileUrl"])
            z = zipfile.ZipFile(io.BytesIO(data))
            infos = z.infolist()
            ok = ([i.filename for i in infos] == ["[Content_Types].xml", "word/document.xml", "word/media/image1.png",
                                                  "docProps/core.xml"]
                  and [i.compress_type for i in infos] == [8, 8, 0, 8]
                  and z.read("word/document.xml").decode() == doc % (escape(tr(a)), escape(tr(b)))
                  and z.read("word/media/image1.png") == png and z.read("docProps/core.xml").decode() ==
                  "<dc:title>%s</dc:title>" % a
                  and h["Content-Disposition"] == "attachment; filename=My_Report_de.docx")
        check(ok, "docx: word/document.xml's texts translated, field codes and other entries kept (%r)" % out)

        st, out = translate_file(s, "scan.pdf", b"%PDF-1.4")
        check(st == 400 and out["error"] == "Invalid request: file format not supported", "pdf: refused (%r)" % out)
        st, out = translate_file(s, "bad.docx", b"PK\x03\x04 but not an archive")
        check(st == 400 and "ZIP" in out["error"], "docx: not an archive (%r)" % out)
        st, out = translate_file(s, "latin1.txt", "caf\xe9".encode("latin-1"))
        check(st == 400 and "not UTF-8" in out["error"], "txt: not UTF-8 (%r)" % out)
        st, out = translate_file(s, "a.txt", b"x", target="fr")
        check(st == 400 and "not supported" in out["error"], "a target the package lacks (%r)" % out)
        body, ctype = form({"target": "de"}, {"file": ("a.txt", b"x")})
        st, out = post(s.url + "/translate_file", body, ctype)
        check(st == 400 and out["error"] == "Invalid request: missing source parameter", "no source (%r)" % out)
        try:
            fetch(s.url + "/download_file/00000000-0000-4000-8000-000000000000.a_de.txt")
            check(False, "download_file: an unknown name")
        except urllib.error.HTTPError as e:
            check(e.code == 404 and "no such file" in json.loads(e.read())["error"], "download_file: unknown: 404")
    finally:
        check(s.stop() == 0, "files: exit status 0")
    s = Server(binary, d, "--disable-files-translation")
    try:
        st, out = translate_file(s, "notes.txt", b"x")
        check(st == 403 and out["error"] == "Files translation are disabled on this server.",
              "--disable-files-translation: 403 (%r)" % out)
        with urllib.request.urlopen(s.url + "/frontend/settings", timeout=60) as r:
            fs = json.loads(r.read())
        check(fs["filesTranslation"] is False and fs["supportedFilesFormat"] == [],
              "--disable-files-translation: the settings say so (%r)" % fs)
    finally:
        check(s.stop() == 0, "files off: exit status 0")


def marian(binary):
    from libretranslatepy import LibreTranslateAPI

    d = os.path.join(HERE, "..", "data", "tiny-random-marian")
    s = Server(binary, d)
    try:
        lt = LibreTranslateAPI(s.url + "/")
        langs = lt.languages()
        check(len(langs) == 1 and langs[0]["code"] == "en" and langs[0]["targets"] == ["de"],
              "languages: Marian's one pair from tokenizer_config.json (%r)" % langs)
        got = lt.translate("The house is wonderful.", "en", "de")
        check(isinstance(got, str), "translate: Marian en -> de")
        st, out = post(s.url + "/translate", json.dumps({"q": "x", "source": "en", "target": "fr"}).encode(),
                       "application/json")
        check(st == 400 and "not supported" in out["error"], "translate: a target Marian lacks (%r)" % out)
    finally:
        check(s.stop() == 0, "Marian: exit status 0")


def unknowns(binary):
    """The <unk> a translation holds written as Argos Translate writes it
    (tools/golden_lt_unknowns.py: CTranslate2's replace_unknowns on the
    random Marian's CTranslate2 directory, each case generating only <unk>,
    </s> and six tokens): the directory's files beside a generation config
    whose bad_words_ids suppress the rest, as the golden's
    suppress_sequences do; the best hypothesis and the next as the
    alternative, white space at the ends stripped, touched as
    LibreTranslate touches them."""
    g = json.load(open(os.path.join(HERE, "..", "data", "bart-golden", "lt-unknowns.json"), encoding="utf-8"))
    src = os.path.join(HERE, "..", "..", g["model_dir"])
    vocab = json.load(open(os.path.join(src, "shared_vocabulary.json"), encoding="utf-8"))
    with tempfile.TemporaryDirectory() as d:
        for f in os.listdir(src):
            os.symlink(os.path.realpath(os.path.join(src, f)), os.path.join(d, f))
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"bad_words_ids": [[i] for i, t in enumerate(vocab) if t not in g["allowed"]]}, f)
        s = Server(binary, d)
        try:
            texts = [c["text"] for c in g["cases"]]
            st, out = post(s.url + "/translate", json.dumps({"q": texts, "source": "en", "target": "de",
                                                             "alternatives": 1}).encode(), "application/json")
            best = [touched(c["text"], c["hypotheses"][0]["text"].strip()) for c in g["cases"]]
            alt = [[touched(c["text"], c["hypotheses"][1]["text"].strip())] for c in g["cases"]]
            check(st == 200 and out["translatedText"] == best
                  and out["alternatives"] == [unique(a, b) for a, b in zip(alt, best)],
                  "translate: %d texts' <unk> replaced as LibreTranslate's engine replaces them" % len(texts))
            if st == 200:
                for t, w in zip(out["translatedText"], best):
                    if t != w:
                        print("     %r, not %r" % (t, w))
        finally:
            check(s.stop() == 0, "Marian with unknowns: exit status 0")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    try:
        import libretranslatepy  # noqa: F401
    except ImportError:
        print("skip: libretranslatepy is not installed (scripts/venv-client.sh installs it)")
        return 77
    mbart(sys.argv[1])
    marian(sys.argv[1])
    argos(sys.argv[1])
    argos(sys.argv[1], "tiny-random-argos-prefix")
    argos(sys.argv[1], "tiny-random-argos-bpe")   # tokenized by bpe.model: Moses + BPE
    files(sys.argv[1])
    detection(sys.argv[1])
    unknowns(sys.argv[1])
    print("%d failed" % len(FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
