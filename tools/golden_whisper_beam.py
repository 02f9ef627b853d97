#!/usr/bin/env python3
"""Golden values for Whisper BEAM SEARCH: what Hugging Face transformers' own
`model.generate(..., num_beams=B)` returns, the reference for the C engine's Whisper
beam search (HF 4.46 `_beam_search` + BeamSearchScorer over Whisper's suppress processors).

Usage (from the repository root; needs the tiny.en CT2 model as golden_tiny_en.py does):

    .venv/bin/python tools/golden_whisper_beam.py [CT2_MODEL_DIR]

CT2_MODEL_DIR defaults to $ENCDEC_TINY_EN or ~/.cache/encdec/models/whisper-tiny.en.
Writes tests/data/whisper-beam-golden.json (sorted keys, indent 1, ASCII).

Models and inputs (all float32 compute, everything reused by import, nothing copied):
  * "tiny.en": the real tiny.en, CT2 f16 weights converted to HF by
    golden_tiny_en.load_hf_model (upcast to f32); mel = HF WhisperFeatureExtractor of
    the tiny.en preprocessor (golden_tiny_en.feature_extractor + whisper_oracle.log_mel:
    audio zero-padded to 30 s, 3000 frames). Generation config: the tiny.en
    generation_config.json (../shared/assets/whisper-tiny.en-tokenizer), i.e. prompt
    [50257 <|startoftranscript|>, 50362 <|notimestamps|>] (decoder_start + forced ids),
    its 90 suppress_tokens, begin_suppress_tokens [220, 50256], eos = pad = 50256,
    max_length 448 (no max_new_tokens) -- exactly as the greedy goldens.
  * "tiny-random-whisper": tests/data/tiny-random-whisper (golden_whisper.load_model,
    f16 weights upcast to f32) on jfk.wav with golden_whisper.py's mel; prompt [401, 408],
    its generation_config's suppress lists, eos = pad = 400, max_new_tokens 24 (as
    golden_whisper.MAX_NEW).
  The suppress lists of each model are stored once under "models" in the JSON; each
  case says "suppress": "generation_config" (they are the lists used).

Every case calls (on a fresh deep copy of the generation config)
    model.generate(input_features=mel, generation_config=gc, num_beams=B,
                   num_return_sequences=1, length_penalty=LP, early_stopping=ES,
                   do_sample=False, return_dict_in_generate=True, output_scores=True,
                   synced_gpus=False[, max_new_tokens=N])
and records:
  model, audio (relative to ../shared, or to the repository), prompt, num_beams,
  length_penalty, early_stopping, max_new_tokens (null: none given) and max_length (the
  TOTAL decoder length limit HF used, prompt included: max_new_tokens + len(prompt) when
  max_new_tokens is given, else generation_config.max_length = 448),
  tokens   the generated ids after the prompt, INCLUDING one final eos if (and only if)
           the returned hypothesis finished with eos (see below),
           (the random model's beams contain 402 <|en|>, which its suppress list lets
           through: compare tokens; its "text" is a lossy U+FFFD decode of random bytes),
  ends_with_eos, n_tokens,
  score    sequences_scores[0] (rounded to 1e-6),
  logprobs per generated token (eos included), the processed log-probability HF summed:
           log_softmax(raw logits) with suppressed ids at -inf (no renormalisation),
           read from output_scores along beam_indices (rounded to 1e-6),
  sum_logprobs, text (tokenizers decode, skip_special_tokens),
  greedy   the greedy tokens of the same input and limits (whisper_oracle.greedy:
           argmax, suppress rules, eos included when emitted), and beam_equals_greedy,
  f64_same whether the same beam search in float64 gives the same tokens,
  stable   whether the top sequence is unchanged under every perturbed re-run below,
  perturbed {"0.0001": k/n, "0.001": k/n}: how many of the seeded perturbed re-runs at
           that noise scale returned the same tokens,
  eos_hyps_offered  how many eos candidates the scorer was offered during the search
           (eos within a not-done beam group's top num_beams; 0: only finalize's
           max_length path made hypotheses),
  exact_ties  whether two of the top 2 * num_beams candidates ever tied exactly in f32
           (golden_beam.TieWatch; topk's order among ties is unspecified).

How eos is reported by HF and recovered here (single input, num_return_sequences 1):
  BeamSearchScorer.process adds a hypothesis when eos is among a beam's top num_beams
  candidates; it stores the beam's ids WITHOUT the eos, with beam_indices that DO
  include the eos step, and score sum_logprobs / generated_len ** length_penalty where
  sum_logprobs includes eos's log-prob and generated_len = cur_len - prompt_len with
  cur_len = input_ids.shape[-1] + 1, i.e. generated_len counts the eos. Beams still
  running at max_length are added by finalize with generated_len = their length minus
  the prompt (no eos). finalize writes the best hypothesis and then appends ONE eos if
  its length is below min(longest kept hypothesis + 1, max_length) -- with a single
  returned sequence that is exactly when it finished with eos. Whisper (short-form)
  returns the inner generate's sequences with the prompt in front; pad == eos, so
  padding cannot be told from eos by value. Hence: n = number of beam_indices entries
  != -1 (= generated steps of the hypothesis, eos step included); tokens =
  sequences[0][len(prompt):][:n]; the script asserts nothing follows them, that eos
  occurs only as the last token, and that sum(logprobs) / n ** length_penalty
  reproduces sequences_scores.

Perturbation (robustness check): a LogitsProcessor, run after Whisper's suppress
processors, adds scale * u to the processed log-probs, u uniform in [-1, 1) drawn from
a torch.Generator seeded by golden_beam.history_hash([seed] + the beam's ids) (so it
depends on the history, not on the beam slot or the call order). 3 seeds at 1e-4 and
3 at 1e-3 (the f32 noise level of the logits, cf. golden_tiny_en.py). A C test should
require exact tokens only for stable cases (and f64_same ones); scores agree to ~1e-4.

Independence: every value comes from Hugging Face transformers / PyTorch; nothing reads
the project's C code. Deterministic: run twice, the JSON is byte-identical.
"""

