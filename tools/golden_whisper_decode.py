#!/usr/bin/env python3
"""Golden values for the pieces of long-form transcription, from openai-whisper's own code
(decoding.py, timing.py, tokenizer.py, utils.py): the independent reference for
src/decode/ts_rules.c, beam_ow.c, src/asr/{dtw,words,quality}.c and src/out/.

Usage (from the repository root, after scripts/venv.sh):

    .venv/bin/python tools/golden_whisper_decode.py [OUT_JSON]

Writes tests/data/whisper-decode-golden.json:

  ts_rules   ApplyTimestampRules on random logits after random histories (a fake
             vocabulary: text 0..19, eot 20, specials 21..26 with <|notimestamps|> 26,
             timestamps 27..79; max initial timestamp index 5): which entries it sets to
             -inf (the others are untouched).
  decode     GreedyDecoder (temperature 0) and BeamSearchDecoder (with patience) driven
             by DecodingTask's main loop, SuppressTokens and ApplyTimestampRules, over a
             fake model whose logits are a hash of the whole history (defined identically
             in tests/test_whisper_decode.c), then MaximumLikelihoodRanker: the chosen
             tokens (eot excluded) and their sum of log-probabilities.
  dtw        timing.dtw_cpu paths of random cost matrices.
  medfilt    timing.median_filter (width 7) of random rows.
  compression  utils.compression_ratio of texts.
  words      Tokenizer.split_to_word_tokens (tiny.en's tokenizer, by spaces; and by
             characters) and timing.merge_punctuations with the default marks.
  writers    utils.WriteTXT / WriteVTT / WriteSRT / WriteTSV on transcripts (the
             word-timestamp goldens of tests/data/longform-golden.json), with and without
             line limits and word highlighting.
"""

import io
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_beam import history_hash  # noqa: E402  (the fake models' shared hash)

V, EOT, SOT, NO_TS, TS_BEGIN = 80, 20, 21, 26, 27
MAX_INITIAL = 5


class Tok:
    """The attributes of openai-whisper's Tokenizer that the logit filters read."""
    eot = EOT
    no_timestamps = NO_TS
    timestamp_begin = TS_BEGIN


def fake_logits(tokens):
    """Distinct multiples of 1/512 in [-3.9, 3.9], timestamps 1.5 lower, eot rising with
    the length: exact in float32."""
    h = history_hash(tokens)
    a, b = h % 4001, 1 + (h >> 17) % 4000
    row = (((a + b * np.arange(V, dtype=np.int64)) % 4001) - 2000) / 512.0
    row[TS_BEGIN:] -= 1.5
    row[EOT] = (2 * ((h >> 40) % 2048) + 1 - 2048) / 1024.0 + len(tokens) / 8.0
    return row


def ts_rule_cases(rng):
    from whisper.decoding import ApplyTimestampRules
    cases = []
    for k in range(60):
        n_prefix = int(rng.integers(1, 4))
        n_gen = int(rng.integers(0, 7))
        gen = []
        for _ in range(n_gen):
            gen.append(int(rng.integers(0, EOT)) if rng.random() < 0.5 else int(rng.integers(TS_BEGIN, V)))
        logits = (rng.integers(-512, 512, size=V) / 128.0).astype(np.float32)
        if k % 5 == 0:
            logits[TS_BEGIN:] += 3.0   # timestamps likely enough to be forced
        prefix = [SOT] * n_prefix
        t = torch.tensor([prefix + gen])
        x = torch.tensor(logits)[None, :].clone()
        ApplyTimestampRules(Tok(), n_prefix, MAX_INITIAL).apply(x, t)
        masked = [i for i in range(V) if torch.isinf(x[0, i]) and not np.isinf(logits[i])]
        assert all(x[0, i] == logits[i] for i in range(V) if i not in masked)
        cases.append({"gen": gen, "logits": [float(v) for v in logits], "masked": masked})
    return cases


class NoCache:
    def rearrange_kv_cache(self, source_indices):
        pass


def decode_case(seed, prompt, beam, patience, max_new, suppress, timestamps):
    """DecodingTask's loop, finalisation and ranking on the fake model."""
    from whisper.decoding import (ApplyTimestampRules, BeamSearchDecoder, GreedyDecoder,
                                  MaximumLikelihoodRanker, SuppressTokens)
    n_group = beam or 1
    decoder = BeamSearchDecoder(beam, EOT, NoCache(), patience) if beam else GreedyDecoder(0.0, EOT)
    filters = [SuppressTokens(suppress)] if suppress else []
    if timestamps:
        filters.append(ApplyTimestampRules(Tok(), len(prompt), MAX_INITIAL))
    tokens = torch.tensor([prompt]).repeat_interleave(n_group, 0)
    sum_logprobs = torch.zeros(n_group)
    decoder.reset()
    for _ in range(max_new):
        logits = torch.tensor(np.stack([fake_logits([seed] + row) for row in tokens.tolist()]),
                              dtype=torch.float32)
        for f in filters:
            f.apply(logits, tokens)
        tokens, completed = decoder.update(tokens, logits, sum_logprobs)
        if beam and any(np.isinf(s) for s in sum_logprobs.tolist()):
            return None   # a beam had to take an impossible token: ambiguous order
        if completed:
            break
    tokens = tokens.reshape(1, n_group, -1)
    sum_logprobs = sum_logprobs.reshape(1, n_group)
    tokens, sum_logprobs = decoder.finalize(tokens, sum_logprobs)
    tokens = [[t[len(prompt):(t == EOT).nonzero()[0, 0]] for t in s] for s in tokens]
    best = MaximumLikelihoodRanker(None).rank(tokens, sum_logprobs)[0]
    return {"tokens": tokens[0][best].tolist(), "sum_logprob": round(float(sum_logprobs[0][best]), 6)}


