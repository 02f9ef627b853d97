#!/usr/bin/env python3
"""Generate tests/data/tiny-random-whisper/: a small random-weight Whisper model.

Usage (from the repository root):

    .venv/bin/python tools/gen_tiny_whisper.py

Writes, in Hugging Face layout (what `WhisperForConditionalGeneration.from_pretrained`
and `tokenizers.Tokenizer.from_file` read):

  config.json             WhisperConfig: d_model 64, 2+2 layers, 4 heads, ffn 128,
                          80 mel bins, max_source_positions 1500 (the encoder sees the
                          full 3000-frame / 30 s window), max_target_positions 448,
                          vocab_size 460.
  generation_config.json  decoder_start / eos / pad / no_timestamps ids, suppress_tokens,
                          begin_suppress_tokens, forced_decoder_ids, is_multilingual false.
  tokenizer.json          a byte-level BPE (GPT-2 style ByteLevel pre-tokenizer and
                          decoder) trained here with the `tokenizers` library on a small
                          built-in English corpus: 256 byte tokens + 144 merges = 400
                          ordinary ids, then Whisper-style special tokens appended as
                          added_tokens (ids below). Merges are written in the legacy
                          "a b" string form, the form of the real whisper-tiny.en
                          tokenizer.json (tokenizers reads both forms).
  model.safetensors       all weights as float16 (metadata format=pt). proj_out.weight is
                          NOT stored: as in HF checkpoints it is tied to
                          model.decoder.embed_tokens.weight. k_proj has no bias (HF Whisper).

Token ids:
  0..399   byte-level BPE tokens (0..255 are the 256 single-byte tokens)
  400 <|endoftext|>  (eos, pad)        401 <|startoftranscript|> (decoder start, bos)
  402 <|en|>   403 <|translate|>   404 <|transcribe|>   405 <|startoflm|>
  406 <|startofprev|>   407 <|nocaptions|>   408 <|notimestamps|>
  409..459 <|0.00|> <|0.02|> ... <|1.00|>  (51 timestamp tokens)

Weights: drawn from one seeded torch.Generator (SEED below) in sorted-parameter-name
order, with deliberately LARGE spreads (linear weights std 0.3, conv weights 0.15, token
embedding 0.35, decoder positions 0.6, LayerNorm weights 1 + 0.1 N(0,1), biases
0.1 N(0,1)) so that the logits are peaky and the greedy choice has a clear margin
(checked in tools/golden_whisper.py). The encoder's positional table keeps Whisper's
sinusoids (as HF initialises it), rounded to f16.

SEED was picked by scanning seeds 0..129 over a few spreads for a jfk.wav greedy decode
that (a) never emits a timestamp or other special token, so an engine that also bans
timestamps in no-timestamp mode picks the same ids, (b) has many distinct tokens
(17 of 24, not a one-token loop), (c) has steps where a suppress_tokens id is the raw
argmax (6 of 24), so suppression is exercised, and (d) keeps the greedy margin >= 0.1.
(Seed 18 with embeddings 0.4 / positions 0.5 is an alternative that stops at
<|endoftext|> after 13 tokens, margin 0.23, but never exercises suppression.)

Everything is deterministic: the same script and library versions give byte-identical
files. The golden values for this model come from tools/golden_whisper.py, which runs
Hugging Face transformers (not this project's C code) on exactly the f16 values written
here, upcast to float32.
"""

import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SEED = 55  # chosen by a scan (see report/docstring): varied tokens, suppression hits, margin > 0.1
OUT_DIR = os.path.join("tests", "data", "tiny-random-whisper")

N_REGULAR = 400  # 256 bytes + 144 merges
SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
]
N_TIMESTAMPS = 51  # <|0.00|> .. <|1.00|>
TIMESTAMPS = ["<|%.2f|>" % (0.02 * i) for i in range(N_TIMESTAMPS)]
VOCAB_SIZE = N_REGULAR + len(SPECIALS) + N_TIMESTAMPS  # 460