import copy
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402
import golden_tiny_en  # noqa: E402
import golden_whisper  # noqa: E402
from golden_beam import TieWatch, history_hash  # noqa: E402

OUT = os.path.join("tests", "data", "whisper-beam-golden.json")
# (audio relative to ../shared, num_beams, length_penalty, early_stopping)
TINY_EN_CASES = [
    ("audio/jfk.wav", 5, 1.0, False),
    ("audio/librispeech/1272-128104-0000.wav", 5, 1.0, False),
    # ../shared/audio/librispeech holds one utterance only: two LibriVox readings (what
    # LibriSpeech is cut from) stand in. 0880 is the one wav of ../shared/audio/librivox
    # where beam 5 and greedy differ ("ill-disposed" / "old-sposed"); 0870 is the longest.
    ("audio/librivox/sense_and_sensibility_01_austen_64kb-0880.wav", 5, 1.0, False),
    ("audio/librivox/sense_and_sensibility_01_austen_64kb-0870.wav", 5, 1.0, False),
    ("audio/jfk.wav", 3, 0.8, True),
]
RANDOM_CASES = [
    (4, 1.0, False),
    (2, 2.0, True),
]
NOISE = [(1e-4, (1, 2, 3)), (1e-3, (4, 5, 6))]


class Jitter:
    """LogitsProcessor: scores + scale * U[-1, 1), seeded by the history of each row."""

    def __init__(self, scale, seed):
        self.scale, self.seed = scale, seed

    def __call__(self, input_ids, scores):
        noise = torch.empty_like(scores)
        for i, row in enumerate(input_ids.tolist()):
            g = torch.Generator().manual_seed(history_hash([self.seed] + row) & ((1 << 63) - 1))
            noise[i] = torch.rand(scores.shape[-1], generator=g, dtype=scores.dtype) * 2 - 1
        return scores + self.scale * noise


