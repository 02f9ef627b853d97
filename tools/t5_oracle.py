"""Shared pieces of the T5-family oracle scripts in tools/.

Used by gen_tiny_t5.py (the small random-weight T5 v1.0 / v1.1 / mT5 / umT5 test models
and the flan-t5-small-shaped benchmark model) and golden_t5.py (their golden values).

Like whisper_oracle.py, this is the project's independent oracle: every value comes from
Hugging Face transformers / PyTorch / sentencepiece / tokenizers, never from this
project's C code, and nothing here reads the project's sources.

What lives here:
  VARIANTS        the four test models: directory, HF class, config, tokenizer files,
                  stored dtype, the golden inputs and the beam settings of their goldens
  tokenizer / encode  the golden input batch, tokenized by HF AutoTokenizer from the
                  model dir (the sentencepiece-backed one where there is a spiece.model,
                  checked against sentencepiece itself)
  random_weights  seeded weights (one torch.Generator, sorted parameter names)
  load_model      a model dir loaded back by from_pretrained (f32 or f64)
  greedy / beam   transformers' generate() plus a plain re-implementation of each (full
                  recompute, no cache) that must agree with it, token for token
  bucket tables   T5's relative-position buckets for given (num_buckets, max_distance)
"""

import json
import math
import os
import shutil

import numpy as np
import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DATA = os.path.join(ROOT, "tests", "data")
SPM_DIR = os.path.join(DATA, "spm")
GOLDEN_DIR = os.path.join(DATA, "t5-golden")
SHARED = os.environ.get("ENCDEC_SHARED", os.path.join(ROOT, "..", "shared"))
T5_ASSETS = os.path.join(SHARED, "assets", "t5-tokenizer")

PAD, EOS, UNK = 0, 1, 2  # T5's special ids; the decoder starts from PAD
MAX_NEW = 16  # max_new_tokens of every golden decode

# The golden batch: three texts of different token lengths (11, 6 and 24 to 29 tokens
# with </s>), in that order so that the longest is not first; German / French accents
# everywhere, and for the byte-fallback vocabulary an emoji (4 <0xNN> pieces with
# sentencepiece; see tokenizer() for where it is <unk> instead).
TEXTS = [
    "translate English to German: The house is wonderful.",
    "Das Haus ist schön.",
    "summarize: Während wir zum Bahnhof gingen, spielten Kinder mit Hunden am Fluss. "
    "Le jardin était vert, déjà!",
]
TEXTS_BYTEFB = TEXTS[:2] + [TEXTS[2][:-1] + " \U0001F600!"]

# The four test models. Everything that differs between them is data here; the
# shared settings are in hf_config(). n_tok = ids the tokenizer knows (pieces + 100
# <extra_id_N>); vocab_size >= n_tok is padded as real checkpoints are.
VARIANTS = {
    "t5-v1_0": {
        "dir": "tiny-random-t5-v1_0", "class": "T5ForConditionalGeneration", "dtype": torch.float32,
        "spm": "t5like", "n_tok": 900, "tokenizer": ["spiece.model"], "texts": TEXTS,
        "config": {"model_type": "t5", "feed_forward_proj": "relu", "tie_word_embeddings": True,
                   "d_model": 64, "d_kv": 16, "num_heads": 4, "d_ff": 128, "num_layers": 2,
                   "num_decoder_layers": 2, "relative_attention_num_buckets": 32,
                   "relative_attention_max_distance": 128, "vocab_size": 904, "n_positions": 512},
        "beam": {"length_penalty": 1.0, "early_stopping": True},
    },
    "t5-v1_1": {
        "dir": "tiny-random-t5-v1_1", "class": "T5ForConditionalGeneration", "dtype": torch.bfloat16,
        "spm": "t5like", "n_tok": 900, "tokenizer": ["spiece.model", "tokenizer.json"], "texts": TEXTS,
        "config": {"model_type": "t5", "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
                   "d_model": 64, "d_kv": 16, "num_heads": 3, "d_ff": 96, "num_layers": 2,
                   "num_decoder_layers": 3, "relative_attention_num_buckets": 16,
                   "relative_attention_max_distance": 20, "vocab_size": 928, "n_positions": 512},
        "beam": {"length_penalty": 0.6, "early_stopping": False},
    },
    "mt5": {
        "dir": "tiny-random-mt5", "class": "MT5ForConditionalGeneration", "dtype": torch.float16,
        "spm": "bytefb", "n_tok": 1100, "tokenizer": ["spiece.model"], "texts": TEXTS_BYTEFB,
        "config": {"model_type": "mt5", "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
                   "d_model": 64, "d_kv": 16, "num_heads": 4, "d_ff": 128, "num_layers": 2,
                   "num_decoder_layers": 2, "relative_attention_num_buckets": 32,
                   "relative_attention_max_distance": 128, "vocab_size": 1152, "n_positions": 64},
        "beam": {"length_penalty": 2.0, "early_stopping": True},
    },
    "umt5": {
        "dir": "tiny-random-umt5", "class": "UMT5ForConditionalGeneration", "dtype": torch.float16,
        "spm": "t5like", "n_tok": 900, "tokenizer": ["tokenizer.json"], "texts": TEXTS,
        "config": {"model_type": "umt5", "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False,
                   "d_model": 64, "d_kv": 16, "num_heads": 4, "d_ff": 128, "num_layers": 2,
                   "num_decoder_layers": 3, "relative_attention_num_buckets": 16,
                   "relative_attention_max_distance": 20, "vocab_size": 928, "n_positions": 512},
        "beam": {"length_penalty": 1.0, "early_stopping": False},
    },
}
NUM_BEAMS = 4
NUM_RETURN = 2

DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def model_dir(variant):
    return os.path.join(DATA, VARIANTS[variant]["dir"])


def hf_classes(model_type):
    """(config class, model class) of transformers for a model_type."""
    import transformers

    return {
        "t5": (transformers.T5Config, transformers.T5ForConditionalGeneration),
        "mt5": (transformers.MT5Config, transformers.MT5ForConditionalGeneration),
        "umt5": (transformers.UMT5Config, transformers.UMT5ForConditionalGeneration),
    }[model_type]


def hf_config(cfg, dtype):
    """The transformers config object for a VARIANTS "config" dict (plus the shared
    settings: ids, epsilon, no dropout), as save_pretrained would write it."""
    cfg = dict(cfg)
    config_cls, model_cls = hf_classes(cfg.pop("model_type"))
    config = config_cls(pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
                        layer_norm_epsilon=1e-6, dropout_rate=0.0, **cfg)
    config.architectures = [model_cls.__name__]
    config.torch_dtype = DTYPE_NAMES[dtype]
    return config


def write_config_files(out_dir, config):
    """config.json and generation_config.json exactly as save_pretrained writes them."""
    from transformers import GenerationConfig

    config.save_pretrained(out_dir)
    GenerationConfig.from_model_config(config).save_pretrained(out_dir)


def copy_tokenizer(out_dir, spm_name, files):
    """The tokenizer files of a model dir, copied from tests/data/spm (spiece.model is
    <spm_name>.model, tokenizer.json is <spm_name>.tokenizer.json)."""
    src = {"spiece.model": spm_name + ".model", "tokenizer.json": spm_name + ".tokenizer.json"}
    for f in files:
        shutil.copyfile(os.path.join(SPM_DIR, src[f]), os.path.join(out_dir, f))


# ------------------------------------------------------------------------ weights
def stored_names(model, tied):
    """Parameter names as HF save_pretrained stores them for T5: the two embed_tokens
    aliases of shared.weight are dropped, and lm_head.weight when tied."""
    drop = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}
    if tied:
        drop.add("lm_head.weight")
    return sorted(k for k in model.state_dict() if k not in drop)