EOT = N_REGULAR + 0
SOT = N_REGULAR + 1
EN = N_REGULAR + 2
TRANSLATE = N_REGULAR + 3
TRANSCRIBE = N_REGULAR + 4
STARTOFLM = N_REGULAR + 5
STARTOFPREV = N_REGULAR + 6
NOCAPTIONS = N_REGULAR + 7
NOTIMESTAMPS = N_REGULAR + 8
TIMESTAMP_BEGIN = N_REGULAR + 9

# Built-in training corpus (kept in the script so the tokenizer does not depend on any
# outside file). Plain English, public-domain style sentences.
CORPUS = """\
And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.
Mister Quilter is the apostle of the middle classes, and we are glad to welcome his gospel.
Today only platforms one and three are used.
And mister John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.
He was not an ill disposed young man, unless to be rather cold hearted and rather selfish is to be ill disposed.
Had he married a more amiable woman, he might have been made still more respectable than he was.
He might even have been made amiable himself.
Ten of clubs. Four, queen of clubs. Seven of clubs. Five, five. Eight of spades, four of clubs, seven of hearts.
The quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun.
It was the best of times, it was the worst of times, it was the age of wisdom.
The rain in the plain falls mainly on the hills, and the wind blows over the sea.
We shall go on to the end, we shall fight in the fields and in the streets.
There is nothing either good or bad, but thinking makes it so.
All that glitters is not gold; all who wander are not lost.
She sells sea shells on the sea shore, and the shells she sells are surely sea shells.
Numbers such as 1, 2, 3, 10, 42, 100 and 2024 appear in the text, with dates like 21.11.
The engine reads the model, computes the features, encodes the audio and decodes the text.
Whisper is a speech recognition model that turns sound into words, one token at a time.
"What time is it?" she asked. "Half past three," he said, 'and the train is late.'
The people of the town gathered in the square to hear the news from the capital.
In the morning the children walked to school along the river, singing as they went.
"""


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

    # Write it out ourselves (fixed field order, legacy string merges) so the file is
    # stable and looks like the real Whisper tokenizer.json.
    raw = json.loads(tok.to_str())
    vocab = raw["model"]["vocab"]
    merges = raw["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    assert len(merges) == N_REGULAR - 256, len(merges)
    ids = sorted(vocab.values())
    assert ids == list(range(N_REGULAR))
    added = []
    for i, content in enumerate(SPECIALS + TIMESTAMPS):
        added.append(
            {
                "id": N_REGULAR + i,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    out = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
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
    text = json.dumps(out, ensure_ascii=False, indent=1) + "\n"
    # Round-trip through the library: it must load and agree with the trained one.
    tok2 = Tokenizer.from_str(text)
    assert tok2.get_vocab_size() == VOCAB_SIZE, tok2.get_vocab_size()
    for s in ["And so my fellow Americans", " ask not what your country can do", "x"]:
        assert tok2.encode(s).ids == tok.encode(s).ids, s
    assert tok2.token_to_id("<|notimestamps|>") == NOTIMESTAMPS
    assert tok2.token_to_id("<|1.00|>") == VOCAB_SIZE - 1
    return text, tok2


def suppress_lists(tok):
    # Whisper suppresses a set of symbol tokens (quotes, brackets, '#', ...) everywhere,
    # plus the task/prompt special tokens; at the first generated position it also
    # suppresses " " and <|endoftext|>. Mirror that with this vocabulary's ids.
    symbols = ['"', "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]", "^", "_", "`", "{", "|", "}", "~"]
    vocab = tok.get_vocab()
    # byte-level: these ASCII characters map to themselves
    sym_ids = sorted(vocab[s] for s in symbols if s in vocab)
    # also a few multi-character tokens that start with a space + symbol, if present
    suppress = sym_ids + [SOT, TRANSLATE, TRANSCRIBE, STARTOFLM, STARTOFPREV, NOCAPTIONS]
    space_id = vocab["\u0120"]  # 'Ġ' = byte 0x20
    begin_suppress = [space_id, EOT]
    return sorted(set(suppress)), begin_suppress


def make_config(suppress, begin_suppress):
    cfg = {
        "_name_or_path": "encdec/tiny-random-whisper",
        "activation_dropout": 0.0,
        "activation_function": "gelu",
        "apply_spec_augment": False,
        "architectures": ["WhisperForConditionalGeneration"],
        "attention_dropout": 0.0,
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": SOT,
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
        "forced_decoder_ids": [[1, NOTIMESTAMPS]],
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": 448,
        "max_source_positions": 1500,
        "max_target_positions": 448,
        "model_type": "whisper",
        "num_hidden_layers": 2,
        "num_mel_bins": 80,
        "pad_token_id": EOT,
        "scale_embedding": False,
        "suppress_tokens": suppress,
        "tie_word_embeddings": True,
        "torch_dtype": "float16",
        "use_cache": True,
        "use_weighted_layer_sum": False,
        "vocab_size": VOCAB_SIZE,
    }
    gen = {
        "alignment_heads": [[1, 0], [1, 1]],
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": SOT,
        "decoder_start_token_id": SOT,
        "eos_token_id": EOT,
        "forced_decoder_ids": [[1, NOTIMESTAMPS]],
        "is_multilingual": False,
        "max_initial_timestamp_index": 1,
        "max_length": 448,
        "no_timestamps_token_id": NOTIMESTAMPS,
        "pad_token_id": EOT,
        "return_timestamps": False,
        "suppress_tokens": suppress,
    }
    return cfg, gen


def randomize(model):
    g = torch.Generator().manual_seed(SEED)
    sd = model.state_dict()
    out = {}
    for name in sorted(sd.keys()):
        if name == "proj_out.weight":
            continue  # tied to model.decoder.embed_tokens.weight
        p = sd[name]
        shape = tuple(p.shape)
        if name == "model.encoder.embed_positions.weight":
            v = p.clone()  # Whisper sinusoids, as HF initialises them
        elif name == "model.decoder.embed_tokens.weight":
            v = 0.35 * torch.randn(shape, generator=g)
        elif name == "model.decoder.embed_positions.weight":
            v = 0.6 * torch.randn(shape, generator=g)
        elif "layer_norm" in name and name.endswith(".weight"):
            v = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            v = 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".weight") and len(shape) == 3:  # conv1 / conv2
            v = 0.15 * torch.randn(shape, generator=g)
        elif name.endswith(".weight") and len(shape) == 2:
            v = 0.3 * torch.randn(shape, generator=g)
        else:
            raise RuntimeError("unhandled parameter " + name)
        out[name] = v.to(torch.float16).contiguous()
    return out


def main():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(SEED)
    os.makedirs(OUT_DIR, exist_ok=True)
    tok_text, tok = build_tokenizer()
    suppress, begin_suppress = suppress_lists(tok)
    cfg, gen = make_config(suppress, begin_suppress)

    config = WhisperConfig(**{k: v for k, v in cfg.items() if not k.startswith("_")})
    model = WhisperForConditionalGeneration(config)
    weights = randomize(model)
    # every parameter but the tied output projection is stored
    expect = set(model.state_dict().keys()) - {"proj_out.weight"}
    assert set(weights.keys()) == expect
    assert not any("k_proj.bias" in k for k in weights)

    with open(os.path.join(OUT_DIR, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(OUT_DIR, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    with open(os.path.join(OUT_DIR, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_text)
    save_file(weights, os.path.join(OUT_DIR, "model.safetensors"), metadata={"format": "pt"})

    total = 0
    for fn in sorted(os.listdir(OUT_DIR)):
        sz = os.path.getsize(os.path.join(OUT_DIR, fn))
        total += sz
        print("%-24s %8d bytes" % (fn, sz))
    print("total %d bytes, %d tensors, %d parameters" % (
        total, len(weights), sum(int(np.prod(v.shape)) for v in weights.values())))
    print("suppress_tokens", suppress)
    print("begin_suppress_tokens", begin_suppress)
    assert total < 1024 * 1024, "model dir must stay under 1 MB"


if __name__ == "__main__":
    sys.exit(main())
