"""Shared pieces of the Whisper oracle scripts in tools/.

Used by gen_tiny_whisper.py / gen_tiny_whisper_v3.py (the random test models),
golden_whisper.py / golden_whisper_v3.py (their golden values), golden_tiny_en.py and
golden_base.py (goldens of the real tiny.en / base checkpoints).

These scripts are the project's independent oracle: every value comes from Hugging Face
transformers / PyTorch / tokenizers (and openai-whisper or faster-whisper as second
opinions), never from this project's C code. The functions below were factored out of
the scripts without changing what they compute: each script still writes byte-identical
files. Nothing here reads the project's sources.
"""

import copy
import json
import os
import wave

import numpy as np
import torch

# ../shared beside the repository (override with $ENCDEC_SHARED)
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))
JFK_WAV = SHARED + "/audio/jfk.wav"
TINY_EN_ASSETS = SHARED + "/assets/whisper-tiny.en-tokenizer"  # HF config, tokenizer, preprocessor
TINY_EN_PREPROC = TINY_EN_ASSETS + "/preprocessor_config.json"  # mel settings (80 bands)

N_FRAMES = 3000  # mel frames of the 30 s window
N_POSITIONS = 1500  # encoder output rows (after the stride-2 conv)
MEL_STRIDE = 25  # golden mel frames: 0, 25, ... 2975
ENC_STRIDE = 10  # golden encoder rows: 0, 10, ... 1490


# ------------------------------------------------------------------ random tiny models
# The tiny random models (gen_tiny_whisper*.py) share everything but the vocabulary,
# the mel count and the storage dtype.

# Whisper suppresses these symbol tokens everywhere (openai-whisper's tokenizer
# non_speech_tokens, the single-character ones); with a byte-level BPE each of these
# ASCII characters is its own token.
SYMBOLS = ['"', "#", "(", ")", "*", "+", "/", ":", ";", "<", "=", ">", "@", "[", "\\", "]",
           "^", "_", "`", "{", "|", "}", "~"]

# Weight spreads (standard deviations) of random_weights: deliberately LARGE so the
# logits are peaky and the greedy choice has a clear margin.
SCALES = {"embed": 0.35, "dec_pos": 0.6, "ln": 0.1, "bias": 0.1, "conv": 0.15, "linear": 0.3}