def random_weights(model, tied, seed, dtype, scales, n_tok):
    """Every stored tensor of model, drawn from one generator seeded with seed in sorted
    parameter-name order, rounded to dtype.

    Spreads (scales dict): shared.weight "embed", lm_head.weight "head",
    relative_attention_bias "rel", layer norms 1 + "ln" N(0,1), attention q and k "qk"
    (T5 does not scale q.k by 1/sqrt(d_kv): these set how peaky attention is), attention
    v and o "vo", feed-forward wi / wi_0 / wi_1 / wo "ff"; the decoder's final layer
    norm is multiplied by "final_gain" (it sets the logit scale: with tied embeddings a
    large embedding spread would instead make every token predict itself). Then the
    output rows that shape what is generated:
      - ids >= n_tok (vocabulary padding the tokenizer does not know) get a zero output
        row (lm_head, or the shared embedding when tied), logit exactly 0, so they are
        never chosen (a trained model never emits them either);
      - the eos row is multiplied by scales["eos_gain"] so that </s> wins now and then
        and some sequences end before max_new_tokens.
    """
    g = torch.Generator().manual_seed(seed)
    sd = model.state_dict()
    out_row = "shared.weight" if tied else "lm_head.weight"
    out = {}
    for name in stored_names(model, tied):
        shape = tuple(sd[name].shape)
        if name == "shared.weight":
            v = scales["embed"] * torch.randn(shape, generator=g)
        elif name == "lm_head.weight":
            v = scales["head"] * torch.randn(shape, generator=g)
        elif name.endswith("relative_attention_bias.weight"):
            v = scales["rel"] * torch.randn(shape, generator=g)
        elif name.endswith("layer_norm.weight"):
            v = 1.0 + scales["ln"] * torch.randn(shape, generator=g)
            if name == "decoder.final_layer_norm.weight":
                v *= scales["final_gain"]
        elif name.endswith((".q.weight", ".k.weight")):
            v = scales["qk"] * torch.randn(shape, generator=g)
        elif name.endswith((".v.weight", ".o.weight")):
            v = scales["vo"] * torch.randn(shape, generator=g)
        elif ".DenseReluDense.w" in name:
            v = scales["ff"] * torch.randn(shape, generator=g)
        else:
            raise RuntimeError("unhandled parameter " + name)
        if name == out_row:
            v[n_tok:] = 0.0
            v[EOS] *= scales["eos_gain"]
        out[name] = v.to(dtype).contiguous()
    return out


def new_model(config):
    """An HF model for config (its own initial weights are all replaced)."""
    _, model_cls = hf_classes(config.model_type)
    torch.manual_seed(0)
    return model_cls(config).eval()


def model_with(config, weights, dtype=torch.float32):
    """HF model for config holding exactly the stored weights (upcast to dtype)."""
    model = new_model(config).to(dtype)
    missing, unexpected = model.load_state_dict({k: v.to(dtype) for k, v in weights.items()}, strict=False)
    assert not unexpected, unexpected
    assert set(missing) <= {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}, missing
    model.tie_weights()
    return model.eval()


def load_model(variant, dtype=torch.float32):
    """The saved model dir loaded back by from_pretrained(dir, torch_dtype=dtype), checked
    against the stored tensors value by value (tied aliases included)."""
    from safetensors.torch import load_file
    from transformers import AutoModelForSeq2SeqLM

    d = model_dir(variant)
    model = AutoModelForSeq2SeqLM.from_pretrained(d, torch_dtype=dtype).eval()
    assert type(model).__name__ == VARIANTS[variant]["class"], type(model).__name__
    sd = load_file(os.path.join(d, "model.safetensors"))
    assert all(v.dtype == VARIANTS[variant]["dtype"] for v in sd.values())
    tied = VARIANTS[variant]["config"]["tie_word_embeddings"]
    assert sorted(sd) == stored_names(model, tied), sorted(set(sd) ^ set(stored_names(model, tied)))
    alias = {"encoder.embed_tokens.weight": "shared.weight", "decoder.embed_tokens.weight": "shared.weight"}
    if tied:
        alias["lm_head.weight"] = "shared.weight"
    for k, v in model.state_dict().items():
        assert torch.equal(v, sd[alias.get(k, k)].to(dtype)), k
    return model


# ------------------------------------------------------------------------- inputs
def tokenizer(variant):
    """(the reference tokenizer of the model dir, its description).

    Where the dir has spiece.model: AutoTokenizer(use_fast=False), i.e. T5Tokenizer over
    sentencepiece itself. transformers' fast T5 tokenizer converted from a spiece.model
    (and the tokenizer.json files in tests/data/spm, made that way) drops byte fallback
    (convert_slow_tokenizer.SpmConverter.handle_byte_fallback = False for T5): with the
    bytefb vocabulary an emoji becomes <unk> there instead of its <0xNN> bytes, unlike
    sentencepiece. Where the dir has only tokenizer.json (umt5, the t5like vocabulary):
    AutoTokenizer (fast), i.e. exactly what that file specifies (for its golden texts,
    which have no emoji, the same ids as sentencepiece gives).
    """
    from transformers import AutoTokenizer

    d = model_dir(variant)
    if "spiece.model" in VARIANTS[variant]["tokenizer"]:
        tok = AutoTokenizer.from_pretrained(d, use_fast=False)
        return tok, "AutoTokenizer(use_fast=False): %s over sentencepiece (spiece.model)" % type(tok).__name__
    tok = AutoTokenizer.from_pretrained(d)
    return tok, "AutoTokenizer: %s from tokenizer.json" % type(tok).__name__