def decode_cases():
    cases = []
    k = 0
    for timestamps in (False, True):
        for beam, patience in ((0, 1.0), (2, 1.0), (4, 1.0), (4, 2.0), (5, 1.0), (5, 0.5), (3, 1.5)):
            for rep in range(3):
                max_new = 8 + (k * 5) % 17
                suppress = [3, 11] if rep == 1 else []
                prompt = [SOT] if rep != 2 else [24, 5, 7, SOT]
                seed = 7000 + 31 * k
                while True:
                    res = decode_case(seed, prompt, beam, patience, max_new, suppress, timestamps)
                    if res is not None:
                        break
                    seed += 1000
                cases.append({"seed": seed, "prompt": prompt, "beam": beam, "patience": patience,
                              "max_new": max_new, "suppress": suppress, "timestamps": timestamps, **res})
                k += 1
    return cases


def dtw_cases(rng):
    from whisper.timing import dtw_cpu
    out = []
    for n, m in ((1, 1), (1, 7), (6, 1), (5, 9), (12, 40), (30, 150), (3, 3)):
        x = rng.standard_normal((n, m))
        if n == 3:
            x = np.round(x)   # ties
        path = dtw_cpu(x.copy())
        out.append({"x": [[float(v) for v in row] for row in x], "rows": path[0].tolist(),
                    "cols": path[1].tolist()})
    return out


def medfilt_cases(rng):
    from whisper.timing import median_filter
    out = []
    for rows, n in ((1, 2), (2, 3), (3, 4), (2, 9), (4, 50)):
        x = rng.standard_normal((rows, n)).astype(np.float32)
        y = median_filter(torch.tensor(x), 7).numpy()
        out.append({"x": x.tolist(), "y": y.tolist()})
    return out


def compression_cases():
    from whisper.utils import compression_ratio
    texts = ["", "a", "Hello world.", "And so my fellow Americans, ask not what your country can do for you.",
             "Thank you. " * 20, "\u00e9t\u00e9 \u00e0 Paris, \u4f60\u597d\u4e16\u754c " * 3,
             "no no no no no no no no no no no no no no no no no no no no"]
    return [{"text": t, "ratio": compression_ratio(t)} for t in texts]


def word_cases():
    from whisper.timing import WordTiming, merge_punctuations
    from whisper.tokenizer import get_tokenizer
    tok = get_tokenizer(False)
    texts = [" And so, my fellow Americans: ask not (what) your country can do for you!",
             " \"Quoted\" words -- and it's a don't-stop mid-sentence... Really?",
             " caf\u00e9 na\u00efve \u00bfQu\u00e9? \u201ccurly\u201d \u2014 \u4f60\u597d\u3002\u4e16\u754c\uff01",
             " 'single' [brackets] {braces} 3.14 and 1,000,000.",
             " \u266a la la \u266a"]
    out = []
    for t in texts:
        ids = tok.encode(t)
        for by_unicode in (False, True):
            tok.language = "ja" if by_unicode else "en"
            words, word_tokens = tok.split_to_word_tokens(ids + [tok.eot])
            timings = [WordTiming(w, wt, 0.0, 0.0, 0.0) for w, wt in zip(words[:-1], word_tokens[:-1])]
            merge_punctuations(timings, "\"'\u201c\u00bf([{-", "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001")
            out.append({"ids": ids, "by_unicode": by_unicode,
                        "split": [[w, len(wt)] for w, wt in zip(words, word_tokens)],
                        "merged": [[w.word, len(w.tokens)] for w in timings]})
    return out


def writer_cases():
    from whisper.utils import WriteSRT, WriteTSV, WriteTXT, WriteVTT
    with open(os.path.join("tests", "data", "longform-golden.json")) as f:
        lf = json.load(f)
    out = []
    picks = [c for c in lf["cases"] if c["recording"] == "talk" and c["case"] in ("default", "words")]
    for c in picks:
        result = {"text": c["text"], "segments": c["segments"], "language": c["language"]}
        variants = [{}]
        if c["case"] == "words":
            variants += [{"max_line_width": 42, "max_line_count": 2}, {"highlight_words": True},
                         {"max_words_per_line": 4}, {"max_line_width": 30, "max_line_count": 1},
                         {"max_line_width": 42}]
        for opts in variants:
            for name, writer in (("txt", WriteTXT), ("vtt", WriteVTT), ("srt", WriteSRT), ("tsv", WriteTSV)):
                if opts and name in ("txt", "tsv"):
                    continue
                buf = io.StringIO()
                writer(".").write_result(result, buf, opts)
                out.append({"case": c["case"], "format": name, "options": opts, "text": buf.getvalue()})
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "data", "whisper-decode-golden.json")
    rng = np.random.default_rng(20261125)
    doc = {"source": "openai-whisper %s, tools/golden_whisper_decode.py" % __import__("whisper").__version__,
           "vocab": {"n_vocab": V, "eot": EOT, "sot": SOT, "no_timestamps": NO_TS, "ts_begin": TS_BEGIN,
                     "max_initial": MAX_INITIAL},
           "ts_rules": ts_rule_cases(rng), "decode": decode_cases(), "dtw": dtw_cases(rng),
           "medfilt": medfilt_cases(rng), "compression": compression_cases(), "words": word_cases(),
           "writers": writer_cases()}
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"), ensure_ascii=True)
        f.write("\n")
    print("wrote %s (%d bytes): %d rule cases, %d decodes, %d writer outputs" % (
        out, os.path.getsize(out), len(doc["ts_rules"]), len(doc["decode"]), len(doc["writers"])))


if __name__ == "__main__":
    main()
