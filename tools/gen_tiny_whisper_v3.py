#!/usr/bin/env python3
"""Generate tests/data/tiny-random-whisper-v3/: a small random-weight Whisper model
shaped like Whisper large-v3 (128 mel bins, multilingual special tokens, bf16 weights,
sharded safetensors), but tiny.

Usage (from the repository root):

    .venv/bin/python tools/gen_tiny_whisper_v3.py              # write the model
    .venv/bin/python tools/gen_tiny_whisper_v3.py --scan 0 200 # how SEED was picked

Writes, in Hugging Face layout (what `WhisperForConditionalGeneration.from_pretrained`,
`GenerationConfig.from_pretrained` and `tokenizers.Tokenizer.from_file` read):

  config.json             WhisperConfig: d_model 64, 2+2 layers, 4 heads, ffn 128,
                          num_mel_bins 128 (as large-v3), max_source_positions 1500,
                          max_target_positions 448, vocab_size 342, torch_dtype bfloat16.
  generation_config.json  is_multilingual true, lang_to_id, task_to_id,
                          decoder_start / eos / pad / no_timestamps ids, suppress_tokens,
                          begin_suppress_tokens (no forced_decoder_ids: the prompt comes
                          from language / task, as with large-v3).
  tokenizer.json          a byte-level BPE (GPT-2 style ByteLevel pre-tokenizer and
                          decoder) trained with the `tokenizers` library on the built-in
                          English corpus of tools/gen_tiny_whisper.py: 256 byte tokens +
                          44 merges = 300 ordinary ids, then Whisper's MULTILINGUAL special
                          tokens in Whisper's order (ids below). Written compactly.
  model.safetensors.index.json   {"metadata": {"total_size": N}, "weight_map": name -> shard}
  model-00001-of-00002.safetensors  every model.encoder.* tensor
  model-00002-of-00002.safetensors  every model.decoder.* tensor
                          All weights are BF16 (metadata format=pt); there is no
                          model.safetensors. proj_out.weight is NOT stored (tied to
                          model.decoder.embed_tokens.weight); k_proj has no bias.

Token ids:
  0..299   byte-level BPE tokens (0..255 are the 256 single-byte tokens)
  300 <|endoftext|> (eos, pad)   301 <|startoftranscript|> (decoder start)
  302..309 <|en|> <|zh|> <|de|> <|es|> <|ru|> <|ko|> <|fr|> <|ja|>  (Whisper's first 8)
  310 <|translate|>   311 <|transcribe|>   312 <|startoflm|>   313 <|startofprev|>
  314 <|nospeech|>    315 <|notimestamps|>
  316..341 <|0.00|> <|0.02|> ... <|0.50|>  (26 timestamp tokens)

Size: the dimensions fixed above (1500 x 64 encoder positions, 448 x 64 decoder
positions, 128 x 64 x 3 conv1, 2+2 layers) are 328,960 parameters = 658 KB in bf16 before
any vocabulary; the vocabulary is kept small (44 merges, 26 timestamps) and the JSON
compact so the directory stays near 0.72 MB. (Below 700 KB is not reachable with these
dimensions: even 256 byte tokens and no timestamps would add 35 KB of embeddings, and the
two safetensors headers plus the index are ~18 KB.)

Weights: drawn from one seeded torch.Generator (SEED) in sorted-parameter-name order,
with the large spreads of tools/gen_tiny_whisper.py (linear 0.3, conv 0.15, token
embedding 0.35, decoder positions 0.6, LayerNorm weights 1 + 0.1 N(0,1), biases
0.1 N(0,1)) so that logits are peaky; then rounded to bf16. The encoder's positional
table keeps Whisper's sinusoids (as HF initialises them), rounded to bf16.

SEED was picked by `--scan` (see scan()): over seeds, the greedy decodes of jfk.wav
(f64 compute from the bf16 weights, 20 steps) under the four prompts
<|en|>/<|de|> x <|transcribe|>/<|translate|> (all with <|startoftranscript|> first and
<|notimestamps|> last) must (a) emit only ordinary text tokens (or <|endoftext|>), so an
engine that also bans timestamps / specials agrees, (b) keep the greedy margin >= 0.05
at every step of the two golden prompts (en transcribe, de translate), and (c) give a
de-translate sequence that differs from the other three prompts' sequences at the very
first step, so a wrong language or task token in a prompt cannot go unnoticed; among
those, seeds with many distinct tokens and suppress_tokens hits are preferred.
Over seeds 0..399 four seeds pass; SEED 129 has margin 0.055, 7 distinct tokens per
decode and 6 steps where a suppress_tokens id is the raw argmax (seed 99: margin 0.051,
10 distinct, 1 suppression hit; seed 368: margin 0.125 but no suppression hit).

Everything is deterministic: the same script and library versions give byte-identical
files. Golden values: tools/golden_whisper_v3.py (Hugging Face transformers on exactly
the bf16 values written here, upcast).
"""

import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402
from gen_tiny_whisper import CORPUS  # noqa: E402  (the same built-in training corpus)

SEED = 129  # picked by `--scan 0 400` (see docstring)
OUT_DIR = os.path.join("tests", "data", "tiny-random-whisper-v3")
SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]

N_REGULAR = 300  # 256 bytes + 44 merges
LANGS = ["en", "zh", "de", "es", "ru", "ko", "fr", "ja"]  # Whisper's order
SPECIALS = (["<|endoftext|>", "<|startoftranscript|>"]
            + ["<|%s|>" % l for l in LANGS]
            + ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
               "<|nospeech|>", "<|notimestamps|>"])
N_TIMESTAMPS = 26  # <|0.00|> .. <|0.50|>
TIMESTAMPS = ["<|%.2f|>" % (0.02 * i) for i in range(N_TIMESTAMPS)]
VOCAB_SIZE = N_REGULAR + len(SPECIALS) + N_TIMESTAMPS  # 342


