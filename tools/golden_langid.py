#!/usr/bin/env python3
"""Goldens of the text language identifier (src/models/langid.h) from its
oracles: langdetect 1.0.9 (detect_langs at DetectorFactory.seed 0, as
LibreTranslate runs it) and lexilang 1.0.7 (detect), and of base/pyrand.h
from Python's own random.Random. Section "lt": what LibreTranslate's
POST /detect and a /translate with source "auto" answer, by its rules
(libretranslate/detect.py and language.py, restated below over the same two
oracles) on a server of mBART-50's 52 languages
(tests/server/test_libretranslate.py).

    .venv/bin/python tools/golden_langid.py > tests/data/langid/golden.json

The texts: sentences in 40 languages written for this file, texts that walk
langdetect's rules (URLs, e-mail addresses, Vietnamese marks, Romanian
commas, capital words, kana, hangul, kanji classes, Farsi yeh, more than
10,000 characters, Latin inside other scripts) and lexilang's (punctuation,
CJK tokens, a final capital sigma, case mappings that change length), and
seeded random strings over the character blocks langdetect normalises.
"""
import json
import random
import sys

import langdetect
from langdetect import DetectorFactory, detect_langs
from langdetect.lang_detect_exception import LangDetectException
from lexilang.detector import detect as lexi_detect

SENTENCES = [
    "The weather was cold, so we stayed at home and read books all afternoon.",
    "Le train part à huit heures du matin et arrive à Lyon avant midi.",
    "Der Zug fährt um acht Uhr ab und kommt vor Mittag in München an.",
    "El tren sale a las ocho de la mañana y llega a Madrid antes del mediodía.",
    "Il treno parte alle otto del mattino e arriva a Roma prima di mezzogiorno.",
    "O comboio parte às oito da manhã e chega a Lisboa antes do meio-dia.",
    "De trein vertrekt om acht uur 's ochtends en komt voor de middag aan.",
    "Pociąg odjeżdża o ósmej rano i przyjeżdża do Krakowa przed południem.",
    "Vlak odjíždí v osm hodin ráno a do Brna přijede před polednem.",
    "Vlak odchádza o ôsmej ráno a do Košíc príde pred obedom.",
    "A vonat reggel nyolckor indul, és dél előtt érkezik Budapestre.",
    "Trenul pleacă la ora opt dimineața și ajunge la București înainte de prânz.",
    "Tåget går klockan åtta på morgonen och kommer fram före lunch.",
    "Toget går klokken åtte om morgenen og kommer frem før lunsj.",
    "Toget kører klokken otte om morgenen og er fremme før frokost.",
    "Juna lähtee kahdeksalta aamulla ja saapuu Helsinkiin ennen puoltapäivää.",
    "Rong lahkub kell kaheksa hommikul ja jõuab Tallinna enne lõunat.",
    "Traukinys išvyksta aštuntą valandą ryto ir atvyksta prieš pietus.",
    "Vilciens atiet astoņos no rīta un pienāk Rīgā pirms pusdienlaika.",
    "Vlak polazi u osam sati ujutro i stiže u Zagreb prije podneva.",
    "Vlak odpelje ob osmih zjutraj in prispe v Ljubljano pred poldnevom.",
    "Treni niset në orën tetë të mëngjesit dhe arrin para mesditës.",
    "Tren sabah sekizde kalkıyor ve öğleden önce Ankara'ya varıyor.",
    "Поезд отправляется в восемь утра и прибывает в Москву до полудня.",
    "Потяг вирушає о восьмій ранку і прибуває до Києва до полудня.",
    "Влакът тръгва в осем сутринта и пристига в София преди обяд.",
    "Возот тргнува во осум часот наутро и пристигнува пред пладне.",
    "Το τρένο φεύγει στις οκτώ το πρωί και φτάνει στην Αθήνα πριν από το μεσημέρι.",
    "القطار يغادر في الساعة الثامنة صباحا ويصل إلى القاهرة قبل الظهر.",
    "قطار ساعت هشت صبح حرکت می‌کند و پیش از ظهر به تهران می‌رسد.",
    "ٹرین صبح آٹھ بجے روانہ ہوتی ہے اور دوپہر سے پہلے لاہور پہنچتی ہے۔",
    "הרכבת יוצאת בשמונה בבוקר ומגיעה לחיפה לפני הצהריים.",
    "रेलगाड़ी सुबह आठ बजे चलती है और दोपहर से पहले दिल्ली पहुँचती है।",
    "ট্রেনটি সকাল আটটায় ছাড়ে এবং দুপুরের আগে ঢাকায় পৌঁছায়।",
    "ரயில் காலை எட்டு மணிக்கு புறப்பட்டு மதியத்துக்கு முன் சென்னை சேருகிறது.",
    "รถไฟออกเดินทางเวลาแปดโมงเช้าและถึงกรุงเทพก่อนเที่ยง",
    "Tàu khởi hành lúc tám giờ sáng và đến Hà Nội trước buổi trưa.",
    "Kereta api berangkat pukul delapan pagi dan tiba di Jakarta sebelum tengah hari.",
    "Ang tren ay umaalis ng alas-otso ng umaga at dumarating bago magtanghali.",
    "Treni huondoka saa mbili asubuhi na hufika Nairobi kabla ya adhuhuri.",
    "Die trein vertrek om agtuur in die oggend en kom voor middagete aan.",
    "El tren surt a les vuit del matí i arriba a Barcelona abans del migdia.",
    "Mae'r trên yn gadael am wyth o'r gloch y bore ac yn cyrraedd cyn hanner dydd.",
    "火车早上八点出发，中午以前到达北京。",
    "火車早上八點出發，中午以前到達台北。",
    "電車は朝八時に出発して、昼前に東京に着きます。",
    "기차는 아침 여덟 시에 출발해서 정오 전에 서울에 도착합니다.",
]

