#!/usr/bin/env python3
"""The small random-weight BART-family test models and their golden values.

Usage (from the repository root; the oracle venv of scripts/venv.sh):

    .venv/bin/python tools/golden_bart.py                  # models, then goldens, all five
    .venv/bin/python tools/golden_bart.py --scan VARIANT FIRST LAST
                                                           # how SEEDS below were picked

This is the project's independent oracle for src/models/bart_*.c: every value comes from
Hugging Face transformers / PyTorch, nothing here reads the project's sources.

Models: tests/data/tiny-random-<variant>/ as save_pretrained writes them (config.json,
generation_config.json, model.safetensors in the variant's dtype; tied copies and
Marian's sinusoidal tables left out as HF leaves them out). What differs between the
variants is data (VARIANTS below); the architecture of each is transformers' own class:

  variant  class                           norms  positions             act    scale  tied dtype
  bart     BartForConditionalGeneration    post   learned, offset 2     gelu   no     yes  float32
  mbart    MBartForConditionalGeneration   pre    learned, offset 2     gelu   yes    yes  float16
  marian   MarianMTModel                   post   sinusoidal (halves)   swish  yes    yes  float32
  m2m100   M2M100ForConditionalGeneration  pre    sinusoidal, pad + 1   relu   yes    yes  bfloat16
  pegasus  PegasusForConditionalGeneration pre    sinusoidal (halves)   relu   yes    no   float32

Shared shape: d_model 64, 2 encoder layers with 4 heads (head 16) and FFN 128, 3 decoder
layers with 2 heads (head 32) and FFN 96, 64 positions, vocabulary 512. bart and mbart
have layernorm_embedding; mbart, m2m100 and pegasus a final layer norm per stack; every
variant but m2m100 a final_logits_bias (random here, zero in HF's init). Special ids as
the real checkpoints place them: BART / mBART / M2M100 bos 0, pad 1, eos 2, decoder start
2; Marian eos 0, pad = decoder start = 511 (the last id); Pegasus pad = start 0, eos 1.

Goldens: tests/data/bart-golden/<variant>.safetensors and .json. B = 3 inputs (random ids
of lengths 9, 30 and 17 with eos last, no specials inside), N = 16 new tokens, R = 2:
  input_ids     i32 [B, Tmax]     right-padded with pad; input_len i32 [B]
  encoder_out   f32 [B, Tmax, d]  HF encoder last_hidden_state of the padded batch (mask);
                                  compare valid rows only
  greedy_tokens i32 [B, N]        generate() greedy (decoder start excluded, eos included
                                  when produced), -1 after the end; greedy_len i32 [B]
  greedy_logits f32 [B, N, V]     raw logits (lm_head + final_logits_bias) of the step
                                  that produced greedy_tokens[b, n], teacher-forced over the
                                  padded batch; rows >= greedy_len are 0
  beam_tokens   i32 [B*R, N]      generate() beam search (4 beams), input-major, -1 after
                                  the end; beam_len i32 [B*R]; beam_scores f32 [B*R]
generate() runs with every logits processor off (no forced bos/eos, no n-gram ban, no
minimum length): these goldens are the network and the search; the generation rules
are tested on their own.

Checks (the script stops if one fails): greedy equals the argmax of the teacher-forced
logits; every greedy margin (top1 - top2) > 0.05; each input alone gives its row of the
batch; the float64 model gives the same greedy and beam tokens; the saved directory
loads back (from_pretrained) with exactly the weights written.
"""
import json
import os
import sys

import numpy as np
import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DATA = os.path.join(ROOT, "tests", "data")
GOLDEN_DIR = os.path.join(DATA, "bart-golden")
MAX_NEW, NUM_BEAMS, NUM_RETURN = 16, 4, 2
LENGTHS = [9, 30, 17]
V = 512

COMMON = {
    "d_model": 64, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
    "decoder_attention_heads": 2, "encoder_ffn_dim": 128, "decoder_ffn_dim": 96,
    "max_position_embeddings": 64, "vocab_size": V, "dropout": 0.0, "attention_dropout": 0.0,
    "activation_dropout": 0.0, "forced_bos_token_id": None, "forced_eos_token_id": None,
}
SPECIAL = {"bos": 0, "pad": 1, "eos": 2, "start": 2}