class EosWatch:
    """Wraps BeamSearchScorer.process (on top of whatever wraps it already): counts the
    eos candidates among a not-yet-done beam's top num_beams, i.e. the finished
    hypotheses the scorer is offered during the search (finalize adds none of these)."""

    def __init__(self, eos):
        self.eos, self.n = eos, 0

    def __enter__(self):
        from transformers.generation import beam_search

        self.prev = beam_search.BeamSearchScorer.process

        def process(scorer, input_ids, next_scores, next_tokens, *args, **kwargs):
            if not scorer._done[0]:
                self.n += int((next_tokens[0, :scorer.group_size] == self.eos).sum())
            return self.prev(scorer, input_ids, next_scores, next_tokens, *args, **kwargs)
        beam_search.BeamSearchScorer.process = process
        return self

    def __exit__(self, *exc):
        from transformers.generation import beam_search

        beam_search.BeamSearchScorer.process = self.prev


@torch.no_grad()
def beam(model, mel, gc, prompt, b, lp, es, max_new, jitter=None):
    """HF beam search; returns (tokens incl. final eos if finished, score, logprobs)."""
    from transformers import LogitsProcessorList

    kw = {} if max_new is None else {"max_new_tokens": max_new}
    if jitter is not None:
        kw["logits_processor"] = LogitsProcessorList([jitter])
    feats = torch.from_numpy(mel).to(next(model.parameters()).dtype)
    out = model.generate(input_features=feats, generation_config=copy.deepcopy(gc), num_beams=b,
                         num_return_sequences=1, length_penalty=lp, early_stopping=es,
                         do_sample=False, return_dict_in_generate=True, output_scores=True,
                         synced_gpus=False, **kw)
    seq = out.sequences[0].tolist()
    bi = out.beam_indices[0].tolist()
    assert seq[:len(prompt)] == prompt, (seq, prompt)
    n = sum(1 for x in bi if x != -1)
    assert all(x != -1 for x in bi[:n]), bi
    gen = seq[len(prompt):]
    assert len(gen) == n, ("unexpected padding", gen, n)
    eos = gc.eos_token_id
    assert eos not in gen[:-1], gen
    # output_scores are already gathered along beam_indices by Whisper (one row per step)
    lps = [float(out.scores[t][0, tok]) for t, tok in enumerate(gen)]
    score = float(out.sequences_scores[0])
    ref = sum(lps) / n ** lp
    assert abs(ref - score) <= 1e-5 * max(1.0, abs(score)), (ref, score)
    return gen, score, lps


def run_case(models, name, audio_rel, mel, gc, prompt, tok, b, lp, es, max_new):
    m32, m64 = models
    eos = gc.eos_token_id
    with TieWatch() as tw, EosWatch(eos) as ew:
        tokens, score, lps = beam(m32, mel, gc, prompt, b, lp, es, max_new)
    t64, _, _ = beam(m64, mel, gc, prompt, b, lp, es, max_new)
    max_length = gc.max_length if max_new is None else len(prompt) + max_new
    g = oracle.greedy(m32, oracle.encode(m32, mel), prompt, gc.suppress_tokens,
                      gc.begin_suppress_tokens, eos, max_length - len(prompt))["tokens"]
    perturbed, stable = {}, True
    for scale, seeds in NOISE:
        same = sum(beam(m32, mel, gc, prompt, b, lp, es, max_new, Jitter(scale, s))[0] == tokens
                   for s in seeds)
        perturbed["%g" % scale] = "%d/%d" % (same, len(seeds))
        stable &= same == len(seeds)
    text = tok.decode(tokens, skip_special_tokens=True)
    case = {
        "model": name, "audio": audio_rel, "prompt": prompt, "num_beams": b,
        "length_penalty": lp, "early_stopping": es, "max_new_tokens": max_new,
        "max_length": max_length, "suppress": "generation_config",
        "begin_suppress": "generation_config",
        "tokens": tokens, "n_tokens": len(tokens), "ends_with_eos": tokens[-1] == eos,
        "score": round(score, 6), "logprobs": [round(x, 6) for x in lps],
        "sum_logprobs": round(sum(lps), 6), "text": text,
        "greedy": g, "beam_equals_greedy": g == tokens, "f64_same": t64 == tokens,
        "stable": stable, "perturbed": perturbed, "eos_hyps_offered": ew.n, "exact_ties": tw.tied,
    }
    print("%-20s %-62s B=%d lp=%g es=%s: %d tokens, eos %s, score %.6f, greedy %s, f64 %s, "
          "stable %s %s, eos hyps offered %d, ties %s\n    beam:   %r\n    greedy: %r" % (
              name, audio_rel, b, lp, es, len(tokens), case["ends_with_eos"], score,
              "same" if g == tokens else "DIFFERS", t64 == tokens, stable, perturbed, ew.n, tw.tied, text,
              tok.decode(g, skip_special_tokens=True)))
    return case