SPECIAL = [
    "", " ", "12345 67890", "!!! ??? ...", "🙂🙂🙂", "Hello", "Neuland", "Ja", "Oui merci",
    "Tout philosophe a deux philosophies : la sienne et celle de Spinoza.",
    "see https://example.com/path?q=1&r=2#frag and http://x.org/ then write to ann.lee@mail-host.example.com",
    "mail " + "a" * 70 + "@host.example and " + "b" * 10 + "@h and c@de done here in English",
    "httpx://not a url, https:// nothing after, http://ok.example/",
    "Tiếng Việt có dấu: ngày hôm nay trời đẹp quá",   # decomposed marks
    "Aceasta este o propoziție în limba română, șir și țară.",   # comma below
    "Aceasta este o propoziţie în limba română, şir şi ţară.",   # cedilla
    "NASA AND THE USA ARE IN CAPITAL WORDS, but the rest of this text is not.",
    "ÉCOLE NORMALE SUPÉRIEURE est une grande école française à Paris.",
    "The Quick Brown Fox Jumps Over The Lazy Dog In Title Case",
    "ひらがなとカタカナ、ㄅㄆㄇ、한국어、漢字と汉字。",
    "این یک جمله فارسی است که یی دارد و ي عربی",
    "Москва — столица России, a city of 13 million people.",
    "Москва столица России Moscow is big",
    "ΚΑΛΗΜΕΡΑ ΣΑΣ", "ΟΔΟΣ ΑΘΗΝΑΣ.", "İSTANBUL BÜYÜK", "STRASSE IST GROSS",
    "a\u00a0b\u00abc\u00bbd\u00b0e", "smart “quotes” and dashes — everywhere … here",
    ("Ceci est un long texte en français qui se répète. " * 200) + ("This is English after the cut. " * 50),
    ("Short English sentence. " * 3) + ("Длинный русский текст. " * 30),
]

# langdetect's normalised blocks and their neighbours, for random strings
POOLS = [
    (0x20, 0x7E), (0xA0, 0xFF), (0x100, 0x17F), (0x180, 0x24F), (0x300, 0x36F), (0x370, 0x3FF),
    (0x400, 0x4FF), (0x600, 0x6FF), (0x900, 0x97F), (0x1E00, 0x1EFF), (0x2000, 0x206F),
    (0x3040, 0x30FF), (0x3100, 0x312F), (0x31A0, 0x31BF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF),
    (0xFF00, 0xFFEF), (0x1F300, 0x1F6FF),
]


def random_texts(n, seed):
    r = random.Random(seed)
    out = []
    for _ in range(n):
        pools = r.sample(POOLS, r.randint(1, 4))
        chars = []
        for _ in range(r.randint(3, 120)):
            lo, hi = r.choice(pools)
            c = r.randint(lo, hi)
            chars.append(" " if r.random() < 0.15 else chr(c))
        out.append("".join(chars))
    return out


def ld(text):
    try:
        return [[l.lang, l.prob] for l in detect_langs(text)]
    except LangDetectException:
        return []


ALLOW = ["en", "de", "fr", "es", "it", "ru", "zh", "nb"]

