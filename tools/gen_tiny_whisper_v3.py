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

import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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

SCALES = {"embed": 0.35, "dec_pos": 0.6, "ln": 0.1, "bias": 0.1, "conv": 0.15, "linear": 0.3}


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=N_REGULAR,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    lines = [l for l in CORPUS.splitlines() if l.strip()]
    tok.train_from_iterator(lines * 4, trainer=trainer)
    assert tok.get_vocab_size() == N_REGULAR, tok.get_vocab_size()

    raw = json.loads(tok.to_str())
    vocab = raw["model"]["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in raw["model"]["merges"]]
    assert len(merges) == N_REGULAR - 256, len(merges)
    assert sorted(vocab.values()) == list(range(N_REGULAR))
    added = [{"id": N_REGULAR + i, "content": c, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, c in enumerate(SPECIALS + TIMESTAMPS)]
    out = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
            "merges": merges,
        },
    }
    # compact JSON: the model directory is tight on size
    text = json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n"
    tok2 = Tokenizer.from_str(text)
    assert tok2.get_vocab_size() == VOCAB_SIZE, tok2.get_vocab_size()
    for s in ["And so my fellow Americans", " ask not what your country can do", "x"]:
        assert tok2.encode(s).ids == tok.encode(s).ids, s
    for i, c in enumerate(SPECIALS + TIMESTAMPS):
        assert tok2.token_to_id(c) == N_REGULAR + i, c
    assert tok2.token_to_id("<|0.50|>") == VOCAB_SIZE - 1
    return text, tok2


def suppress_lists(tok):
    # As tools/gen_tiny_whisper.py: Whisper's symbol tokens plus the task / prompt
    # specials everywhere (language tokens are not suppressed, as in Whisper);
    # " " and <|endoftext|> at the first generated position.
    symbols = ['"', "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]",
               "^", "_", "`", "{", "|", "}", "~"]
    vocab = tok.get_vocab()
    sym_ids = sorted(vocab[s] for s in symbols if s in vocab)
    suppress = sym_ids + [SOT, TRANSLATE, TRANSCRIBE, STARTOFLM, STARTOFPREV, NOSPEECH]
    begin_suppress = [vocab["\u0120"], EOT]
    return sorted(set(suppress)), begin_suppress


def make_config(suppress, begin_suppress):
    cfg = {
        "_name_or_path": "encdec/tiny-random-whisper-v3",
        "activation_dropout": 0.0,
        "activation_function": "gelu",
        "apply_spec_augment": False,
        "architectures": ["WhisperForConditionalGeneration"],
        "attention_dropout": 0.0,
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": EOT,
        "classifier_proj_size": 256,
        "d_model": 64,
        "decoder_attention_heads": 4,
        "decoder_ffn_dim": 128,
        "decoder_layerdrop": 0.0,
        "decoder_layers": 2,
        "decoder_start_token_id": SOT,
        "dropout": 0.0,
        "encoder_attention_heads": 4,
        "encoder_ffn_dim": 128,
        "encoder_layerdrop": 0.0,
        "encoder_layers": 2,
        "eos_token_id": EOT,
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": 448,
        "max_source_positions": 1500,
        "max_target_positions": 448,
        "model_type": "whisper",
        "num_hidden_layers": 2,
        "num_mel_bins": 128,
        "pad_token_id": EOT,
        "scale_embedding": False,
        "suppress_tokens": suppress,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "use_weighted_layer_sum": False,
        "vocab_size": VOCAB_SIZE,
    }
    gen = {
        "alignment_heads": [[1, 0], [1, 1]],
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": EOT,
        "decoder_start_token_id": SOT,
        "eos_token_id": EOT,
        "is_multilingual": True,
        "lang_to_id": {"<|%s|>" % l: LANG_ID[l] for l in LANGS},
        "max_initial_timestamp_index": 1,
        "max_length": 448,
        "no_timestamps_token_id": NOTIMESTAMPS,
        "pad_token_id": EOT,
        "prev_sot_token_id": STARTOFPREV,
        "return_timestamps": False,
        "suppress_tokens": suppress,
        "task_to_id": {"transcribe": TRANSCRIBE, "translate": TRANSLATE},
    }
    return cfg, gen


def randomize(model, seed, scales=SCALES):
    """All stored tensors (bf16), from one generator in sorted-name order."""
    g = torch.Generator().manual_seed(seed)
    sd = model.state_dict()
    out = {}
    for name in sorted(sd.keys()):
        if name == "proj_out.weight":
            continue  # tied to model.decoder.embed_tokens.weight
        shape = tuple(sd[name].shape)
        if name == "model.encoder.embed_positions.weight":
            v = sd[name].clone()  # Whisper sinusoids, as HF initialises them
        elif name == "model.decoder.embed_tokens.weight":
            v = scales["embed"] * torch.randn(shape, generator=g)
        elif name == "model.decoder.embed_positions.weight":
            v = scales["dec_pos"] * torch.randn(shape, generator=g)
        elif "layer_norm" in name and name.endswith(".weight"):
            v = 1.0 + scales["ln"] * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            v = scales["bias"] * torch.randn(shape, generator=g)
        elif name.endswith(".weight") and len(shape) == 3:  # conv1 / conv2
            v = scales["conv"] * torch.randn(shape, generator=g)
        elif name.endswith(".weight") and len(shape) == 2:
            v = scales["linear"] * torch.randn(shape, generator=g)
        else:
            raise RuntimeError("unhandled parameter " + name)
        out[name] = v.to(torch.bfloat16).contiguous()
    return out


def new_model(cfg):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(**{k: v for k, v in cfg.items() if not k.startswith("_")})
    return WhisperForConditionalGeneration(config)


def shard_of(name):
    return SHARDS[0] if name.startswith("model.encoder.") else SHARDS[1]


def write(seed):
    os.makedirs(OUT_DIR, exist_ok=True)
    tok_text, tok = build_tokenizer()
    suppress, begin_suppress = suppress_lists(tok)
    cfg, gen = make_config(suppress, begin_suppress)
    model = new_model(cfg)
    weights = randomize(model, seed)
    expect = set(model.state_dict().keys()) - {"proj_out.weight"}
    assert set(weights.keys()) == expect
    assert not any("k_proj.bias" in k for k in weights)
    assert all(v.dtype == torch.bfloat16 for v in weights.values())

    for fn in os.listdir(OUT_DIR):  # a stale model.safetensors would shadow the index
        os.remove(os.path.join(OUT_DIR, fn))
    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    with open(os.path.join(OUT_DIR, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=1)
        f.write("\n")
    with open(os.path.join(OUT_DIR, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_text)
    total = 0
    for shard in SHARDS:
        part = {k: v for k, v in weights.items() if shard_of(k) == shard}
        save_file(part, os.path.join(OUT_DIR, shard), metadata={"format": "pt"})
        total += sum(v.numel() * 2 for v in part.values())
    index = {"metadata": {"total_size": total},
             "weight_map": {k: shard_of(k) for k in sorted(weights)}}
    with open(os.path.join(OUT_DIR, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=0, separators=(",", ":"))
        f.write("\n")

    size = 0
    for fn in sorted(os.listdir(OUT_DIR)):
        sz = os.path.getsize(os.path.join(OUT_DIR, fn))
        size += sz
        print("%-34s %8d bytes" % (fn, sz))
    print("total %d bytes, %d tensors, %d parameters" % (
        size, len(weights), sum(int(np.prod(v.shape)) for v in weights.values())))
    print("suppress_tokens", suppress)
    print("begin_suppress_tokens", begin_suppress)
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
