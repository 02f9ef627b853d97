#!/usr/bin/env python3
"""Golden values for the small random T5-family models (tools/gen_tiny_t5.py).

Usage (from the repository root, after tools/gen_tiny_t5.py):

    .venv/bin/python tools/golden_t5.py [VARIANT ...]    # default: all four

Writes tests/data/t5-golden/<variant>.safetensors and <variant>.json for variant in
t5-v1_0, t5-v1_1, mt5, umt5 (model dirs: t5_oracle.VARIANTS). B = 3 inputs, Tmax = the
longest input (with </s>), N = max_new_tokens = 16, V = vocab_size, H = num_heads,
R = num_return_sequences = 2, d = d_model.

<variant>.safetensors (float32 / int32; metadata "info": JSON with the source and the
measured noise figures):
  input_ids      i32 [B, Tmax]   right-padded with 0 (pad); input_len i32 [B]
  encoder_out    f32 [B, Tmax, d] HF encoder last_hidden_state of the padded batch (with
                                  its attention mask); rows >= input_len are whatever HF
                                  computes for padding: compare valid rows only
  greedy_tokens  i32 [B, N]      generated ids (decoder start excluded, </s> included when
                                  produced), -1 after the end; greedy_len i32 [B]
  greedy_logits  f32 [B, N, V]   raw logits (lm_head output, before any processor) of
                                  the step that produced greedy_tokens[b, n], teacher-forced
                                  on [start] + greedy tokens over the padded batch's encoder
                                  output; rows >= greedy_len are 0
  beam_tokens    i32 [B*R, N]    beam search results, input-major (input b's rank r is row
                                  b*R + r), -1 after the end; beam_len i32 [B*R];
                                  beam_scores f32 [B*R] (HF sequences_scores)
  enc_bias       f32 [L_e, H, 2*Tmax-1]  encoder relative position bias as a Toeplitz
                                  vector: [l, h, (j - i) + Tmax - 1] is added to the score
                                  of query i, key j; L_e = 1 (t5, mt5: layer 0's bias, shared
                                  by all layers) or num_layers (umt5: one per layer)
  dec_bias       f32 [L_d, H, N+1]  decoder self-attention bias by distance: [l, h, n] is
                                  added for query p, key p - n; L_d = 1 or num_decoder_layers
  buckets_cfg    i32 [4, 2]      (num_buckets, max_distance): (32,128) (16,20) (8,8) (64,512)
  buckets_bi     i32 [4, 2K-1]   HF T5Attention._relative_position_bucket(j - i,
                                  bidirectional=True) for j - i = -(K-1) .. K-1, K = 1200
  buckets_causal i32 [4, K]      the same, bidirectional=False, relative position -n for
                                  n = 0 .. K-1 (decoder: key n positions before the query)
  (the bucket tables are the same in every variant's file)

<variant>.json: model_dir, inputs, input_ids (unpadded, with </s>), tokenizer (which HF
tokenizer made the ids, see t5_oracle.tokenizer), max_new_tokens, greedy {tokens, text,
min_margin}, beam {num_beams, num_return_sequences, length_penalty, early_stopping,
tokens, scores, text}, sample_free_notes (the decoding rules), noise (measured figures
below, each [max abs, max rel to max(1,|ref|), max rel to the row's max |ref|]). Texts
are tokenizer.decode(ids, skip_special_tokens=True) of the same tokenizer. Where the
tokenizers disagree on the emoji (byte fallback, see t5_oracle.tokenizer) the other ids
are recorded too: mt5 fast_tokenizer_input_ids, with a tokenizer_note (umt5's t5like
tokenizer.json gives sentencepiece's own ids for its texts: no extra ids).

Checks (the script stops if one fails): ids equal sentencepiece's (where the tokenizer is
sentencepiece-backed); generate()'s greedy equals a plain greedy loop (full recompute, one
input alone) and the argmax of the teacher-forced logits; generate()'s beam equals
t5_oracle.plain_beam (the 4.46 rules, re-implemented, one input alone) token for token,
scores within 1e-5, and still does in 10 runs with every logit perturbed by 1e-2 N(0,1)
(~10x the largest f32 logit noise measured); every greedy margin (top1 - top2 of the raw logits) > 0.05; each
input run alone equals its row of the batch; the f64 model gives the same tokens; the
bias vectors equal what each HF attention layer computes in a real forward pass (its
compute_bias calls captured, longest input alone);
the bucket tables equal UMT5Attention's copy of the formula.

Independence: all values come from transformers 4.46.3 / PyTorch (float32, the saved
weights loaded back with from_pretrained(dir, torch_dtype=float32)), never from this
project's C code. torch runs single-threaded so that reruns are byte-identical.

Measured float32 noise (printed, and stored under "noise"; worst over the four models):
HF batch vs each input alone, generate's KV cache vs full recompute, f32 vs f64 of the
same weights all agree: encoder_out |diff| <= 1.5e-5; logits |diff| <= 1e-3 (logits reach
~110 here: that is <= 8e-4 * max(1, |ref|), <= 1.2e-5 * max |row|); beam_scores <= 3e-5.
Suggested tolerances for an f32 C engine: encoder_out |diff| <= 2e-4 * max(1, |ref|);
greedy_logits |diff| <= 5e-3 * max(1, |ref|) (or 1e-4 * max |row|); beam_scores |diff|
<= 2e-4; tokens exactly (smallest greedy margin 0.23; beam results survive 1e-2 logit
noise); enc_bias / dec_bias / buckets exactly (lookups of stored values). bf16 / f16
weights are exact in f32, so the same tolerances hold for every variant.
"""