def build_bpe_tokenizer(corpus, n_regular, specials, compact):
    """Trains a GPT-2 style byte-level BPE with n_regular ids (256 bytes + merges) on
    corpus and appends `specials` (Whisper's special / timestamp tokens) as added_tokens.

    The tokenizer.json is written here (fixed field order, merges in the legacy "a b"
    string form of the real Whisper tokenizer.json) so the file is stable; compact=True
    writes it without indentation. Returns (json text, the tokenizer loaded back from
    that text), after checking the text loads, encodes as the trained tokenizer does and
    gives specials[i] the id n_regular + i.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=n_regular,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    lines = [l for l in corpus.splitlines() if l.strip()]
    tok.train_from_iterator(lines * 4, trainer=trainer)
    assert tok.get_vocab_size() == n_regular, tok.get_vocab_size()

    raw = json.loads(tok.to_str())
    vocab = raw["model"]["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in raw["model"]["merges"]]
    assert len(merges) == n_regular - 256, len(merges)
    assert sorted(vocab.values()) == list(range(n_regular))
    added = [{"id": n_regular + i, "content": c, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for i, c in enumerate(specials)]
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
    if compact:
        text = json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n"
    else:
        text = json.dumps(out, ensure_ascii=False, indent=1) + "\n"
    # Round-trip through the library: it must load and agree with the trained one.
    tok2 = Tokenizer.from_str(text)
    assert tok2.get_vocab_size() == n_regular + len(specials), tok2.get_vocab_size()
    for s in ["And so my fellow Americans", " ask not what your country can do", "x"]:
        assert tok2.encode(s).ids == tok.encode(s).ids, s
    for i, c in enumerate(specials):
        assert tok2.token_to_id(c) == n_regular + i, c
    return text, tok2


def suppress_lists(tok, prompt_specials, eot):
    """(suppress_tokens, begin_suppress_tokens) as Whisper sets them, with tok's ids.

    Everywhere: the SYMBOLS tokens plus the task / prompt specials given; at the first
    generated position also " " (byte-level 'G-dot' = byte 0x20) and <|endoftext|>.
    """
    vocab = tok.get_vocab()
    sym_ids = sorted(vocab[s] for s in SYMBOLS if s in vocab)
    suppress = sym_ids + list(prompt_specials)
    begin_suppress = [vocab["\u0120"], eot]
    return sorted(set(suppress)), begin_suppress


def tiny_config(name, num_mel_bins, vocab_size, torch_dtype, sot, eot, bos, suppress,
                begin_suppress, **extra):
    """config.json of a tiny Whisper: d_model 64, 2+2 layers, 4 heads, ffn 128, the full
    1500-position encoder and 448 decoder positions; keys in sorted order."""
    cfg = {
        "_name_or_path": name,
        "activation_dropout": 0.0,
        "activation_function": "gelu",
        "apply_spec_augment": False,
        "architectures": ["WhisperForConditionalGeneration"],
        "attention_dropout": 0.0,
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": bos,
        "classifier_proj_size": 256,
        "d_model": 64,
        "decoder_attention_heads": 4,
        "decoder_ffn_dim": 128,
        "decoder_layerdrop": 0.0,
        "decoder_layers": 2,
        "decoder_start_token_id": sot,
        "dropout": 0.0,
        "encoder_attention_heads": 4,
        "encoder_ffn_dim": 128,
        "encoder_layerdrop": 0.0,
        "encoder_layers": 2,
        "eos_token_id": eot,
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": 448,
        "max_source_positions": N_POSITIONS,
        "max_target_positions": 448,
        "model_type": "whisper",
        "num_hidden_layers": 2,
        "num_mel_bins": num_mel_bins,
        "pad_token_id": eot,
        "scale_embedding": False,
        "suppress_tokens": suppress,
        "tie_word_embeddings": True,
        "torch_dtype": torch_dtype,
        "use_cache": True,
        "use_weighted_layer_sum": False,
        "vocab_size": vocab_size,
    }
    cfg.update(extra)
    return dict(sorted(cfg.items()))


def tiny_generation_config(sot, eot, bos, no_timestamps, suppress, begin_suppress, **extra):
    """generation_config.json of a tiny Whisper (no timestamps); keys in sorted order."""
    gen = {
        "alignment_heads": [[1, 0], [1, 1]],
        "begin_suppress_tokens": begin_suppress,
        "bos_token_id": bos,
        "decoder_start_token_id": sot,
        "eos_token_id": eot,
        "max_initial_timestamp_index": 1,
        "max_length": 448,
        "no_timestamps_token_id": no_timestamps,
        "pad_token_id": eot,
        "return_timestamps": False,
        "suppress_tokens": suppress,
    }
    gen.update(extra)
    return dict(sorted(gen.items()))


def new_model(cfg, seed):
    """A freshly initialised HF model for the config dict cfg (torch seeded with seed;
    of HF's initialisation only the encoder's sinusoidal positions are kept)."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(seed)
    config = WhisperConfig(**{k: v for k, v in cfg.items() if not k.startswith("_")})
    return WhisperForConditionalGeneration(config)


def random_weights(model, seed, dtype, scales=SCALES):
    """Every stored tensor of model, drawn from one generator seeded with seed in
    sorted-parameter-name order and rounded to dtype.

    proj_out.weight is left out (tied to model.decoder.embed_tokens.weight, as in HF
    checkpoints); the encoder positions keep Whisper's sinusoids (as HF initialises them).
    Spreads: LayerNorm weights 1 + ln N(0,1), everything else scale * N(0,1).
    """
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
        out[name] = v.to(dtype).contiguous()
    # every parameter but the tied output projection is stored; HF Whisper's k_proj has no bias
    assert set(out.keys()) == set(sd.keys()) - {"proj_out.weight"}
    assert not any("k_proj.bias" in k for k in out)
    return out


def write_json(path, obj, **dump_args):
    """obj as JSON (json.dump with dump_args) plus a final newline."""
    with open(path, "w") as f:
        json.dump(obj, f, **dump_args)
        f.write("\n")