def model_info(gc, source):
    return {"source": source, "eos_token_id": gc.eos_token_id, "pad_token_id": gc.pad_token_id,
            "suppress_tokens": list(gc.suppress_tokens),
            "begin_suppress_tokens": list(gc.begin_suppress_tokens)}


def main():
    from tokenizers import Tokenizer
    from transformers import GenerationConfig

    ct2_dir = (sys.argv[1] if len(sys.argv) > 1 else
               os.environ.get("ENCDEC_TINY_EN", os.path.expanduser("~/.cache/encdec/models/whisper-tiny.en")))
    torch.manual_seed(0)
    torch.set_num_threads(2)
    doc = {"_about": __doc__.split("\n\n")[0].replace("\n", " "), "models": {}, "cases": []}

    # ---- real tiny.en
    tiny = (golden_tiny_en.load_hf_model(ct2_dir, torch.float32)[0],
            golden_tiny_en.load_hf_model(ct2_dir, torch.float64)[0])
    gc = GenerationConfig.from_pretrained(golden_tiny_en.HF_ASSETS)
    tok = Tokenizer.from_file(os.path.join(golden_tiny_en.HF_ASSETS, "tokenizer.json"))
    fe = golden_tiny_en.feature_extractor()
    prompt = [gc.decoder_start_token_id] + [t for _, t in sorted(gc.forced_decoder_ids)]
    assert prompt == [50257, 50362], prompt
    doc["models"]["tiny.en"] = model_info(
        gc, "faster-whisper tiny.en CT2 f16 weights -> HF (tools/golden_tiny_en.py), f32; "
            "generation_config: ../shared/assets/whisper-tiny.en-tokenizer")
    for audio_rel, b, lp, es in TINY_EN_CASES:
        mel = oracle.log_mel(fe, oracle.read_wav(os.path.join(oracle.SHARED, audio_rel)))
        doc["cases"].append(run_case(tiny, "tiny.en", audio_rel, mel, gc, prompt, tok, b, lp, es, None))

    # ---- tiny random model
    rnd = (golden_whisper.load_model(torch.float32), golden_whisper.load_model(torch.float64))
    gc = GenerationConfig.from_pretrained(golden_whisper.MODEL_DIR)
    tok = Tokenizer.from_file(os.path.join(golden_whisper.MODEL_DIR, "tokenizer.json"))
    prompt = [gc.decoder_start_token_id] + [t for _, t in sorted(gc.forced_decoder_ids)]
    assert prompt == [401, 408], prompt
    mel = oracle.log_mel(oracle.feature_extractor_from(oracle.TINY_EN_PREPROC), oracle.read_wav(oracle.JFK_WAV))
    doc["models"]["tiny-random-whisper"] = model_info(
        gc, "tests/data/tiny-random-whisper (f16 weights upcast to f32) and its generation_config.json")
    for b, lp, es in RANDOM_CASES:
        c = run_case(rnd, "tiny-random-whisper", "audio/jfk.wav", mel, gc, prompt, tok, b, lp, es,
                     golden_whisper.MAX_NEW)
        # not degenerate: several distinct regular tokens, no long single-token run
        body = [t for t in c["tokens"] if t != gc.eos_token_id]
        assert len(set(body)) >= max(3, len(body) // 3), body
        doc["cases"].append(c)

    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True, ensure_ascii=True)
        f.write("\n")
    print("wrote %s (%d bytes, %d cases)" % (OUT, os.path.getsize(OUT), len(doc["cases"])))


if __name__ == "__main__":
    sys.exit(main())
