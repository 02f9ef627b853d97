#!/usr/bin/env python3
"""Writes tests/data/spm_golden.json: the ids and decoded texts of a corpus of
tricky strings under three SentencePiece unigram tokenizers, computed by the
reference libraries that src/tok/spm*.c reproduces:

  slow  HF transformers' T5Tokenizer(spiece.model, legacy=True), i.e. the
        `sentencepiece` library per text chunk, with <extra_id_N>, </s>, <pad>
        and <unk> spellings split out first (what spm_load_model must equal);
  spm   sentencepiece.SentencePieceProcessor(...).encode(s) alone (no special
        spellings; stored only where it differs from slow);
  fast  tokenizers.Tokenizer.from_file(tokenizer.json) (what spm_load_json
        must equal).

Tokenizers: the real T5 spiece.model from ../shared/assets/t5-tokenizer (its
tokenizer.json is made in a temporary folder with T5TokenizerFast(...,
extra_ids=100, legacy=True).save_pretrained and not kept), and the committed
tests/data/spm/t5like.* and bytefb.* (made by tools/gen_small_spm.py).

Run from the repository root (deterministic: the corpus is fixed plus strings
drawn from random.Random(SEED), some built around grapheme-cluster boundaries):

    .venv/bin/python tools/golden_spm.py            # writes tests/data/spm_golden.json
    .venv/bin/python tools/golden_spm.py --tables   # writes src/tok/spm_gc_tables.c

--tables writes the Unicode property tables of grapheme-cluster segmentation
(Grapheme_Cluster_Break, Extended_Pictographic, Indic_Conjunct_Break) that the
`tokenizers` Precompiled normaliser depends on, from the `regex` module's
Unicode data.

Per case and tokenizer the JSON holds: slow (T5Tokenizer(s).input_ids, </s>
appended unless already last), slow_noeos (add_special_tokens=False; stored only
where it is not slow[:-1], i.e. where the text ends with </s>), spm
(when different from slow_noeos), fast (Tokenizer.encode(s).ids, </s> always
appended; without it the ids are fast[:-1], checked here), and decoded
texts [skip_special_tokens=True, False] of slow ids by T5Tokenizer.decode
(dec_slow) and of fast ids by Tokenizer.decode (dec_fast, stored only where it
differs from dec_slow). Texts are stored as UTF-8 hex too ("hex"), as JSON
strings cannot carry NUL through cJSON. "decode" cases are random id lists
decoded by both references. "variants" holds fast ids and decoded texts for a
subset of the texts under pipeline variants of bytefb.tokenizer.json (see
VARIANTS).
"""
import json
import os
import random
import shutil
import sys
import tempfile
import warnings

SEED = 20261122
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(ROOT, "..", "shared"))
T5_MODEL = os.path.join(SHARED, "assets", "t5-tokenizer", "spiece.model")
SMALL = os.path.join(ROOT, "tests", "data", "spm")
OUT = os.path.join(ROOT, "tests", "data", "spm_golden.json")
TABLES = os.path.join(ROOT, "src", "tok", "spm_gc_tables.c")