def write_model_json(out_dir, cfg, gen, tok_text, indent):
    """config.json and generation_config.json (indented by indent) and tokenizer.json."""
    write_json(os.path.join(out_dir, "config.json"), cfg, indent=indent)
    write_json(os.path.join(out_dir, "generation_config.json"), gen, indent=indent)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok_text)


def print_model_dir(out_dir, weights, suppress, begin_suppress, name_width):
    """Prints the size of every file in out_dir and a summary; returns the total bytes."""
    total = 0
    for fn in sorted(os.listdir(out_dir)):
        sz = os.path.getsize(os.path.join(out_dir, fn))
        total += sz
        print("%-*s %8d bytes" % (name_width, fn, sz))
    print("total %d bytes, %d tensors, %d parameters" % (
        total, len(weights), sum(int(np.prod(v.shape)) for v in weights.values())))
    print("suppress_tokens", suppress)
    print("begin_suppress_tokens", begin_suppress)
    return total


# ------------------------------------------------------------------------ audio, mel
def read_wav(path):
    """16 kHz mono s16 wav as float32 samples / 32768; None for any other format."""
    with wave.open(path, "rb") as w:
        if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
            return None
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def feature_extractor_from(preproc_path, n_mels=None):
    """HF WhisperFeatureExtractor with the settings of a preprocessor_config.json; n_mels
    overrides its feature_size (large-v3: 128 bands, where the tiny.en file says 80)."""
    from transformers import WhisperFeatureExtractor

    with open(preproc_path) as f:
        pp = json.load(f)
    return WhisperFeatureExtractor(
        feature_size=pp["feature_size"] if n_mels is None else n_mels,
        sampling_rate=pp["sampling_rate"],
        hop_length=pp["hop_length"],
        chunk_length=pp["chunk_length"],
        n_fft=pp["n_fft"],
        padding_value=pp["padding_value"],
    )


def log_mel(fe, audio, n_mels=80):
    """HF log-mel [1, n_mels, 3000] (float32) of audio zero-padded to 30 s."""
    feats = fe(audio, sampling_rate=16000, return_tensors="np").input_features
    assert feats.shape == (1, n_mels, N_FRAMES), feats.shape
    return feats.astype(np.float32)


def compare_openai_mel(audio, mel):
    """Prints how far openai-whisper's log-mel (a second, independent mel) is from
    mel [1, n_mels, 3000]; for information only."""
    try:
        import whisper

        ow = whisper.log_mel_spectrogram(torch.from_numpy(audio), mel.shape[1], padding=480000)[:, :N_FRAMES].numpy()
        print("mel: max |HF - openai-whisper| = %.3g (HF range %.3f .. %.3f)"
              % (np.abs(ow - mel[0]).max(), mel.min(), mel.max()))
    except Exception as e:  # pragma: no cover
        print("openai-whisper mel comparison skipped:", e)


# ------------------------------------------------------------------------- HF models
def model_from_weights(model, sd, dtype, stored_dtype):
    """model holding exactly the stored tensors sd (all of stored_dtype, proj_out tied
    and absent), upcast to dtype; checked value by value."""
    assert all(v.dtype == stored_dtype for v in sd.values())
    sd = {k: v.to(dtype) for k, v in sd.items()}
    model = model.to(dtype)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert list(missing) == ["proj_out.weight"], missing
    assert not unexpected, unexpected
    model.tie_weights()
    assert torch.equal(model.proj_out.weight, model.model.decoder.embed_tokens.weight)
    for k, v in model.state_dict().items():  # everything is exactly the stored value
        assert torch.equal(v, sd["model.decoder.embed_tokens.weight" if k == "proj_out.weight" else k]), k
    model.eval()
    return model


def model_from_numpy(config, sd, dtype):
    """HF WhisperForConditionalGeneration(config) holding the numpy state dict sd (every
    parameter, shapes checked; f16 values are exact in f32 and f64), in dtype."""
    from transformers import WhisperForConditionalGeneration

    model = WhisperForConditionalGeneration(config)
    ref = model.state_dict()
    assert set(sd) == set(ref), (sorted(set(ref) - set(sd)), sorted(set(sd) - set(ref)))
    for k, v in sd.items():
        assert tuple(v.shape) == tuple(ref[k].shape), (k, v.shape, ref[k].shape)
    model = model.to(dtype)
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)).to(dtype)
                           for k, v in sd.items()}, strict=True)
    model.eval()
    return model