def fast_tokenizer(variant):
    """AutoTokenizer's default (fast) tokenizer of the model dir, for comparison."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir(variant))


def encode(variant, tok=None):
    """(texts, ids per text with </s>, input_ids [B, Tmax] right-padded with 0,
    attention_mask [B, Tmax]) of the golden batch, from the reference tokenizer; where
    that is sentencepiece-backed, checked against sentencepiece's own encode + [</s>]."""
    import sentencepiece as spm

    tok = tok or tokenizer(variant)[0]
    texts = VARIANTS[variant]["texts"]
    ids = [tok(t).input_ids for t in texts]
    if "spiece.model" in VARIANTS[variant]["tokenizer"]:
        sp = spm.SentencePieceProcessor(model_file=os.path.join(SPM_DIR, VARIANTS[variant]["spm"] + ".model"))
        for t, i in zip(texts, ids):
            assert i == sp.encode(t) + [EOS], (t, i, sp.encode(t))
    tmax = max(len(i) for i in ids)
    input_ids = torch.tensor([i + [PAD] * (tmax - len(i)) for i in ids])
    mask = torch.tensor([[1] * len(i) + [0] * (tmax - len(i)) for i in ids])
    return texts, ids, input_ids, mask


# ---------------------------------------------------------------------- decoding
def strip(seq, eos=EOS):
    """Generated ids without the decoder start and without what follows the first eos
    (generate pads finished sequences with pad = 0)."""
    seq = [int(x) for x in seq]
    assert seq[0] == PAD
    seq = seq[1:]
    if eos in seq:
        seq = seq[:seq.index(eos) + 1]
    return seq


@torch.no_grad()
def encoder_out(model, input_ids, mask):
    return model.get_encoder()(input_ids=input_ids, attention_mask=mask).last_hidden_state


@torch.no_grad()
def hf_greedy(model, input_ids, mask, max_new=MAX_NEW):
    """transformers' generate, greedy: (token lists, processed scores [B, steps, V])."""
    out = model.generate(input_ids=input_ids, attention_mask=mask, do_sample=False, num_beams=1,
                         max_new_tokens=max_new, output_scores=True, return_dict_in_generate=True,
                         synced_gpus=False)
    return [strip(s) for s in out.sequences], torch.stack(out.scores, 1)


@torch.no_grad()
def hf_beam(model, input_ids, mask, length_penalty, early_stopping, max_new=MAX_NEW):
    """transformers' generate, beam search: (token lists input-major, sequences_scores)."""
    out = model.generate(input_ids=input_ids, attention_mask=mask, do_sample=False, num_beams=NUM_BEAMS,
                         num_return_sequences=NUM_RETURN, length_penalty=length_penalty,
                         early_stopping=early_stopping, max_new_tokens=max_new,
                         output_scores=True, return_dict_in_generate=True, synced_gpus=False)
    return [strip(s) for s in out.sequences], [float(x) for x in out.sequences_scores]


@torch.no_grad()
def teacher_forced(model, enc, mask, seqs, max_new=MAX_NEW):
    """Raw logits [B, max_new, V] (lm_head output, no processor) of the decoder fed
    [start] + seq[:-1] for each seq in seqs, batched over the padded encoder output enc
    with its mask; row n is the step that produced seq[n]; rows after the end are 0."""
    B = len(seqs)
    dec = torch.full((B, max_new), PAD, dtype=torch.long)
    for b, s in enumerate(seqs):
        dec[b, 1:len(s)] = torch.tensor(s[:-1], dtype=torch.long)
    logits = model(encoder_outputs=(enc,), attention_mask=mask, decoder_input_ids=dec, use_cache=False).logits
    for b, s in enumerate(seqs):
        logits[b, len(s):] = 0.0
    return logits