CORPUS = [
    # empty and whitespace
    "", " ", "   ", "\t", "\n", "\r\n", " \t \n ", "\u3000", "\u00a0",
    # plain
    "a", "Hello world", "hello", "The quick brown fox jumps over the lazy dog.",
    "translate English to German: The house is wonderful.",
    "summarize: studies have shown that owning a dog is good for you",
    "question: What is the capital of France? context: Paris is the capital of France.",
    "cola sentence: The course is jumping well.",
    "das Haus ist wunderbar und der Garten war grün",
    "la maison est merveilleuse et le jardin était vert",
    # spaces, tabs, newlines
    "  leading two spaces", "trailing spaces   ", "multiple    inner     spaces", " a ",
    "a  b", "tab\tseparated\t\tvalues", "\tleading tab", "line one\nline two\n\n\nline five",
    "\r\n windows line end\r\n", " \t \n mixed whitespace \n\t ",
    "a\u00a0non-breaking\u3000ideographic\u2009thin space", "zero\u200bwidth\u200cnon\u200djoiner",
    "\u2028line separator\u2029paragraph", "a\x1cb\x1dc\x1ed\x1fe",
    # U+2581 itself
    "\u2581", "\u2581\u2581", "a\u2581\u2581b", "\u2581hello", "hello\u2581", "\u2581 \u2581",
    # accents, composed and decomposed
    "café", "cafe\u0301", "naïve", "nai\u0308ve", "Ångström", "A\u030angstro\u0308m",
    "Straße", "Mädchen über schön Größe", "garçon français déjà", "mañana año niño",
    "e\u0301\u0302\u0303", "o\u0308\u0301", "\u0301 leading combining", "Ａ\u0301", "ﬁ\u0301",
    "Zalgo: Z\u0351\u036b\u0343a\u0352l\u0357g\u035bo\u0315",
    # CJK and other scripts
    "房子很好", "花园是绿色的", "日本語のテキストです。", "カタカナ ひらがな", "한국어 텍스트", "\u1112\u1161\u11ab\u1100\u1173\u11af",
    "中文，标点。「引号」", "Привет, мир!", "Καλημέρα κόσμε", "مرحبا بالعالم", "بِسْمِ اللَّهِ",
    "שָׁלוֹם עולם", "नमस्ते दुनिया", "क्षत्रिय स्त्री", "สวัสดีครับ ภาษาไทย", "ሰላም ዓለም", "გამარჯობა",
    "Hello мир 世界 🌍 مرحبا", "Tiếng Việt có dấu",
    # emoji
    "😀", "😀😀", "a 😀😀 b", "I ❤️ NY", "👍🏽 thumbs", "👨‍👩‍👧‍👦 family", "🇩🇪🇫🇷 flags", "🏳️‍🌈",
    "©\ufe0f ®", "#\ufe0f\u20e3 1\u20e3", "🧑🏿‍💻 coder", "🫠🫡",
    # full-width, half-width, ligatures, compatibility
    "Ｈｅｌｌｏ　Ｗｏｒｌｄ", "１２３４５", "ｶﾞｷﾞｸﾞ", "ﬁnance ﬂow ﬀ", "Ⅻ ⅷ ㎏ ㍿", "x² y³ H₂O",
    "½ ¼ ¾", "™ ℃ №", "ǅ ǈ", "Å Ω K", "\ufb01\ufb02",
    # digits and punctuation
    "123456789", "3.14159265358979", "1,000,000", "2024-01-31 10:30pm", "\u0661\u0662\u0663 \u0967\u0968",
    "Hello, world! How are you?", "(a) [b] {c} <d>", "\"double\" 'single' `back`", "…ellipsis…",
    "em—dash en–dash", "¿Qué? ¡Sí!", "«guillemets» „Anführung“", "a.b.c", "!!!???", "---",
    "https://example.com/path?q=1&r=2#frag", "user@example.com", "def f(x): return x**2",
    "C++ and C# and F#", "$100 €50 £20 ¥1000", "50% off!!!", "#hashtag @mention",
    # special spellings
    "<extra_id_0>", "Hello <extra_id_0> world", "a<extra_id_1>b", "<extra_id_0><extra_id_1>",
    "The <extra_id_0> walks in <extra_id_1> park.", " <extra_id_5>  spaced  <extra_id_6> ",
    "<extra_id_0>\t\ttab", "a\u00a0<extra_id_0>\u3000b", "\x1c<extra_id_0>\x1cb", "<extra_id_99> last",
    "<extra_id_100>", "<extra_id_-1>", "< extra_id_0>", "<extra_id_0", "extra_id_0>", "<<extra_id_0>>",
    "</s>", "x</s>", "x </s>", "text </s> more", "</s></s>", "<pad>", "<pad>a", " <unk> ", "<unk><unk>",
    "<s>", "<0x41>", "<0xE3><0x81>", "<mask>",
    # control characters and U+FFFD
    "a\x00b", "\x07bell", "\x1b[31mred\x1b[0m", "del\x7f", "\u200e\u200f bidi marks", "\ufeffBOM",
    "soft\u00adhyphen", "\ufffd", "bad \ufffd char", "\ufffd\ufffd", "\x85next line",
    "\U000e0041 tag \U000e007f", "\U0010fffd private", "\ue000 pua",
    # case and mixed
    "HELLO WORLD", "iPhone McDonald's", "ALLCAPS and lowercase", "O'Neill's don't won't",
]