# -------------------------------------------------------------------- encoder, greedy
@torch.no_grad()
def encode(model, mel):
    """Encoder output [1, 1500, d] of the mel [1, n_mels, 3000], in the model's dtype."""
    dtype = next(model.parameters()).dtype
    return model.model.encoder(torch.from_numpy(mel).to(dtype)).last_hidden_state


@torch.no_grad()
def cross_kv(model, enc):
    """Per decoder layer, (encoder_attn.k_proj(enc), encoder_attn.v_proj(enc)) [1500, d]:
    the cross-attention keys / values an implementation computes once per window."""
    cross = []
    for layer in model.model.decoder.layers:
        a = layer.encoder_attn
        assert a.k_proj.bias is None
        cross.append((a.k_proj(enc)[0], a.v_proj(enc)[0]))
    return cross


@torch.no_grad()
def greedy(model, enc, prompt, suppress, begin_suppress, eos, max_new):
    """Greedy decode after prompt, with full recompute every step (no KV cache: the plain
    definition of the model).

    Rule (HF's SuppressTokens / SuppressTokensAtBegin processors): suppress -> -inf at
    every step, begin_suppress -> -inf at the first generated position only; argmax; stop
    at eos (included) or after max_new tokens. Returns prompt, tokens, logits (the raw
    rows, BEFORE suppression, stacked), margins (top1 - top2 after suppression) and
    raw_argmax (argmax of the raw row).
    """
    suppress = torch.tensor(suppress, dtype=torch.long)
    begin_suppress = torch.tensor(begin_suppress, dtype=torch.long)
    seq = list(prompt)
    tokens, rows, margins, raw_argmax = [], [], [], []
    for step in range(max_new):
        out = model(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([seq]), use_cache=False)
        row = out.logits[0, -1].clone()
        rows.append(row.clone())
        raw_argmax.append(int(row.argmax()))
        row[suppress] = -float("inf")
        if step == 0:
            row[begin_suppress] = -float("inf")
        top2 = torch.topk(row, 2).values
        margins.append(float(top2[0] - top2[1]))
        t = int(row.argmax())
        tokens.append(t)
        seq.append(t)
        if t == eos:
            break
    return {"prompt": list(prompt), "tokens": tokens, "logits": torch.stack(rows),
            "margins": margins, "raw_argmax": raw_argmax}


def top_logits(rows, k):
    """Per raw logits row: the k largest ids (int32) and values (f64), descending, and
    the logsumexp of the whole row; as three lists."""
    ids, vals, lse = [], [], []
    for row in rows:
        top = torch.topk(row, k)
        ids.append(top.indices.numpy().astype(np.int32))
        vals.append(top.values.double().numpy())
        lse.append(float(torch.logsumexp(row.double(), 0)))
    return ids, vals, lse


@torch.no_grad()
def hf_generate(model, mel, gc, **kw):
    """transformers' own model.generate (KV cache, its logits processors), without
    sampling, as a list of ids."""
    feats = torch.from_numpy(mel).to(next(model.parameters()).dtype)
    out = model.generate(feats, generation_config=gc, do_sample=False, **kw)
    return [int(x) for x in out[0]]


def strip(seq, prompt, eos):
    """seq without a leading prompt and without what follows the first eos (generate pads
    finished sequences)."""
    if seq[:len(prompt)] == prompt:
        seq = seq[len(prompt):]
    if eos in seq:
        seq = seq[:seq.index(eos) + 1]
    return seq


def check_generate(models, mel, gc, decoded, label="", **kw):
    """transformers' generate on each (name, model) must give the manual greedy's tokens
    (decoded: a greedy() result); prints each sequence. Each call gets a fresh copy of
    gc (as if loaded anew), whatever generate changes in it."""
    for name, m in models:
        g = strip(hf_generate(m, mel, copy.deepcopy(gc), **kw), decoded["prompt"], gc.eos_token_id)
        print("%sgenerate (%s):" % (label, name), g)
        assert g == decoded["tokens"], ("generate disagrees", label, g, decoded["tokens"])


