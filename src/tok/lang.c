/* lang.c - Whisper's languages: codes in the tokenizer's order, English
 * names, and the other names openai-whisper accepts for some of them. */
#include "tok/lang.h"

#include <stddef.h>
#include <strings.h>

static const struct { const char *code, *name; } LANGS[] = {
    {"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"}, {"ru", "russian"},
    {"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"}, {"pt", "portuguese"},
    {"tr", "turkish"}, {"pl", "polish"}, {"ca", "catalan"}, {"nl", "dutch"}, {"ar", "arabic"},
    {"sv", "swedish"}, {"it", "italian"}, {"id", "indonesian"}, {"hi", "hindi"},
    {"fi", "finnish"}, {"vi", "vietnamese"}, {"he", "hebrew"}, {"uk", "ukrainian"},
    {"el", "greek"}, {"ms", "malay"}, {"cs", "czech"}, {"ro", "romanian"}, {"da", "danish"},
    {"hu", "hungarian"}, {"ta", "tamil"}, {"no", "norwegian"}, {"th", "thai"}, {"ur", "urdu"},
    {"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"}, {"la", "latin"},
    {"mi", "maori"}, {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"}, {"te", "telugu"},
    {"fa", "persian"}, {"lv", "latvian"}, {"bn", "bengali"}, {"sr", "serbian"},
    {"az", "azerbaijani"}, {"sl", "slovenian"}, {"kn", "kannada"}, {"et", "estonian"},
    {"mk", "macedonian"}, {"br", "breton"}, {"eu", "basque"}, {"is", "icelandic"},
    {"hy", "armenian"}, {"ne", "nepali"}, {"mn", "mongolian"}, {"bs", "bosnian"},
    {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"}, {"gl", "galician"},
    {"mr", "marathi"}, {"pa", "punjabi"}, {"si", "sinhala"}, {"km", "khmer"}, {"sn", "shona"},
    {"yo", "yoruba"}, {"so", "somali"}, {"af", "afrikaans"}, {"oc", "occitan"},
    {"ka", "georgian"}, {"be", "belarusian"}, {"tg", "tajik"}, {"sd", "sindhi"},
    {"gu", "gujarati"}, {"am", "amharic"}, {"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"},
    {"fo", "faroese"}, {"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"},
    {"nn", "nynorsk"}, {"mt", "maltese"}, {"sa", "sanskrit"}, {"lb", "luxembourgish"},
    {"my", "myanmar"}, {"bo", "tibetan"}, {"tl", "tagalog"}, {"mg", "malagasy"},
    {"as", "assamese"}, {"tt", "tatar"}, {"haw", "hawaiian"}, {"ln", "lingala"}, {"ha", "hausa"},
    {"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"}, {"yue", "cantonese"},
};

/* Other spellings of some languages. */
static const struct { const char *name, *code; } ALIASES[] = {
    {"burmese", "my"}, {"valencian", "ca"}, {"flemish", "nl"}, {"haitian", "ht"},
    {"letzeburgesch", "lb"}, {"pushto", "ps"}, {"panjabi", "pa"}, {"moldavian", "ro"},
    {"moldovan", "ro"}, {"sinhalese", "si"}, {"castilian", "es"}, {"mandarin", "zh"},
};

#define N_LANGS ((int)(sizeof LANGS / sizeof LANGS[0]))

const char *wlang_code(int i) { return i >= 0 && i < N_LANGS ? LANGS[i].code : NULL; }
const char *wlang_name(int i) { return i >= 0 && i < N_LANGS ? LANGS[i].name : NULL; }

int wlang_find(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < N_LANGS; i++)
        if (!strcasecmp(name, LANGS[i].code) || !strcasecmp(name, LANGS[i].name)) return i;
    for (size_t a = 0; a < sizeof ALIASES / sizeof ALIASES[0]; a++)
        if (!strcasecmp(name, ALIASES[a].name)) return wlang_find(ALIASES[a].code);
    return -1;
}

int wlang_count(void) { return N_LANGS; }