def random_strings(rng):
    """Seeded random strings over a pool that mixes the risky characters."""
    pool = (list("abcdefghij XYZ0123.,!?<>/_-") + [" ", " ", "\t", "\n", "\u00a0", "\u3000"] +
            list("éüßçñ") + ["\u0301", "\u0308", "\u0323", "\u200d", "\ufe0f", "\u20e3"] +
            list("房子好日本한국") + ["\u1100", "\u1161", "\u11a8"] + list("Ａｂ１ﬁ½²") +
            list("😀👍🏽❤🇩🇪") + ["\u2581", "\ufffd", "\x00", "\x1c", "\u0915", "\u094d", "\u0937"] +
            ["<extra_id_0>", "</s>", "<pad>", "<unk>", "<extra_id_7>"])
    out = []
    for _ in range(40):
        n = rng.randint(1, 24)
        out.append("".join(rng.choice(pool) for _ in range(n)))
    return out


def grapheme_strings(rng):
    """Short strings around grapheme-cluster boundaries (which the `tokenizers`
    Precompiled step depends on): characters the charsmap rewrites followed by
    marks, joiners, prepend and spacing marks, CR LF, flags, Hangul jamo,
    Devanagari conjuncts."""
    bases = list("aeoAZ1#©") + ["Ａ", "ﬁ", "½", "²", "㍿", "ｶ", "Ω", "\u00c5", "😀", "\u1100", "\uac00", "\u0915"]
    marks = ["\u0301", "\u0308", "\u0323", "\u20dd", "\u20e3", "\u200d", "\ufe0f", "\u0903", "\u094d",
             "\u1161", "\u11a8", "\uff9e", "\U0001f3fd", "\U000e0020"]
    other = ["\r", "\n", "\u0600", "\U0001f1e9", "\U0001f1ea", "\u0937", " ", "\u00a0"]
    out = []
    for _ in range(60):
        s = ""
        for _ in range(rng.randint(1, 3)):
            s += rng.choice(bases + other) + "".join(rng.choice(marks) for _ in range(rng.randint(0, 2)))
        out.append(s)
    return out


def long_strings(rng):
    words = ("the house is wonderful and the garden was green while we walked to the old station "
             "das Haus ist wunderbar Straße Mädchen la maison est merveilleuse été très garçon "
             "房子 很 好 花园 Привет мир 123 4.5 ! ? ( ) 😀 ﬁ ①").split()
    a = " ".join(rng.choice(words) for _ in range(260))
    b = "".join(rng.choice(words) + rng.choice([" ", "  ", "\t", "\n", "", ", "]) for _ in range(220))
    c = "word " * 250 + "<extra_id_3> end"
    return [a, b, c]