# ------------------------------------------------------------------- golden tensors
def encoder_goldens(mel, enc, cross, mel_stride=MEL_STRIDE, enc_stride=ENC_STRIDE):
    """Golden tensors of the front end: every mel_stride-th frame of the mel
    [1, n_mels, 3000], every enc_stride-th row of the encoder output enc [1500, d] and of
    each layer's cross K / V (cross: as cross_kv returns it)."""
    mel_idx = np.arange(0, N_FRAMES, mel_stride, dtype=np.int32)
    enc_idx = np.arange(0, N_POSITIONS, enc_stride, dtype=np.int32)
    t = {
        "mel_frame_idx": mel_idx,
        "mel_frames": mel[0][:, mel_idx].astype(np.float32),
        "enc_row_idx": enc_idx,
        "encoder_out": enc[enc_idx].float().numpy(),
    }
    for li, (k, v) in enumerate(cross):
        t["cross_k.%d" % li] = k[enc_idx].float().numpy()
        t["cross_v.%d" % li] = v[enc_idx].float().numpy()
    return t


def save_golden(tensors, path, meta, listing=True):
    """Writes the numpy tensors to path as safetensors with ONE metadata key, "info" (the
    JSON of meta): safetensors writes __metadata__ from a hash map, so several keys would
    come out in a run-dependent order (files not byte-identical)."""
    from safetensors.numpy import save_file

    t = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    save_file(t, path, metadata={"info": json.dumps(meta, sort_keys=True, ensure_ascii=True)})
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    if listing:
        for k in sorted(t):
            print("  %-14s %-8s %s" % (k, t[k].dtype, list(t[k].shape)))


# ---------------------------------------------------------------------- openai-whisper
def openai_whisper_model(hf_model, expect_multilingual=None):
    """openai-whisper's Whisper module holding the HF model's weights (renamed), f32, eval
    mode: a third implementation of the same network."""
    from whisper.model import ModelDimensions, Whisper

    sd = {}
    for k, v in hf_model.state_dict().items():
        if k == "proj_out.weight":
            continue
        n = k.replace("model.", "", 1)
        for a, b in (("encoder.embed_positions.weight", "encoder.positional_embedding"),
                     ("decoder.embed_positions.weight", "decoder.positional_embedding"),
                     ("embed_tokens", "token_embedding"), (".layers.", ".blocks."),
                     ("self_attn_layer_norm", "attn_ln"), ("encoder_attn_layer_norm", "cross_attn_ln"),
                     ("final_layer_norm", "mlp_ln"), ("self_attn.", "attn."),
                     ("encoder_attn.", "cross_attn."), ("q_proj", "query"), ("k_proj", "key"),
                     ("v_proj", "value"), ("out_proj", "out"), ("fc1", "mlp.0"), ("fc2", "mlp.2"),
                     ("encoder.layer_norm", "encoder.ln_post"), ("decoder.layer_norm", "decoder.ln")):
            n = n.replace(a, b)
        sd[n] = v.float()
    c = hf_model.config
    dims = ModelDimensions(
        n_mels=c.num_mel_bins, n_audio_ctx=c.max_source_positions, n_audio_state=c.d_model,
        n_audio_head=c.encoder_attention_heads, n_audio_layer=c.encoder_layers,
        n_vocab=c.vocab_size, n_text_ctx=c.max_target_positions, n_text_state=c.d_model,
        n_text_head=c.decoder_attention_heads, n_text_layer=c.decoder_layers)
    m = Whisper(dims)
    m.load_state_dict(sd, strict=True)
    m.eval()
    if expect_multilingual is not None:
        assert m.is_multilingual == expect_multilingual
    return m


def openai_whisper_tokens(hf_model, audio, expect_multilingual=None, **options):
    """Third implementation: openai-whisper's model (the HF weights, renamed), its log-mel
    and its decoder (greedy, no timestamps, f32; DecodingOptions(**options)). Returns the
    tokens after the prompt, without <|endoftext|>."""
    import whisper

    m = openai_whisper_model(hf_model, expect_multilingual)
    c = hf_model.config
    mel = whisper.log_mel_spectrogram(torch.from_numpy(audio), c.num_mel_bins, padding=480000)[:, :N_FRAMES]
    with torch.no_grad():
        r = whisper.decode(m, mel, whisper.DecodingOptions(without_timestamps=True, fp16=False, **options))
    return list(r.tokens)