VARIANTS = {
    "bart": {"class": "BartForConditionalGeneration", "dtype": torch.float32,
             "config": {"model_type": "bart", "activation_function": "gelu", "scale_embedding": False,
                        "tie_word_embeddings": True},
             "ids": SPECIAL, "beam": {"length_penalty": 1.0, "early_stopping": True}},
    "mbart": {"class": "MBartForConditionalGeneration", "dtype": torch.float16,
              "config": {"model_type": "mbart", "activation_function": "gelu", "scale_embedding": True,
                         "tie_word_embeddings": True},
              "ids": SPECIAL, "beam": {"length_penalty": 2.0, "early_stopping": True}},
    "marian": {"class": "MarianMTModel", "dtype": torch.float32,
               "config": {"model_type": "marian", "activation_function": "swish", "scale_embedding": True,
                          "tie_word_embeddings": True, "share_encoder_decoder_embeddings": True},
               "ids": {"bos": None, "pad": None, "eos": 0, "start": None},   # pad = start = V - 1
               "beam": {"length_penalty": 0.6, "early_stopping": False}},
    "m2m100": {"class": "M2M100ForConditionalGeneration", "dtype": torch.bfloat16,
               "config": {"model_type": "m2m_100", "activation_function": "relu", "scale_embedding": True,
                          "tie_word_embeddings": True},
               "ids": SPECIAL, "beam": {"length_penalty": 1.0, "early_stopping": False}},
    # BART again with milder spreads (attention scores of O(10), as trained models have):
    # the precision modes' test, where the peaky models above flip attention at the
    # first rounding
    "bart-mild": {"class": "BartForConditionalGeneration", "dtype": torch.float32,
                  "config": {"model_type": "bart", "activation_function": "gelu", "scale_embedding": False,
                             "tie_word_embeddings": True},
                  "ids": SPECIAL, "beam": {"length_penalty": 1.0, "early_stopping": True}},
    "pegasus": {"class": "PegasusForConditionalGeneration", "dtype": torch.float32,
                "config": {"model_type": "pegasus", "activation_function": "relu", "scale_embedding": True,
                           "tie_word_embeddings": False},
                "ids": {"bos": None, "pad": 0, "eos": 1, "start": 0},
                "beam": {"length_penalty": 0.8, "early_stopping": True}},
}
# Weight spreads (see random_weights) and the seed of each variant (picked with --scan:
# greedy margins, some but not all sequences ending with eos, varied tokens).
SCALES = {"embed": 0.1, "pos": 0.5, "qk": 1.0, "vo": 1.5, "ff": 1.5, "bias": 0.1, "ln": 0.1,
          "head": 1.0, "flb": 0.5, "eos_gain": 2.5, "final_gain": 8.0}
# post-norm stacks keep more of their input with smaller blocks (less of one token
# repeated by a fixed point of the output map)
POST_NORM_SCALES = {"qk": 2.0, "vo": 0.3, "ff": 0.3}
MILD_SCALES = {"embed": 1.0, "qk": 0.25, "vo": 0.3, "ff": 0.3, "final_gain": 4.0}
SEEDS = {"bart-mild": 0, "bart": 10, "mbart": 14, "marian": 16, "m2m100": 3, "pegasus": 6}


def scales(variant):
    s = dict(SCALES)
    if variant in ("bart", "marian"):
        s.update(POST_NORM_SCALES)
    if variant == "bart-mild":
        s.update(MILD_SCALES)
    return s


def model_dir(variant):
    return os.path.join(DATA, "tiny-random-" + variant)


def vocab_size(variant):
    """V; Marian's is its tokenizer's (write_marian_tokenizer), <pad> the last id."""
    return len(marian_vocab()[2]) if variant == "marian" else V


def special_ids(variant):
    ids = dict(VARIANTS[variant]["ids"])
    if variant == "marian":
        ids["pad"] = ids["start"] = vocab_size(variant) - 1
    return ids


def hf_config(variant):
    import transformers

    v = VARIANTS[variant]
    cfg = dict(COMMON)
    cfg.update(v["config"])
    if variant == "marian":
        cfg["vocab_size"] = cfg["decoder_vocab_size"] = vocab_size(variant)
    mt = cfg.pop("model_type")
    ids = special_ids(variant)
    cls = {"bart": transformers.BartConfig, "mbart": transformers.MBartConfig,
           "marian": transformers.MarianConfig, "m2m_100": transformers.M2M100Config,
           "pegasus": transformers.PegasusConfig}[mt]
    kw = {"pad_token_id": ids["pad"], "eos_token_id": ids["eos"], "decoder_start_token_id": ids["start"]}
    if ids["bos"] is not None:
        kw["bos_token_id"] = ids["bos"]
    config = cls(**kw, **cfg)
    config.architectures = [v["class"]]
    return config


def new_model(config, variant):
    import transformers
    import transformers.models.m2m_100.modeling_m2m_100 as m2m

    # This torch's torch.distributed does not import under Python 3.11; M2M100's encoder
    # asks FSDP whether to sync layer drop (no effect without training)
    m2m.is_fsdp_managed_module = lambda module: False

    torch.manual_seed(0)
    return getattr(transformers, VARIANTS[variant]["class"])(config).eval()


