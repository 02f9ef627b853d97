"""Which language a text is in, as langdetect and lexilang say (the two
detectors LibreTranslate's /detect runs), computed in libencdec on their
own data, probability for probability:

    from encdec.langid import LanguageIdentifier
    lid = LanguageIdentifier()                    # scripts/fetch-model.sh langid
    lid.detect_langs("Ceci est une phrase.")      # [fr:0.9999...]  langdetect's detect_langs
    lid.detect("Ceci est une phrase.")            # "fr"            langdetect's detect
    lid.detect_words("merci beaucoup", ["fr", "en"])   # ("fr", 0.9)  lexilang's detect

detect_langs and detect are langdetect 1.0.9's at the seed LibreTranslate
fixes (DetectorFactory.seed = 0): its 55 profiles, its random trials drawn
as Python's random.Random draws them; a text without a known n-gram raises
ValueError("No features in text."), as langdetect raises its
LangDetectException. detect_words is lexilang 1.0.7's word vote: ("en", 0)
when it knows no word of the text. The data (langdetect's profiles,
lexilang's word lists) is installed by scripts/fetch-model.sh langid;
$ENCDEC_LANGID names another directory. One identifier serves any number
of threads; the GIL is released while it works.
"""

import ctypes
import os

from . import _native as N
from ._model import data_dir

_MAX = 64   # languages a detect_langs answer can hold (langdetect has 55)


def default_path():
    """Where scripts/fetch-model.sh langid puts the data ($ENCDEC_LANGID first)."""
    return data_dir("ENCDEC_LANGID", "langdetect")


class Language:
    """langdetect's Language: lang and prob; printed "fr:0.9999...", as its are."""

    __slots__ = ("lang", "prob")

    def __init__(self, lang, prob):
        self.lang, self.prob = lang, prob

    def __repr__(self):
        return f"{self.lang}:{self.prob}"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Language) and (self.lang, self.prob) == (other.lang, other.prob)

    def __lt__(self, other):
        return self.prob < other.prob


def _utf8(text, what):
    if not isinstance(text, str):
        raise TypeError(f"{what}: a str, not {type(text).__name__}")
    b = text.encode("utf-8", "surrogatepass")
    if b"\0" in b:
        raise ValueError(f"{what}: the text holds a NUL character")
    return b


class LanguageIdentifier:
    """The identifier loaded from path (default: default_path())."""

    def __init__(self, path=None):
        self._h = None
        path = os.fspath(path) if path is not None else default_path()
        if not os.path.isdir(path):
            raise N.EncdecError(N.ERR_NO_MODEL, f"the language identifier is not installed at {path} "
                                f"(scripts/fetch-model.sh langid installs it; $ENCDEC_LANGID names "
                                f"another directory)")
        h = ctypes.c_void_p()
        N.check(N.lib.encdec_langid_load(os.fsencode(path), ctypes.byref(h)), f"language identifier {path}")
        self._h = h
        self.path = path

    def _handle(self):
        if not self._h:
            raise ValueError("the identifier is closed")
        return self._h

    def detect_langs(self, text):
        """langdetect's detect_langs: the languages above probability 0.1,
        most likely first, as Language(lang, prob)."""
        out, n = (N.TextLanguage * _MAX)(), ctypes.c_int()
        N.check(N.lib.encdec_langid_detect(self._handle(), _utf8(text, "detect_langs"), out, _MAX,
                                           ctypes.byref(n)))
        if n.value == 0:
            raise ValueError("No features in text.")
        return [Language(N.text(out[i].language), out[i].probability) for i in range(n.value)]

    def detect(self, text):
        """langdetect's detect: the most likely language's code."""
        return self.detect_langs(text)[0].lang

    def detect_words(self, text, languages=None):
        """lexilang's detect(text, languages): (code, confidence), the
        language most of the text's words belong to among languages (None:
        all 46), confidence 0.9 over the number tied; ("en", 0) when no word
        is known."""
        allow = None
        if languages is not None:
            codes = [_utf8(c, "languages") for c in languages]
            allow = (ctypes.c_char_p * max(len(codes), 1))(*codes)
        w, found = N.TextLanguage(), ctypes.c_int()
        N.check(N.lib.encdec_langid_words(self._handle(), _utf8(text, "detect_words"), allow,
                                          len(languages) if languages is not None else 0,
                                          ctypes.byref(w), ctypes.byref(found)))
        return (N.text(w.language), w.probability) if found.value else ("en", 0)

    def close(self):
        if self._h:
            N.lib.encdec_langid_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