def sid(tok):
    return N_REGULAR + SPECIALS.index(tok)


EOT = sid("<|endoftext|>")
SOT = sid("<|startoftranscript|>")
LANG_ID = {l: sid("<|%s|>" % l) for l in LANGS}
TRANSLATE = sid("<|translate|>")
TRANSCRIBE = sid("<|transcribe|>")
STARTOFLM = sid("<|startoflm|>")
STARTOFPREV = sid("<|startofprev|>")
NOSPEECH = sid("<|nospeech|>")
NOTIMESTAMPS = sid("<|notimestamps|>")
TIMESTAMP_BEGIN = N_REGULAR + len(SPECIALS)


def build_tokenizer():
    # compact JSON: the model directory is tight on size
    return oracle.build_bpe_tokenizer(CORPUS, N_REGULAR, SPECIALS + TIMESTAMPS, compact=True)


def suppress_lists(tok):
    # As tools/gen_tiny_whisper.py: Whisper's symbol tokens plus the task / prompt
    # specials everywhere (language tokens are not suppressed, as in Whisper);
    # " " and <|endoftext|> at the first generated position.
    return oracle.suppress_lists(
        tok, [SOT, TRANSLATE, TRANSCRIBE, STARTOFLM, STARTOFPREV, NOSPEECH], EOT)


def make_config(suppress, begin_suppress):
    cfg = oracle.tiny_config("encdec/tiny-random-whisper-v3", 128, VOCAB_SIZE, "bfloat16", SOT, EOT, EOT,
                             suppress, begin_suppress)
    gen = oracle.tiny_generation_config(
        SOT, EOT, EOT, NOTIMESTAMPS, suppress, begin_suppress,
        is_multilingual=True, lang_to_id={"<|%s|>" % l: LANG_ID[l] for l in LANGS},
        prev_sot_token_id=STARTOFPREV, task_to_id={"transcribe": TRANSCRIBE, "translate": TRANSLATE})
    return cfg, gen


def randomize(model, seed):
    """All stored tensors (bf16), from one generator in sorted-name order."""
    return oracle.random_weights(model, seed, torch.bfloat16)


def new_model(cfg):
    return oracle.new_model(cfg, 0)


def shard_of(name):
    return SHARDS[0] if name.startswith("model.encoder.") else SHARDS[1]


def write(seed):
    os.makedirs(OUT_DIR, exist_ok=True)
    tok_text, tok = build_tokenizer()
    suppress, begin_suppress = suppress_lists(tok)
    cfg, gen = make_config(suppress, begin_suppress)
    model = new_model(cfg)
    weights = randomize(model, seed)
    assert all(v.dtype == torch.bfloat16 for v in weights.values())

    for fn in os.listdir(OUT_DIR):  # a stale model.safetensors would shadow the index
        os.remove(os.path.join(OUT_DIR, fn))
    oracle.write_model_json(OUT_DIR, cfg, gen, tok_text, indent=1)
    total = 0
    for shard in SHARDS:
        part = {k: v for k, v in weights.items() if shard_of(k) == shard}
        save_file(part, os.path.join(OUT_DIR, shard), metadata={"format": "pt"})
        total += sum(v.numel() * 2 for v in part.values())
    index = {"metadata": {"total_size": total},
             "weight_map": {k: shard_of(k) for k in sorted(weights)}}
    oracle.write_json(os.path.join(OUT_DIR, "model.safetensors.index.json"), index,
                      indent=0, separators=(",", ":"))

    size = oracle.print_model_dir(OUT_DIR, weights, suppress, begin_suppress, 34)
    assert size < 750 * 1000, "model dir too large"


def scan(lo, hi):
    """Prints, per seed, what the selection criteria of the docstring look at."""
    import golden_whisper_v3 as gw

    _, tok = build_tokenizer()
    suppress, begin_suppress = suppress_lists(tok)
    cfg, gen = make_config(suppress, begin_suppress)
    mel = gw.hf_mel(gw.read_wav(gw.AUDIO))
    prompts = {(l, t): [SOT, LANG_ID[l], t, NOTIMESTAMPS]
               for l in ("en", "de") for t in (TRANSCRIBE, TRANSLATE)}
    for seed in range(lo, hi):
        model = new_model(cfg)
        model = gw.model_from_weights(model, randomize(model, seed), torch.float64)
        with torch.no_grad():
            enc = model.model.encoder(torch.from_numpy(mel).double()).last_hidden_state
        res = {k: gw.greedy(model, enc, p, gen) for k, p in prompts.items()}
        a, b = res[("en", TRANSCRIBE)], res[("de", TRANSLATE)]
        ok_tokens = all(t <= EOT for r in (a, b) for t in r["tokens"])
        margin = min(min(a["margins"]), min(b["margins"]))
        first_differs = all(r["tokens"][0] != b["tokens"][0]
                            for k, r in res.items() if k != ("de", TRANSLATE))
        distinct = min(len(set(a["tokens"])), len(set(b["tokens"])))
        sup = sum(ra != t for r in (a, b) for ra, t in zip(r["raw_argmax"], r["tokens"]))
        good = ok_tokens and margin >= 0.05 and first_differs
        print("seed %3d %s margin %.3f distinct %2d suppress-hits %2d first-differs %d "
              "tokens-ok %d  a=%s b=%s" % (seed, "GOOD" if good else "    ", margin, distinct,
                                           sup, first_differs, ok_tokens, a["tokens"], b["tokens"]),
              flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--scan":
        return scan(int(sys.argv[2]), int(sys.argv[3]))
    write(SEED)


if __name__ == "__main__":
    sys.exit(main())