def random_weights(model, variant, seed):
    """Every parameter and the final_logits_bias buffer (spreads: scales(variant)), drawn from one generator seeded
    with seed in sorted name order. Layer norms 1 + ln N(0,1) (biases bias N(0,1)), q/k
    projections qk, v/out vo, fc1/fc2 ff (their biases bias), token embeddings embed,
    learned positions pos, lm_head head, final_logits_bias flb; the eos row of the output
    matrix is multiplied by eos_gain so that some sequences end early."""
    g = torch.Generator().manual_seed(seed)
    SC = scales(variant)
    ids = special_ids(variant)
    tied = VARIANTS[variant]["config"]["tie_word_embeddings"]
    sd = model.state_dict()
    out = {}
    for name in sorted(sd):
        t = sd[name]
        shape = tuple(t.shape)
        if "embed_positions" in name and not name.endswith("embed_positions.weight"):
            continue
        if name.endswith("embed_positions.weight") and variant in ("marian", "pegasus"):
            continue  # sinusoidal: keep HF's table
        if name.endswith(("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")):
            continue  # aliases of model.shared
        if name == "lm_head.weight" and tied:
            continue
        base = name.rsplit(".", 1)[0]
        if name.endswith("shared.weight"):
            w = SC["embed"] * torch.randn(shape, generator=g)
        elif name.endswith("embed_positions.weight"):
            w = SC["pos"] * torch.randn(shape, generator=g)
        elif name == "lm_head.weight":
            w = SC["head"] * torch.randn(shape, generator=g)
        elif name == "final_logits_bias":
            w = SC["flb"] * torch.randn(shape, generator=g)
        elif "norm" in base or "layernorm" in base:
            w = (1.0 if name.endswith("weight") else 0.0) + SC["ln" if name.endswith("weight") else "bias"] * \
                torch.randn(shape, generator=g)
        elif name.endswith("bias"):
            w = SC["bias"] * torch.randn(shape, generator=g)
        elif base.endswith(("q_proj", "k_proj")):
            w = SC["qk"] * torch.randn(shape, generator=g)
        elif base.endswith(("v_proj", "out_proj")):
            w = SC["vo"] * torch.randn(shape, generator=g)
        elif base.endswith(("fc1", "fc2")):
            w = SC["ff"] * torch.randn(shape, generator=g)
        else:
            raise RuntimeError("unhandled parameter " + name)
        if name.startswith(last_norm(variant)):
            w *= SC["final_gain"]
        if name == ("model.shared.weight" if tied else "lm_head.weight"):
            w[ids["eos"]] *= SC["eos_gain"]
            w[ids["pad"]] = 0.0  # never generated (logit = final_logits_bias only)
        out[name] = w
    return out


def last_norm(variant):
    """The decoder's last normalization: its final layer norm (pre-norm variants) or its
    last layer's (post-norm)."""
    if variant in ("bart", "bart-mild", "marian"):
        return "model.decoder.layers.%d.final_layer_norm." % (COMMON["decoder_layers"] - 1)
    return "model.decoder.layer_norm."


def build(variant, seed, dtype):
    """(config, model in float32 holding the variant's stored-precision weights)."""
    config = hf_config(variant)
    model = new_model(config, variant)
    w = random_weights(model, variant, seed)
    st = VARIANTS[variant]["dtype"]
    w = {k: v.to(st).to(torch.float32) for k, v in w.items()}
    missing, unexpected = model.load_state_dict(w, strict=False)
    assert not unexpected, unexpected
    model.tie_weights()
    return config, model.to(dtype).eval()