# Pipeline variants of bytefb.tokenizer.json, for the tokenizer.json features
# T5 files use less often: each replaces some top-level steps (the charsmap
# written "<base>" stands for the base file's), model.byte_fallback, or the
# flags of the <extra_id_N> added tokens. The C test applies the same patches.
PREC = {"type": "Precompiled", "precompiled_charsmap": "<base>"}
MS = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
WS_MS_FIRST = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, dict(MS, prepend_scheme="first")]}
VARIANTS = [
    ("t5_2020", {"normalizer": PREC,
                 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                     {"type": "WhitespaceSplit"},
                     {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}]},
                 "decoder": {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}}),
    ("byte_fallback", {"byte_fallback": True, "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}}),
    ("prepend_first", {"pre_tokenizer": dict(MS, prepend_scheme="first"), "decoder": dict(MS, prepend_scheme="first")}),
    ("first_wssplit_strip", {"normalizer": {"type": "Sequence", "normalizers": [
        PREC, {"type": "Strip", "strip_left": True, "strip_right": True}]}, "pre_tokenizer": WS_MS_FIRST}),
    ("never_nosplit", {"pre_tokenizer": dict(MS, prepend_scheme="never", split=False),
                       "decoder": dict(MS, prepend_scheme="never")}),
    ("sentinels_strip", {"added": {"lstrip": True, "rstrip": True}}),
    ("sentinels_normalized", {"added": {"normalized": True}}),
    ("bare", {"normalizer": {"type": "Sequence", "normalizers": [
        PREC, {"type": "Replace", "pattern": {"String": "a"}, "content": "ab"},
        {"type": "Strip", "strip_left": True, "strip_right": True}]}, "pre_tokenizer": None, "decoder": None}),
]


def apply_variant(base, patch):
    doc = json.loads(json.dumps(base))
    charsmap = base["normalizer"]["normalizers"][0]["precompiled_charsmap"]

    def subst(v):
        if isinstance(v, dict):
            return {k: charsmap if x == "<base>" else subst(x) for k, x in v.items()}
        return [subst(x) for x in v] if isinstance(v, list) else v
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        if key in patch:
            doc[key] = subst(patch[key])
    if "byte_fallback" in patch:
        doc["model"]["byte_fallback"] = patch["byte_fallback"]
    for a in doc["added_tokens"]:
        if a["content"].startswith("<extra_id_"):
            a.update(patch.get("added", {}))
    return doc


def variant_cases(texts, tmp):
    from tokenizers import Tokenizer
    with open(os.path.join(SMALL, "bytefb.tokenizer.json"), encoding="utf-8") as f:
        base = json.load(f)
    pick = [i for i, t in enumerate(texts[:-3]) if i % 10 == 0 or "<extra_id" in t]
    out = []
    for name, patch in VARIANTS:
        path = os.path.join(tmp, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(apply_variant(base, patch), f, ensure_ascii=False)
        tok = Tokenizer.from_file(path)
        cases = []
        for i in pick:
            ids = tok.encode(texts[i]).ids
            c = {"i": i, "fast": ids}
            if "decoder" in patch:      # else decoded as by the base file
                c["dec"] = [tok.decode(ids, skip_special_tokens=True), tok.decode(ids, skip_special_tokens=False)]
            cases.append(c)
        out.append({"name": name, "patch": patch, "cases": cases})
    return out


def load_refs(model, tokjson):
    import sentencepiece as spm
    from tokenizers import Tokenizer
    from transformers import T5Tokenizer
    sp = spm.SentencePieceProcessor(model_file=model)
    slow = T5Tokenizer(model, legacy=True)
    fast = Tokenizer.from_file(tokjson)
    return sp, slow, fast


def encode_case(text, sp, slow, fast):
    raw = sp.encode(text)
    s_eos = slow(text).input_ids
    s_no = slow(text, add_special_tokens=False).input_ids
    f_eos = fast.encode(text).ids
    f_no = fast.encode(text, add_special_tokens=False).ids
    assert f_no == f_eos[:-1], (text, f_no, f_eos)
    c = {"slow": s_eos, "fast": f_eos}
    if s_no != s_eos[:-1]:
        c["slow_noeos"] = s_no
    if raw != s_no:
        c["spm"] = raw
    c["dec_slow"] = [slow.decode(s_eos, skip_special_tokens=True), slow.decode(s_eos, skip_special_tokens=False)]
    dec_fast = [fast.decode(f_eos, skip_special_tokens=True), fast.decode(f_eos, skip_special_tokens=False)]
    if dec_fast != c["dec_slow"]:
        c["dec_fast"] = dec_fast
    return c


def decode_cases(rng, n_vocab, slow, fast, n_pieces):
    out = []
    for _ in range(30):
        ids = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.15:
                ids.append(rng.choice([0, 1, 2]))
            elif r < 0.3:
                ids.append(rng.randrange(n_pieces, n_vocab))
            elif r < 0.45:
                ids.append(rng.randrange(3, min(n_pieces, 300)))
            else:
                ids.append(rng.randrange(0, n_pieces))
        out.append({"ids": ids,
                    "slow": [slow.decode(ids, skip_special_tokens=True), slow.decode(ids, skip_special_tokens=False)],
                    "fast": [fast.decode(ids, skip_special_tokens=True), fast.decode(ids, skip_special_tokens=False)]})
    return out


def golden():
    warnings.filterwarnings("ignore")
    from transformers import T5TokenizerFast
    rng = random.Random(SEED)
    texts = CORPUS + random_strings(rng) + grapheme_strings(rng) + long_strings(rng)
    tmp = tempfile.mkdtemp()
    try:
        T5TokenizerFast(vocab_file=T5_MODEL, extra_ids=100, legacy=True).save_pretrained(tmp)
        sets = [("t5", T5_MODEL, os.path.join(tmp, "tokenizer.json")),
                ("t5like", os.path.join(SMALL, "t5like.model"), os.path.join(SMALL, "t5like.tokenizer.json")),
                ("bytefb", os.path.join(SMALL, "bytefb.model"), os.path.join(SMALL, "bytefb.tokenizer.json"))]
        doc = {"texts": [{"text": t, "hex": t.encode("utf-8").hex()} for t in texts], "tokenizers": {}}
        disagree = {}
        for name, model, tj in sets:
            sp, slow, fast = load_refs(model, tj)
            n_vocab = len(slow)
            info = {"n_vocab": n_vocab, "n_pieces": sp.get_piece_size(), "eos": slow.eos_token_id,
                    "pad": slow.pad_token_id, "unk": slow.unk_token_id,
                    "cases": [encode_case(t, sp, slow, fast) for t in texts]}
            assert fast.get_vocab_size() == n_vocab
            info["decode"] = decode_cases(random.Random(SEED + len(name)), n_vocab, slow, fast, sp.get_piece_size())
            doc["tokenizers"][name] = info
            disagree[name] = [i for i, c in enumerate(info["cases"]) if c["slow"] != c["fast"]]
        doc["variants"] = variant_cases(texts, tmp)
    finally:
        shutil.rmtree(tmp)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{OUT}: {len(texts)} texts, {os.path.getsize(OUT)} bytes")
    for name, idx in disagree.items():
        print(f"{name}: slow and fast ids differ on {len(idx)} texts:")
        for i in idx:
            print(f"   {i}: {texts[i][:60]!r}")


def tables():
    import regex
    allc = "".join(chr(c) for c in range(0x110000))

    def ranges(prop):
        return [(m.start(), m.end() - 1) for m in regex.finditer("[%s]+" % prop, allc)]

    gcb = []
    for i, p in enumerate(["CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend",
                           "SpacingMark", "L", "V", "T"], start=1):
        gcb += [(lo, hi, i) for lo, hi in ranges(r"\p{GCB=%s}" % p)]
    pict = [(lo, hi, 1) for lo, hi in ranges(r"\p{Extended_Pictographic}")]
    incb = []
    for i, p in enumerate(["Linker", "Consonant", "Extend"], start=1):
        incb += [(lo, hi, i) for lo, hi in ranges(r"\p{InCB=%s}" % p)]

    def table(name, rows):
        rows = sorted(rows)
        lines = [f"const uint32_t {name}[][3] = {{"]
        for k in range(0, len(rows), 4):
            lines.append("    " + " ".join("{0x%x, 0x%x, %d}," % r for r in rows[k:k + 4]))
        lines.append("};")
        lines.append(f"const int spm_n_{name[4:]} = {len(rows)};")
        return "\n".join(lines)

    with open(TABLES, "w") as f:
        f.write("/* spm_gc_tables.c - GENERATED by tools/golden_spm.py --tables from the Unicode data\n"
                f" * of the Python `regex` module {regex.__version__}; do not edit. Sorted [lo, hi, class]\n"
                " * ranges for spm_gc.c: Grapheme_Cluster_Break (1 CR, 2 LF, 3 Control, 4 Extend,\n"
                " * 5 ZWJ, 6 Regional_Indicator, 7 Prepend, 8 SpacingMark, 9 L, 10 V, 11 T; Hangul\n"
                " * LV/LVT syllables are computed), Extended_Pictographic, Indic_Conjunct_Break\n"
                " * (1 Linker, 2 Consonant, 3 Extend). */\n#include <stdint.h>\n\n")
        f.write(table("spm_gc_break", gcb) + "\n\n" + table("spm_gc_pict", pict) + "\n\n" +
                table("spm_gc_incb", incb) + "\n")
    print(f"{TABLES}: {len(gcb)} + {len(pict)} + {len(incb)} ranges")


if __name__ == "__main__":
    if sys.argv[1:] == ["--tables"]:
        tables()
    else:
        golden()