# the codes encdec serve lists for tests/data/tiny-random-mbart (GET /languages)
MBART_CODES = ["ar", "cs", "de", "en", "es", "et", "fi", "fr", "gu", "hi", "it", "ja", "kk", "ko", "lt",
               "lv", "my", "ne", "nl", "ro", "ru", "si", "tr", "vi", "zh", "af", "az", "bn", "fa", "he",
               "hr", "id", "ka", "km", "mk", "ml", "mn", "mr", "pl", "ps", "pt", "sv", "sw", "ta", "te",
               "th", "tl", "uk", "ur", "xh", "gl", "sl"]


def lt_detect_text(text, codes):
    """LibreTranslate's Detector(codes).detect(text): [(code, confidence, length)]."""
    if len(text) < 20:
        code, conf = lexi_detect(text, codes)
        if conf > 0:
            return [(code, float(round(conf * 100)), len(text))]
    try:
        found = [l for l in detect_langs(text)
                 if {"zh-cn": "zh", "zh-tw": "zt"}.get(l.lang, l.lang) in codes][:3]
    except LangDetectException:
        found = []
    if not found:
        return [("en", 0.0, len(text))]
    return [({"zh-cn": "zh", "zh-tw": "zt"}.get(l.lang, l.lang), float(round(l.prob * 100)), len(text))
            for l in found]


def lt_detect(texts, codes):
    """LibreTranslate's detect_languages: a list merges its texts' guesses."""
    batch = isinstance(texts, list)
    cands = [list(c) for t in (texts if batch else [texts]) for c in lt_detect_text(t, codes)]
    total = sum(c[2] for c in cands)
    if batch:
        merged = []
        for code in codes:
            same = [c for c in cands if c[0] == code]
            if len(same) > 1:
                merged.append([code, sum(c[1] for c in same) / len(same), sum(c[2] for c in same)])
            elif same:
                merged.append(same[0])
        if merged:
            cands = merged
    cands.sort(key=lambda c: 0 if total == 0 else c[1] * c[2] / total, reverse=True)
    return [{"confidence": c[1], "language": c[0]} for c in cands]


def model2iso(code):
    """How LibreTranslate's API spells its three codes beyond ISO 639-1."""
    return {"zh": "zh-Hans", "zt": "zh-Hant", "pb": "pt-BR"}.get(code, code)


def answer(guesses):
    return [dict(g, language=model2iso(g["language"])) for g in guesses]


LT_QUERIES = [
    "Bonjour tout le monde, comment allez-vous aujourd'hui ?",
    "Hello", "Guten Morgen", "Gracias", "12345", "Привет мир",
    "Das ist ein Satz auf Deutsch, der übersetzt werden soll.",
    "Mae'r trên yn gadael am wyth o'r gloch y bore ac yn cyrraedd cyn hanner dydd.",
    "火車早上八點出發，中午以前到達台北。",
    "Toget går klokken åtte om morgenen og kommer frem før lunsj.",
    ["This is an English sentence", "Esta es una oración en español"],
    ["Der Zug fährt um acht Uhr ab und kommt vor Mittag in München an.", "Guten Tag",
     "Il treno parte alle otto del mattino e arriva a Roma prima di mezzogiorno."],
    ["Hello", "Hello", "12345"],
]


def main():
    DetectorFactory.seed = 0
    cases = []
    for t in SENTENCES + SPECIAL + random_texts(60, 7):
        la = lexi_detect(t)
        lb = lexi_detect(t, ALLOW)
        cases.append({"text": t, "langdetect": ld(t),
                      "lexilang": [la[0], la[1]], "lexilang_allowed": [lb[0], lb[1]]})
    # the answers as LibreTranslate's API gives them (model2iso); "codes" its models' codes
    lt = {"codes": MBART_CODES, "detect": [[q, answer(lt_detect(q, MBART_CODES))] for q in LT_QUERIES],
          # a /translate's texts with source "auto": detect_languages of them as a list
          "auto": [[q, answer(lt_detect(q if isinstance(q, list) else [q], MBART_CODES))[0]]
                   for q in LT_QUERIES]}
    r = random.Random(0)
    rnd = {"random": [r.random() for _ in range(8)]}
    r = random.Random(0)
    rnd["gauss"] = [r.gauss(0.0, 1.0) for _ in range(9)]
    rnd["below"] = []
    for n in (1, 2, 3, 7, 10, 1000, 65537, 2**31 + 5, 2**32 - 1):
        r = random.Random(0)
        rnd["below"].append([n, [r._randbelow(n) for _ in range(12)]])
    json.dump({"langdetect": langdetect.__version__ if hasattr(langdetect, "__version__") else "1.0.9",
               "lexilang": "1.0.7", "allowed": ALLOW, "seed": 0, "cases": cases, "pyrand": rnd, "lt": lt},
              sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