def inputs(variant, seed=1234):
    """Three random inputs (no special ids inside), eos last; right-padded batch."""
    ids = special_ids(variant)
    special = {i for i in ids.values() if i is not None}
    g = np.random.default_rng(seed)
    seqs = []
    for n in LENGTHS:
        s = []
        while len(s) < n - 1:
            x = int(g.integers(3, vocab_size(variant) - 1))
            if x not in special:
                s.append(x)
        seqs.append(s + [ids["eos"]])
    T = max(LENGTHS)
    x = torch.full((len(seqs), T), ids["pad"], dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for b, s in enumerate(seqs):
        x[b, :len(s)] = torch.tensor(s)
        mask[b, :len(s)] = 1
    return seqs, x, mask


def strip(seq, start, eos):
    s = [int(t) for t in seq[1:]]   # decoder start
    if eos in s:
        s = s[:s.index(eos) + 1]
    return s


FORCED_BOS = 5   # the forced first token of the "forced" goldens (a target language's id)


def gen_kw(model, forced=None):
    return dict(do_sample=False, max_new_tokens=MAX_NEW, no_repeat_ngram_size=0, min_length=0,
                forced_bos_token_id=forced, forced_eos_token_id=None, bad_words_ids=None,
                repetition_penalty=1.0, output_scores=True, return_dict_in_generate=True,
                synced_gpus=False)


@torch.no_grad()
def greedy(model, x, mask, ids, forced=None):
    out = model.generate(input_ids=x, attention_mask=mask, num_beams=1, **gen_kw(model, forced))
    return [strip(s, ids["start"], ids["eos"]) for s in out.sequences]


@torch.no_grad()
def beam(model, x, mask, ids, bp, forced=None):
    out = model.generate(input_ids=x, attention_mask=mask, num_beams=NUM_BEAMS,
                         num_return_sequences=NUM_RETURN, length_penalty=bp["length_penalty"],
                         early_stopping=bp["early_stopping"], **gen_kw(model, forced))
    return [strip(s, ids["start"], ids["eos"]) for s in out.sequences], \
        [float(v) for v in out.sequences_scores]


@torch.no_grad()
def teacher_forced(model, x, mask, seqs, ids):
    """Raw logits [B, N, V] of the decoder fed [start] + seq[:-1], one position at a
    time through HF's cache (this torch cannot build the float64 causal mask of a
    whole-sequence pass); rows after a sequence's end are 0."""
    B = len(seqs)
    dec = torch.full((B, MAX_NEW), ids["start"], dtype=torch.long)
    for b, s in enumerate(seqs):
        dec[b, 1:len(s)] = torch.tensor(s[:-1], dtype=torch.long)
    enc = model.get_encoder()(input_ids=x, attention_mask=mask)
    past, out = None, []
    for n in range(MAX_NEW):
        o = model(encoder_outputs=enc, attention_mask=mask, decoder_input_ids=dec[:, n:n + 1],
                  past_key_values=past, use_cache=True)
        past = o.past_key_values
        out.append(o.logits[:, 0])
    logits = torch.stack(out, 1)
    for b, s in enumerate(seqs):
        logits[b, len(s):] = 0.0
    return logits


def rel_dev(a, b, lens):
    """max over the valid rows of max |a - b| / max(1, max |b|)."""
    w = 0.0
    for i, n in enumerate(lens):
        for t in range(n):
            w = max(w, float((a[i, t].double() - b[i, t].double()).abs().max() / max(1.0, float(b[i, t].abs().max()))))
    return w


def row_dev(a, b):
    return float((a - b).abs().max() / max(1.0, float(b.abs().max())))


def row_sensitivity(m64, x, mask, seqs, ids, trials=4):
    """Per input, per step (per position for the encoder's output): how far
    float32-sized rounding moves that row of the teacher-forced logits (as rel_dev
    measures a row). float64, every Linear and LayerNorm output multiplied by
    1 + 2^-24 * N(0, 1) (seeded), the largest deviation from the unperturbed
    values over `trials` runs: a row with peaky attention amplifies it where a
    well-conditioned one does not, so a float32 implementation's distance from
    the golden is judged row by row. Returns (logits rows, encoder rows)."""
    base = teacher_forced(m64, x, mask, seqs, ids)
    with torch.no_grad():
        enc_base = m64.get_encoder()(input_ids=x, attention_mask=mask).last_hidden_state
    gen = torch.Generator().manual_seed(20261130)

    def hook(mod, inp, out):
        return out * (1 + 2.0 ** -24 * torch.randn(out.shape, generator=gen, dtype=out.dtype))

    hooks = [mod.register_forward_hook(hook) for mod in m64.modules()
             if isinstance(mod, (torch.nn.Linear, torch.nn.LayerNorm))]
    worst = [[0.0] * len(s) for s in seqs]
    enc_worst = [[0.0] * n for n in LENGTHS]
    try:
        with torch.no_grad():
            for _ in range(trials):
                tf = teacher_forced(m64, x, mask, seqs, ids)
                for b, s in enumerate(seqs):
                    for t in range(len(s)):
                        worst[b][t] = max(worst[b][t], row_dev(tf[b, t], base[b, t]))
                enc = m64.get_encoder()(input_ids=x, attention_mask=mask).last_hidden_state
                for b, n in enumerate(LENGTHS):
                    for t in range(n):
                        enc_worst[b][t] = max(enc_worst[b][t], row_dev(enc[b, t], enc_base[b, t]))
    finally:
        for h in hooks:
            h.remove()
    rnd = lambda rows: [[float("%.3g" % d) for d in row] for row in rows]
    return rnd(worst), rnd(enc_worst)


def margins(logits, seqs):
    m = float("inf")
    for b, s in enumerate(seqs):
        for n in range(len(s)):
            top = torch.topk(logits[b, n].double(), 2).values
            m = min(m, float(top[0] - top[1]))
    return m


def evaluate(variant, seed):
    ids = special_ids(variant)
    _, model = build(variant, seed, torch.float32)
    _, x, mask = inputs(variant)
    g = greedy(model, x, mask, ids)
    tf = teacher_forced(model, x, mask, g, ids)
    return model, x, mask, g, tf, margins(tf, g)


def scan(variant, first, last):
    ids = special_ids(variant)
    for seed in range(first, last + 1):
        model, x, mask, g, tf, m = evaluate(variant, seed)
        tf64 = teacher_forced(model.to(torch.float64), x, mask, g, ids)
        noise = rel_dev(tf, tf64, [len(s) for s in g])
        eos = ids["eos"]
        ended = sum(1 for s in g if s and s[-1] == eos)
        print(f"{variant} seed {seed}: margin {m:.3f} f32 noise {noise:.2g} ended {ended}/3 "
              f"lens {[len(s) for s in g]} distinct {[len(set(s)) for s in g]}")


# Marian's tokenizer for tiny-random-marian: two unigram SentencePiece models trained here
# (English source, German target) over one vocab.json, as the OPUS-MT directories have.
CORPUS_EN = """The house is wonderful. We walked to the station while the children played.
The weather was cold, but the garden stayed green all winter long.
A small cat sleeps on the warm windowsill every afternoon.
Translation systems learn from millions of sentence pairs.
She reads the newspaper before breakfast and writes letters after lunch.
Our neighbours are friendly people who often invite us for dinner.
The river flows quickly through the old town towards the sea.
Please close the window when you leave the room.
How many languages do you speak? I speak three, and I am learning a fourth.
They bought fresh bread, cheese and apples at the market on Saturday.""".split("\n")
CORPUS_DE = """Das Haus ist wunderbar. Wir gingen zum Bahnhof, während die Kinder spielten.
Das Wetter war kalt, aber der Garten blieb den ganzen Winter grün.
Eine kleine Katze schläft jeden Nachmittag auf der warmen Fensterbank.
Übersetzungssysteme lernen aus Millionen von Satzpaaren.
Sie liest die Zeitung vor dem Frühstück und schreibt Briefe nach dem Mittagessen.
Unsere Nachbarn sind freundliche Menschen, die uns oft zum Abendessen einladen.
Der Fluss fließt schnell durch die Altstadt zum Meer.
Bitte schließe das Fenster, wenn du den Raum verlässt.
Wie viele Sprachen sprichst du? Ich spreche drei und lerne eine vierte.
Sie kauften am Samstag frisches Brot, Käse und Äpfel auf dem Markt.""".split("\n")
# the golden texts: ordinary, a target-language token, a character neither model has
MARIAN_TEXTS = ["The children walked to the old market.", ">>de<< Please read the letter!",
                "A cat \U0001F600 sleeps."]


def train_spm(lines, vocab_size):
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 4), model_writer=buf,
                                   vocab_size=vocab_size, model_type="unigram", character_coverage=1.0,
                                   hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