import json
import os
import sys

import numpy as np
import torch

import t5_oracle as oracle

ROBUST_STD, ROBUST_TRIALS = 1e-2, 10  # beam must not hinge on logit noise this large

NOTES = (
    "No sampling anywhere. Decoder starts from decoder_start_token_id 0; stop at eos 1 (kept) "
    "or after max_new_tokens. Greedy: argmax of the raw logits, no logits processor "
    "(T5's generation_config sets none). Beam (transformers 4.46 BeamSearchScorer): "
    "candidates = beam score + log_softmax(f32 logits) over all beams x V, 2*num_beams best "
    "in descending order; step 1 expands beam 0 only (others start at -1e9); an eos "
    "candidate ranked < num_beams becomes a finished hypothesis with score "
    "sum_logprobs / L**length_penalty, L = generated tokens INCLUDING eos (ranked >= "
    "num_beams: dropped); other candidates fill the num_beams live beams; at most num_beams "
    "hypotheses are kept (a new one must beat the worst). An input is done when it has "
    "num_beams hypotheses and early_stopping is true, or (false) when the worst kept score "
    ">= best candidate score of this step / L**length_penalty with L = tokens generated "
    "after this step. At max_new_tokens the live beams are added (no eos, L = "
    "max_new_tokens). The best num_return_sequences hypotheses are returned, best first; "
    "beam_scores are their length-normalised scores."
)


def dev(a, b):
    """(max |a - b|, max |a - b| / max(1, |b|), max over rows of max |a - b| / max |b_row|)."""
    if not a.numel():
        return (0.0, 0.0, 0.0)
    a, b = a.double(), b.double()
    d = (a - b).abs()
    row = (d / b.abs().amax(-1, keepdim=True).clamp(min=1e-30)).max()
    return (float(d.max()), float((d / b.abs().clamp(min=1.0)).max()), float(row))


def worst(*devs):
    return tuple(max(x) for x in zip(*devs))


def fmt(d):
    return "abs %.1e rel %.1e row %.1e" % d