@torch.no_grad()
def plain_greedy(model, enc, mask, max_new=MAX_NEW):
    """Greedy by the definition: full recompute each step, argmax of the raw logits, stop
    after eos or max_new tokens. Returns (token lists, per-step top1 - top2 margins)."""
    out, margins = [], []
    for b in range(enc.shape[0]):
        seq, m = [PAD], []
        for _ in range(max_new):
            row = model(encoder_outputs=(enc[b:b + 1],), attention_mask=mask[b:b + 1],
                        decoder_input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
            top = torch.topk(row, 2).values
            m.append(float(top[0] - top[1]))
            seq.append(int(row.argmax()))
            if seq[-1] == EOS:
                break
        out.append(seq[1:])
        margins.append(m)
    return out, margins


@torch.no_grad()
def plain_beam(model, enc, mask, length_penalty, early_stopping, max_new=MAX_NEW, noise=None):
    """Beam search re-implemented from the rules of transformers 4.46 (BeamSearchScorer,
    num_beams = NUM_BEAMS, no logits processor), with full recompute each step, one input
    at a time. Returns (tokens input-major, scores, smallest gap between consecutive
    candidate scores among the 2 * num_beams + 1 best of any step: an upper bound on how
    close a decision came to a tie). noise = (generator, std): add std * N(0,1) to every
    logit, to test that the result does not hinge on float rounding (noise_robust).

    The rules (beam_search.py / utils.py _beam_search of 4.46):
      - beams start as [start]; beam 0 has score 0, the others -1e9 (so step 1 expands
        only beam 0);
      - each step: cand = beam_score + log_softmax(raw logits), over all beams x V; take
        the 2 * num_beams best (torch.topk order: score descending);
      - walk them in that order: an eos candidate whose rank is < num_beams becomes a
        finished hypothesis [beam ..., eos] with score cand / gen_len ** length_penalty,
        gen_len = generated tokens counted WITH the eos (ranks >= num_beams: skipped);
        other candidates fill the next beams until there are num_beams;
      - finished hypotheses keep the best num_beams (worst dropped when more);
      - the input is done when it has num_beams hypotheses and early_stopping is True, or
        (early_stopping False) when the worst kept score >= best candidate score of this
        step (eos ones included) / cur_gen_len ** length_penalty, cur_gen_len = tokens
        generated after this step;
      - after max_new steps every live beam is added as a hypothesis (no eos, gen_len =
        max_new), same pruning; the best num_return by score are returned (on a tie the
        later-added hypothesis first: a stable ascending sort, popped from the end).
    """
    lp = length_penalty
    toks, scores, gap = [], [], float("inf")
    for b in range(enc.shape[0]):
        e = enc[b:b + 1].expand(NUM_BEAMS, -1, -1)
        m = mask[b:b + 1].expand(NUM_BEAMS, -1)
        beams = [[PAD] for _ in range(NUM_BEAMS)]
        bscore = torch.full((NUM_BEAMS,), -1e9, dtype=torch.float32)
        bscore[0] = 0.0
        hyps = []  # (score, tokens)
        done = False

        def add(score, seq):  # BeamHypotheses.add
            if len(hyps) < NUM_BEAMS or score > min(h[0] for h in hyps):
                hyps.append((score, seq))
                if len(hyps) > NUM_BEAMS:
                    hyps.pop(min(range(len(hyps)), key=lambda i: (hyps[i][0], i)))

        for step in range(max_new):
            logits = model(encoder_outputs=(e,), attention_mask=m,
                           decoder_input_ids=torch.tensor(beams), use_cache=False).logits[:, -1]
            if noise is not None:
                logits = logits + noise[1] * torch.randn(logits.shape, generator=noise[0])
            lprobs = torch.log_softmax(logits.float(), dim=-1)
            cand = (lprobs + bscore[:, None]).view(-1)
            top_s, top_i = torch.topk(cand, 2 * NUM_BEAMS + 1)
            gap = min(gap, float((top_s[:-1] - top_s[1:]).min()))
            top_s, top_i = top_s[:-1], top_i[:-1]
            V = logits.shape[-1]
            new_beams, new_scores = [], []
            gen_len = step + 1
            for rank, (s, i) in enumerate(zip(top_s.tolist(), top_i.tolist())):
                beam, tokid = divmod(i, V)
                if tokid == EOS:
                    if rank >= NUM_BEAMS:
                        continue
                    add(s / gen_len ** lp, beams[beam][1:] + [EOS])
                else:
                    new_beams.append(beams[beam] + [tokid])
                    new_scores.append(s)
                if len(new_beams) == NUM_BEAMS:
                    break
            if len(hyps) >= NUM_BEAMS:
                if early_stopping:
                    done = True
                else:
                    done = min(h[0] for h in hyps) >= float(top_s[0]) / gen_len ** lp
            if done:
                break
            beams = new_beams
            bscore = torch.tensor(new_scores, dtype=torch.float32)
        if not done:
            for seq, s in zip(beams, bscore.tolist()):
                add(s / (len(seq) - 1) ** lp, seq[1:])
        ranked = sorted(hyps, key=lambda h: h[0])  # finalize: pop() from the ascending sort
        best = [ranked.pop() for _ in range(NUM_RETURN)]
        toks += [h[1] for h in best]
        scores += [h[0] for h in best]
    return toks, scores, gap


def noise_robust(model, enc, mask, beam_args, want, std, trials, seed=0):
    """How many of `trials` beam searches with every logit perturbed by std * N(0,1)
    (seeded) still return the tokens `want`: the decisions do not hinge on rounding noise
    when all do (std well above the measured f32 noise of the logits)."""
    g = torch.Generator().manual_seed(seed)
    return sum(plain_beam(model, enc, mask, noise=(g, std), **beam_args)[0] == want for _ in range(trials))


# ------------------------------------------------------------- relative positions
BUCKET_CFGS = [(32, 128), (16, 20), (8, 8), (64, 512)]  # (num_buckets, max_distance)
BUCKET_K = 1200  # relative positions -(K-1) .. K-1


def bucket_tables(K=BUCKET_K, cfgs=BUCKET_CFGS):
    """(bidirectional [len(cfgs), 2K-1], causal [len(cfgs), K]) int32 from HF's
    T5Attention._relative_position_bucket: bi[c, r + K - 1] = bucket of relative position
    r = key - query; causal[c, n] = bucket of relative position -n (decoder). Checked to
    equal UMT5Attention's own copy of the formula."""
    from transformers import UMT5Config
    from transformers.models.t5.modeling_t5 import T5Attention
    from transformers.models.umt5.modeling_umt5 import UMT5Attention

    rel = torch.arange(-(K - 1), K, dtype=torch.long)
    causal_rel = -torch.arange(0, K, dtype=torch.long)
    bi, ca = [], []
    for nb, md in cfgs:
        b = T5Attention._relative_position_bucket(rel, bidirectional=True, num_buckets=nb, max_distance=md)
        c = T5Attention._relative_position_bucket(causal_rel, bidirectional=False, num_buckets=nb, max_distance=md)
        for is_dec, r, ref in ((False, rel, b), (True, causal_rel, c)):
            cfg = UMT5Config(d_model=8, d_kv=2, num_heads=1, relative_attention_num_buckets=nb,
                             relative_attention_max_distance=md, is_decoder=is_dec)
            u = UMT5Attention(cfg, has_relative_attention_bias=True, layer_idx=0)._relative_position_bucket(r)
            assert torch.equal(u, ref), (nb, md, is_dec)
        bi.append(b)
        ca.append(c)
    return torch.stack(bi).int(), torch.stack(ca).int()


def bucket_exact(r, bidirectional, nb, md):
    """The same bucket computed in exact float64 arithmetic (for the report: where the
    float32 rounding of HF moves a boundary)."""
    bucket = 0
    if bidirectional:
        nb //= 2
        bucket += nb if r > 0 else 0
        r = abs(r)
    else:
        r = -min(r, 0)
    me = nb // 2
    if r < me:
        return bucket + r
    return bucket + min(me + int(math.log(r / me) / math.log(md / me) * (nb - me)), nb - 1)


def bucket_f32(r, bidirectional, nb, md):
    """The same bucket in the float32 arithmetic torch does (log of a float32 ratio,
    divided by float32(log(md / me)), times (nb - me), truncated): what a C port must
    reproduce to match HF at every boundary."""
    bucket = 0
    if bidirectional:
        nb //= 2
        bucket += nb if r > 0 else 0
        r = abs(r)
    else:
        r = -min(r, 0)
    me = nb // 2
    if r < me:
        return bucket + r
    f = np.float32
    x = np.log(f(r) / f(me)) / f(math.log(md / me)) * f(nb - me)
    return bucket + min(me + int(x), nb - 1)


def position_bias(attn, q_len, k_len):
    """attn.compute_bias(q_len, k_len)[0]: [H, q_len, k_len] (T5Attention or
    UMT5Attention; both compute it the same way)."""
    with torch.no_grad():
        return attn.compute_bias(q_len, k_len)[0]


def self_attentions(stack):
    """The self-attention modules of an encoder / decoder stack, layer by layer."""
    return [blk.layer[0].SelfAttention for blk in stack.block]


def json_text(obj, indent=0):
    """JSON with one key per line and every list of scalars on one line (token lists
    stay readable); non-ASCII text kept as UTF-8."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        items = [inner + json.dumps(k) + ": " + json_text(v, indent + 1) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(x, (list, dict)) for x in obj):
        return "[\n" + ",\n".join(inner + json_text(x, indent + 1) for x in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def write_json(path, obj):
    text = json_text(obj) + "\n"
    assert json.loads(text) == obj
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)