_MARIAN = []


def marian_vocab():
    """(source.spm, target.spm, vocab.json's dict): </s> 0, <unk> 1, >>de<<, then the
    pieces of both models in their order, <pad> last (the model's vocabulary is this)."""
    import sentencepiece as spm

    if _MARIAN:
        return _MARIAN[0]
    src, tgt = train_spm(CORPUS_EN, 200), train_spm(CORPUS_DE, 200)
    vocab = {"</s>": 0, "<unk>": 1, ">>de<<": 2}
    for blob in (src, tgt):
        sp = spm.SentencePieceProcessor(model_proto=blob)
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if p not in vocab and p not in ("<s>", "<unk>", "</s>"):
                vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    _MARIAN.append((src, tgt, vocab))
    return _MARIAN[0]


def write_marian_tokenizer():
    """Marian's tokenizer files into its model dir (marian_vocab)."""
    d = model_dir("marian")
    src, tgt, vocab = marian_vocab()
    with open(os.path.join(d, "source.spm"), "wb") as f:
        f.write(src)
    with open(os.path.join(d, "target.spm"), "wb") as f:
        f.write(tgt)
    with open(os.path.join(d, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:   # as OPUS-MT's name the pair
        json.dump({"tokenizer_class": "MarianTokenizer", "source_lang": "en", "target_lang": "de"}, f)
        f.write("\n")


def write_bart_tokenizer():
    """BART's byte-level BPE trained here (tokenizers' ByteLevelBPETokenizer, 500 tokens,
    <s> <pad> </s> <unk> <mask> first), saved by transformers' BartTokenizer: vocab.json,
    merges.txt, special_tokens_map.json, tokenizer_config.json. The model's vocabulary
    (512) is padded past it, as real checkpoints' often are."""
    import tempfile

    from tokenizers import ByteLevelBPETokenizer
    from transformers import BartTokenizer

    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(CORPUS_EN * 4, vocab_size=500, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    with tempfile.TemporaryDirectory() as tmp:
        bpe.save_model(tmp)
        tok = BartTokenizer(os.path.join(tmp, "vocab.json"), os.path.join(tmp, "merges.txt"))
        tok.save_pretrained(model_dir("bart"))


# the SentencePiece tokenizers of tools/golden_text_tok.py beside these models, and the
# languages of their "langs" goldens (source token, forced target token)
SP_TOKENIZERS = {"mbart": "mbart50", "m2m100": "m2m100", "pegasus": "pegasus"}
LANG_PAIRS = {"mbart": ("fr_XX", "de_DE"), "m2m100": ("fr", "de")}


def write_sp_tokenizer(variant):
    """tools/golden_text_tok.py's tokenizer of that class, saved into the model's dir."""
    import tempfile

    import golden_text_tok

    d = model_dir(variant)
    with tempfile.TemporaryDirectory() as tmp:
        golden_text_tok.make(SP_TOKENIZERS[variant], tmp).save_pretrained(d)
    for f in ("sentencepiece.bpe.model", "spiece.model"):   # one copy in git: a link
        mine = os.path.join(d, f)
        for other in ("nllb", "pegasus"):
            theirs = os.path.join(golden_text_tok.OUT, other, f)
            if os.path.isfile(mine) and os.path.isfile(theirs) and open(mine, "rb").read() == open(theirs, "rb").read():
                os.remove(mine)
                os.symlink(os.path.relpath(theirs, d), mine)


def langs_golden(variant, model, ids, bp, tok):
    """Translation's languages: inputs with src_lang's token, generate() with the
    target language's token forced first (forced_bos_token_id), as transformers'
    translation examples run these models."""
    src, tgt = LANG_PAIRS[variant]
    tok.src_lang = src
    enc = tok(MARIAN_TEXTS, return_tensors="pt", padding=True)
    x, mask = enc["input_ids"], enc["attention_mask"]
    forced = tok.get_lang_id(tgt) if variant == "m2m100" else tok.convert_tokens_to_ids(tgt)
    g, (bt, bs) = greedy(model, x, mask, ids, forced), beam(model, x, mask, ids, bp, forced)
    dec = lambda seqs: [tok.decode([t for t in s if t < len(tok)], skip_special_tokens=True) for s in seqs]
    return {"src_lang": src, "tgt_lang": tgt, "forced": forced,
            "input_ids": [[int(t) for t, m in zip(r, mr) if m] for r, mr in zip(x, mask)],
            "greedy": {"tokens": g, "text": dec(g)}, "beam": {"tokens": bt, "scores": bs, "text": dec(bt)}}


# the search settings of a summarisation model's generation config (bart-large-cnn's
# kind: beams, a length penalty, a minimum length, no repeated trigrams), smaller
GEN_CONFIG = {"num_beams": 4, "length_penalty": 2.0, "early_stopping": True, "max_length": 14,
              "min_length": 9, "no_repeat_ngram_size": 3}


def gen_config_golden(model, x, mask, ids, tok):
    """generate() with nothing but the model's generation config (GEN_CONFIG and the
    ids, forced_eos_token_id </s> as bart-large-cnn's: a sequence that reaches
    max_length ends in </s>)."""
    from transformers import GenerationConfig

    gc = GenerationConfig(decoder_start_token_id=ids["start"], bos_token_id=ids["bos"],
                          eos_token_id=ids["eos"], pad_token_id=ids["pad"],
                          forced_eos_token_id=ids["eos"], **GEN_CONFIG)
    with torch.no_grad():
        o = model.generate(input_ids=x, attention_mask=mask, generation_config=gc, synced_gpus=False)
        # what the forced </s> changes: the same search without it
        o2 = model.generate(input_ids=x, attention_mask=mask, synced_gpus=False,
                            generation_config=GenerationConfig(**dict(gc.to_dict(), forced_eos_token_id=None)))
    assert [list(map(int, r)) for r in o] != [list(map(int, r)) for r in o2]
    assert any(len(r) == GEN_CONFIG["max_length"] and int(r[-1]) == ids["eos"] for r in o)
    seqs = [strip(r, ids["start"], ids["eos"]) for r in o]
    with torch.no_grad():   # what the settings change: plain greedy differs
        g = model.generate(input_ids=x, attention_mask=mask, num_beams=1, **gen_kw(model)).sequences
    assert seqs != [strip(r, ids["start"], ids["eos"]) for r in g]
    assert all(len(q) >= GEN_CONFIG["min_length"] - 1 for q in seqs)
    return {"config": gc.to_diff_dict(), "tokens": seqs,
            "text": [tok.decode(q, skip_special_tokens=True) for q in seqs]}


def api_golden(variant, model, ids, bp):
    """The public API's golden of a model with a tokenizer: HF's tokenizer ids of the
    texts, generate()'s greedy and beam tokens decoded as HF decodes them."""
    from transformers import AutoTokenizer

    # BART: the fast tokenizer, which decodes ids past its vocabulary (the model's
    # padding rows) as nothing, where the slow one fails
    tok = AutoTokenizer.from_pretrained(model_dir(variant), use_fast=variant == "bart")
    enc = tok(MARIAN_TEXTS, return_tensors="pt", padding=True)
    x, mask = enc["input_ids"], enc["attention_mask"]
    input_ids = [[int(t) for t, m in zip(r, mr) if m] for r, mr in zip(x, mask)]
    g = greedy(model, x, mask, ids)
    bt, bs = beam(model, x, mask, ids, bp)
    # the slow SentencePiece classes cannot decode ids past their vocabulary (the
    # model's padding rows): those are dropped first, as the fast classes drop them
    dec = lambda seqs: [tok.decode([t for t in s if t < len(tok)], skip_special_tokens=True) for s in seqs]
    fg, (fbt, fbs) = greedy(model, x, mask, ids, FORCED_BOS), beam(model, x, mask, ids, bp, FORCED_BOS)
    out = {"inputs": MARIAN_TEXTS, "input_ids": input_ids, "greedy": {"tokens": g, "text": dec(g)},
           "beam": {"tokens": bt, "scores": bs, "text": dec(bt)},
           "forced": {"bos": FORCED_BOS, "greedy": {"tokens": fg, "text": dec(fg)},
                      "beam": {"tokens": fbt, "scores": fbs, "text": dec(fbt)}}}
    if variant in LANG_PAIRS:
        out["langs"] = langs_golden(variant, model, ids, bp, tok)
    if variant == "bart":
        out["gen_config"] = gen_config_golden(model, x, mask, ids, tok)
    if variant == "marian":
        # bad_words_ids (real OPUS-MT configs ban <pad>): here the token greedy picks
        # most often, banned at every step by generate()
        flat = [t for q in g for t in q if t != ids["eos"]]
        bad = max(set(flat), key=lambda t: (flat.count(t), -t))
        kw = dict(gen_kw(model), bad_words_ids=[[bad]])
        with torch.no_grad():
            o = model.generate(input_ids=x, attention_mask=mask, num_beams=1, **kw)
        bw = [strip(r, ids["start"], ids["eos"]) for r in o.sequences]
        assert bw != g and all(bad not in q for q in bw)
        out["bad_words"] = {"ids": [[bad]], "greedy": {"tokens": bw, "text": dec(bw)}}
    return out


def pad_rows(seqs, n):
    out = np.full((len(seqs), n), -1, dtype=np.int32)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return out


def write_model(variant, seed):
    from safetensors.torch import load_file
    from transformers import AutoModelForSeq2SeqLM, GenerationConfig

    d = model_dir(variant)
    os.makedirs(d, exist_ok=True)
    config, model = build(variant, seed, torch.float32)
    model = model.to(VARIANTS[variant]["dtype"])
    config.torch_dtype = str(VARIANTS[variant]["dtype"]).replace("torch.", "")
    model.config.torch_dtype = config.torch_dtype
    model.save_pretrained(d, safe_serialization=True)
    GenerationConfig.from_model_config(model.config).save_pretrained(d)
    back = AutoModelForSeq2SeqLM.from_pretrained(d, torch_dtype=torch.float32).eval()
    assert type(back).__name__ == VARIANTS[variant]["class"]
    ref = model.to(torch.float32).state_dict()
    for k, v in back.state_dict().items():
        assert torch.equal(v, ref[k]), k
    names = sorted(load_file(os.path.join(d, "model.safetensors")))
    print(f"{variant}: wrote {d} ({len(names)} tensors)")
    return back


def golden(variant):
    from safetensors.numpy import save_file

    ids = special_ids(variant)
    bp = VARIANTS[variant]["beam"]
    model = write_model(variant, SEEDS[variant])
    if variant == "marian":
        write_marian_tokenizer()
    if variant == "bart":
        write_bart_tokenizer()
    if variant in SP_TOKENIZERS:
        write_sp_tokenizer(variant)
    seqs, x, mask = inputs(variant)
    g = greedy(model, x, mask, ids)
    tf = teacher_forced(model, x, mask, g, ids)
    for b, s in enumerate(g):
        am = [int(t) for t in torch.argmax(tf[b, :len(s)], -1)]
        assert am == s, (variant, b, am, s)
    m = margins(tf, g)
    assert m > 0.05, (variant, "greedy margin", m)
    bt, bs = beam(model, x, mask, ids, bp)
    for b, s in enumerate(seqs):   # alone = its row of the batch
        xa, ma = x[b:b + 1, :len(s)], mask[b:b + 1, :len(s)]
        assert greedy(model, xa, ma, ids)[0] == g[b], (variant, "greedy alone", b)
        ba, _ = beam(model, xa, ma, ids, bp)
        assert ba == bt[b * NUM_RETURN:(b + 1) * NUM_RETURN], (variant, "beam alone", b)
    # the values from float64 (the reference); float32's own distance from it is the
    # noise figure a float32 implementation is held to
    m64 = model.to(torch.float64)
    assert greedy(m64, x, mask, ids) == g, (variant, "f64 greedy")
    bt64, bs64 = beam(m64, x, mask, ids, bp)
    assert bt64 == bt, (variant, "f64 beam")
    with torch.no_grad():
        enc = m64.get_encoder()(input_ids=x, attention_mask=mask).last_hidden_state
        enc32 = model.to(torch.float32).get_encoder()(input_ids=x, attention_mask=mask).last_hidden_state
    tf64 = teacher_forced(m64.to(torch.float64), x, mask, g, ids)
    noise = {"encoder_f32": rel_dev(enc32, enc, LENGTHS), "logits_f32": rel_dev(tf, tf64, [len(s) for s in g]),
             "beam_scores_f32": max(abs(a - b) for a, b in zip(bs, bs64))}
    noise["logits_rows"], noise["encoder_rows"] = row_sensitivity(m64, x, mask, g, ids)
    tf, bs = tf64, bs64
    # forced_bos_token_id (mBART-50, M2M100 / NLLB's target language, BART's <s>): the
    # first generated token forced, the rest as generate() continues; float64 agrees
    fg, (fbt, fbs) = greedy(model, x, mask, ids, FORCED_BOS), beam(model, x, mask, ids, bp, FORCED_BOS)
    assert all(q[0] == FORCED_BOS for q in fg + fbt)
    assert greedy(m64, x, mask, ids, FORCED_BOS) == fg and beam(m64, x, mask, ids, bp, FORCED_BOS)[0] == fbt
    forced = {"bos": FORCED_BOS, "greedy": fg, "beam": {"tokens": fbt, "scores": fbs}}
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    tensors = {
        "input_ids": x.numpy().astype(np.int32),
        "input_len": np.array([len(s) for s in seqs], dtype=np.int32),
        "encoder_out": enc.numpy().astype(np.float32),   # float64's, rounded
        "greedy_tokens": pad_rows(g, MAX_NEW), "greedy_len": np.array([len(s) for s in g], dtype=np.int32),
        "greedy_logits": tf.numpy().astype(np.float32),
        "beam_tokens": pad_rows(bt, MAX_NEW), "beam_len": np.array([len(s) for s in bt], dtype=np.int32),
        "beam_scores": np.array(bs, dtype=np.float32),
    }
    save_file(tensors, os.path.join(GOLDEN_DIR, variant + ".safetensors"),
              metadata={"source": "tools/golden_bart.py, transformers " + __import__("transformers").__version__})
    meta = {"model_dir": "tests/data/tiny-random-" + variant, "seed": SEEDS[variant],
            "max_new_tokens": MAX_NEW, "ids": ids, "noise": noise, "forced": forced,
            "greedy": {"tokens": g, "min_margin": round(m, 4)},
            "beam": {"num_beams": NUM_BEAMS, "num_return_sequences": NUM_RETURN, **bp,
                     "tokens": bt, "scores": bs}}
    if variant in ("marian", "bart") or variant in SP_TOKENIZERS:
        meta["api"] = api_golden(variant, model.to(torch.float32), ids, bp)
        print("  api:", json.dumps(meta["api"], ensure_ascii=False))
    with open(os.path.join(GOLDEN_DIR, variant + ".json"), "w") as f:
        json.dump(meta, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{variant}: greedy {g}\n  noise {noise}\n  margin {m:.3f}; beam lens {[len(s) for s in bt]} scores "
          f"{[round(s, 4) for s in bs]}")


def main(argv):
    if argv[:1] == ["--scan"]:
        scan(argv[1], int(argv[2]), int(argv[3]))
        return
    for v in argv or list(VARIANTS):
        golden(v)


if __name__ == "__main__":
    main(sys.argv[1:])