def sp_encode(spm_name, text):
    """sentencepiece's own ids of text, plus </s>."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=os.path.join(oracle.SPM_DIR, spm_name + ".model"))
    return sp.encode(text) + [oracle.EOS]


def pad_tokens(seqs, n):
    out = np.full((len(seqs), n), -1, dtype=np.int32)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return out


def toeplitz(bias):
    """[H, T, T] bias -> [H, 2T-1] vector by relative position j - i, checked constant
    along every diagonal."""
    H, T, _ = bias.shape
    out = torch.empty(H, 2 * T - 1, dtype=bias.dtype)
    for r in range(-(T - 1), T):
        i = max(0, -r)
        out[:, r + T - 1] = bias[:, i, i + r]
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    assert torch.equal(out[:, (j - i) + T - 1], bias), "bias is not Toeplitz"
    return out


def bias_layers(stack, umt5):
    """The self-attention modules that hold a relative_attention_bias."""
    attns = oracle.self_attentions(stack)
    if umt5:
        return attns
    assert attns[0].has_relative_attention_bias
    assert not any(a.has_relative_attention_bias for a in attns[1:])
    return attns[:1]


@torch.no_grad()
def check_bias_hook(model, umt5, input_ids, want_enc, want_dec):
    """The bias HF's attention layers compute in a real forward pass (one unpadded input,
    no cache; captured from each layer's compute_bias call, before HF adds the padding /
    causal mask) equals the vectors."""
    T = input_ids.shape[1]
    D = want_dec.shape[-1]
    got = {}

    def capture(key, fn):
        def f(*args, **kw):
            out = fn(*args, **kw)
            got.setdefault(key, out[0].clone())
            return out
        return f

    layers = {"e": bias_layers(model.encoder, umt5), "d": bias_layers(model.decoder, umt5)}
    for k, attns in layers.items():
        for li, a in enumerate(attns):
            a.compute_bias = capture((k, li), a.compute_bias)
    try:
        model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
              decoder_input_ids=torch.zeros((1, D), dtype=torch.long), use_cache=False)
    finally:
        for attns in layers.values():
            for a in attns:
                del a.compute_bias  # back to the class method
    i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
    p, q = torch.meshgrid(torch.arange(D), torch.arange(D), indexing="ij")
    causal = q <= p
    for li in range(len(layers["e"])):
        assert torch.equal(got[("e", li)].float(), want_enc[li][:, (j - i) + T - 1]), ("encoder bias", li)
    for li in range(len(layers["d"])):
        ref = want_dec[li][:, (p - q).clamp(min=0)]
        assert torch.equal(got[("d", li)].float()[:, causal], ref[:, causal]), ("decoder bias", li)
    return len(got)


@torch.no_grad()
def golden(variant):
    v = oracle.VARIANTS[variant]
    umt5 = v["config"]["model_type"] == "umt5"
    B, N = 3, oracle.MAX_NEW
    model = oracle.load_model(variant, torch.float32)
    tok, tok_desc = oracle.tokenizer(variant)
    texts, ids, input_ids, mask = oracle.encode(variant, tok)
    fast_ids = [oracle.fast_tokenizer(variant)(t).input_ids for t in texts]
    T = input_ids.shape[1]
    cfg = model.config
    print("%s: %s, ids %s, Tmax %d" % (variant, tok_desc, [len(i) for i in ids], T))

    enc = oracle.encoder_out(model, input_ids, mask)
    greedy, gen_scores = oracle.hf_greedy(model, input_ids, mask)
    logits = oracle.teacher_forced(model, enc, mask, greedy)
    beam, beam_scores = oracle.hf_beam(model, input_ids, mask, **v["beam"])

    # greedy: generate == plain loop == argmax of the teacher-forced rows; margins
    plain, margins = oracle.plain_greedy(model, enc, mask)
    assert plain == greedy, (plain, greedy)
    noise = {}
    cache = (0.0, 0.0, 0.0)
    for b, s in enumerate(greedy):
        assert logits[b, :len(s)].argmax(-1).tolist() == s
        cache = worst(cache, dev(gen_scores[b, :len(s)], logits[b, :len(s)]))
    min_margin = min(min(m) for m in margins)
    print("  greedy min margin %.4f; logits, generate (KV cache) vs teacher-forced: %s" % (min_margin, fmt(cache)))
    assert min_margin > 0.05, min_margin
    noise["logits_cache_vs_full"] = cache

    # beam: generate == the re-implemented rules
    ptoks, pscores, gap = oracle.plain_beam(model, enc, mask, **v["beam"])
    assert ptoks == beam, (ptoks, beam)
    sdiff = max(abs(a - b) for a, b in zip(pscores, beam_scores))
    assert sdiff < 1e-5, sdiff
    robust = oracle.noise_robust(model, enc, mask, v["beam"], beam, ROBUST_STD, ROBUST_TRIALS)
    print("  beam == plain_beam (scores within %.1e); closest candidate tie %.2e; same result with "
          "logits + %g N(0,1): %d of %d" % (sdiff, gap, ROBUST_STD, robust, ROBUST_TRIALS))
    assert robust == ROBUST_TRIALS, robust
    noise["beam_candidate_min_gap"] = gap

    # each input alone == its row of the batch
    enc_d, log_d, beam_d = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0
    for b in range(B):
        L = len(ids[b])
        x = input_ids[b:b + 1, :L]
        m1 = torch.ones_like(x)
        e1 = oracle.encoder_out(model, x, m1)
        enc_d = worst(enc_d, dev(e1[0], enc[b, :L]))
        g1, _ = oracle.hf_greedy(model, x, m1)
        assert g1 == greedy[b:b + 1], (b, g1, greedy[b])
        l1 = oracle.teacher_forced(model, e1, m1, g1)
        log_d = worst(log_d, dev(l1[0, :len(g1[0])], logits[b, :len(g1[0])]))
        bt, bs = oracle.hf_beam(model, x, m1, **v["beam"])
        assert bt == beam[b * oracle.NUM_RETURN:(b + 1) * oracle.NUM_RETURN], (b, bt)
        beam_d = max(beam_d, max(abs(p - q) for p, q in zip(bs, beam_scores[b * oracle.NUM_RETURN:])))
    print("  batch vs single: encoder_out %s; logits %s; beam scores abs %.1e" % (fmt(enc_d), fmt(log_d), beam_d))
    noise.update({"encoder_batch_vs_single": enc_d, "logits_batch_vs_single": log_d,
                  "beam_scores_batch_vs_single": beam_d})

    # float64 run of the same weights: the f32 rounding noise
    m64 = oracle.load_model(variant, torch.float64)
    enc64 = oracle.encoder_out(m64, input_ids, mask)
    g64, _ = oracle.hf_greedy(m64, input_ids, mask)
    assert g64 == greedy, (g64, greedy)
    log64 = oracle.teacher_forced(m64, enc64, mask, greedy)
    e_d = worst(*[dev(enc[b, :len(ids[b])], enc64[b, :len(ids[b])]) for b in range(B)])
    l_d = worst(*[dev(logits[b, :len(s)], log64[b, :len(s)]) for b, s in enumerate(greedy)])
    b64, s64 = oracle.hf_beam(m64, input_ids, mask, **v["beam"])
    assert b64 == beam, (b64, beam)
    s_d = max(abs(p - q) for p, q in zip(s64, beam_scores))
    print("  f32 vs f64: encoder_out %s; logits %s; beam scores abs %.1e" % (fmt(e_d), fmt(l_d), s_d))
    noise.update({"encoder_f32_vs_f64": e_d, "logits_f32_vs_f64": l_d, "beam_scores_f32_vs_f64": s_d})
    noise["logits_max_abs"] = float(logits.abs().max())
    del m64

    # relative position bias
    enc_bias = torch.stack([toeplitz(oracle.position_bias(a, T, T)) for a in bias_layers(model.encoder, umt5)])
    dec_bias = torch.stack([oracle.position_bias(a, N + 1, N + 1)[:, N, N - torch.arange(N + 1)]
                            for a in bias_layers(model.decoder, umt5)])
    longest = int(np.argmax([len(i) for i in ids]))
    n = check_bias_hook(model, umt5, input_ids[longest:longest + 1, :len(ids[longest])], enc_bias, dec_bias)
    assert n == enc_bias.shape[0] + dec_bias.shape[0], n
    assert enc_bias.shape == (cfg.num_layers if umt5 else 1, cfg.num_heads, 2 * T - 1)
    assert dec_bias.shape == (cfg.num_decoder_layers if umt5 else 1, cfg.num_heads, N + 1)

    bi, ca = oracle.bucket_tables()
    dec_text = lambda seqs: [tok.decode(s, skip_special_tokens=True) for s in seqs]
    t = {
        "input_ids": input_ids.numpy().astype(np.int32),
        "input_len": np.array([len(i) for i in ids], dtype=np.int32),
        "encoder_out": enc.numpy().astype(np.float32),
        "greedy_tokens": pad_tokens(greedy, N),
        "greedy_len": np.array([len(s) for s in greedy], dtype=np.int32),
        "greedy_logits": logits.numpy().astype(np.float32),
        "beam_tokens": pad_tokens(beam, N),
        "beam_len": np.array([len(s) for s in beam], dtype=np.int32),
        "beam_scores": np.array(beam_scores, dtype=np.float32),
        "enc_bias": enc_bias.numpy().astype(np.float32),
        "dec_bias": dec_bias.numpy().astype(np.float32),
        "buckets_cfg": np.array(oracle.BUCKET_CFGS, dtype=np.int32),
        "buckets_bi": bi.numpy(),
        "buckets_causal": ca.numpy(),
    }
    assert t["greedy_logits"].shape == (B, N, cfg.vocab_size)
    js = {
        "model_dir": "tests/data/" + v["dir"],
        "inputs": texts,
        "input_ids": ids,
        "tokenizer": tok_desc,
        "max_new_tokens": N,
        "greedy": {"tokens": greedy, "text": dec_text(greedy), "min_margin": round(min_margin, 6)},
        "beam": {"num_beams": oracle.NUM_BEAMS, "num_return_sequences": oracle.NUM_RETURN,
                 "length_penalty": v["beam"]["length_penalty"], "early_stopping": v["beam"]["early_stopping"],
                 "tokens": beam, "scores": [float(np.float32(s)) for s in beam_scores], "text": dec_text(beam)},
        "sample_free_notes": NOTES,
        "noise": {k: ([float("%.3g" % y) for y in x] if isinstance(x, tuple) else float("%.3g" % x))
                  for k, x in sorted(noise.items())},
    }
    if fast_ids != ids:
        js["fast_tokenizer_input_ids"] = fast_ids
        js["tokenizer_note"] = ("transformers' fast tokenizer converted from spiece.model drops byte "
                                "fallback (the emoji becomes <unk> 2): fast_tokenizer_input_ids are its "
                                "ids; input_ids are sentencepiece's")
    sp_ids = [sp_encode(v["spm"], t) for t in texts]
    if sp_ids != ids:
        js["sentencepiece_input_ids"] = sp_ids
        js["tokenizer_note"] = ("tokenizer.json (written by transformers' converter from %s.model) has "
                                "\"byte_fallback\": false and no ByteFallback decoder: the emoji is <unk> 2 "
                                "in input_ids, and generated <0xNN> pieces decode to the literal text "
                                "\"<0xNN>\"; sentencepiece_input_ids are what sentencepiece gives with byte "
                                "fallback" % v["spm"])
    for b in range(B):
        print("  [%d] %-45r -> greedy %s %r" % (b, texts[b][:45], greedy[b], js["greedy"]["text"][b]))
    for i, (s, sc) in enumerate(zip(beam, beam_scores)):
        print("      beam %d.%d %.5f %s" % (i // oracle.NUM_RETURN, i % oracle.NUM_RETURN, sc, s))

    os.makedirs(oracle.GOLDEN_DIR, exist_ok=True)
    base = os.path.join(oracle.GOLDEN_DIR, variant)
    from safetensors.numpy import save_file

    meta = {"source": "tools/golden_t5.py: transformers 4.46.3, float32, weights of %s" % js["model_dir"],
            "noise": js["noise"]}
    save_file({k: np.ascontiguousarray(x) for k, x in t.items()}, base + ".safetensors",
              metadata={"info": json.dumps(meta, sort_keys=True)})
    oracle.write_json(base + ".json", js)
    for path in (base + ".safetensors", base + ".json"):
        print("  wrote %s (%d bytes)" % (os.path.relpath(path, oracle.ROOT), os.path.getsize(path)))
    return noise


def bucket_report():
    """Where HF's float32 bucket arithmetic differs from exact arithmetic, and whether a
    float32 emulation (t5_oracle.bucket_f32) reproduces HF everywhere."""
    bi, ca = oracle.bucket_tables()
    K = oracle.BUCKET_K
    for c, (nb, md) in enumerate(oracle.BUCKET_CFGS):
        diffs, f32_bad = [], 0
        for r in range(-(K - 1), K):
            hf = int(bi[c, r + K - 1])
            if oracle.bucket_exact(r, True, nb, md) != hf:
                diffs.append(("bi", r))
            f32_bad += oracle.bucket_f32(r, True, nb, md) != hf
        for n in range(K):
            hf = int(ca[c, n])
            if oracle.bucket_exact(-n, False, nb, md) != hf:
                diffs.append(("causal", n))
            f32_bad += oracle.bucket_f32(-n, False, nb, md) != hf
        print("buckets (%d,%d): HF f32 vs exact math differ at %s; f32 emulation mismatches: %d"
              % (nb, md, diffs[:12] or "none", f32_bad))


def main(argv):
    torch.set_num_threads(1)
    variants = argv or list(oracle.VARIANTS)
    bucket_report()
    for variant in variants:
        golden(variant)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
