#!/usr/bin/env python3
"""encdec against CTranslate2 on a text-to-text model: the same weights, inputs and
thread count, in one run.

Usage (from the repository root, after scripts/venv.sh and a build of the library):

    .venv/bin/python bench/text_vs_ctranslate2.py [--shape opus-mt-en-de|flan-t5-small|
        nllb-200-distilled-600M|bart-large-cnn] [--threads 2]
        [--batches 1,16,64] [--beams 1,4] [--computes f32,int8] [--max-new 24]
        [--repeats 3] [--lib build/libencdec.so.0] [--json OUT] [--no-logit-screen]

The model: random weights of the real shape (opus-mt-en-de: Marian, d_model 512, 6 + 6
layers, 8 heads, FFN 2048, 58101 tokens, swish, sinusoidal positions), written once to
${XDG_CACHE_HOME:-~/.cache}/encdec/models/<shape>-random as a Hugging Face directory
with a Marian tokenizer (two SentencePiece models trained here on a few sentences, and
a vocab.json filled out to the model's size); flan-t5-small: tools/gen_tiny_t5.py
--bench's model (random, flan-t5-small's config and tokenizer); nllb-200-distilled-600M
(M2M100: d_model 1024, 12 + 12 layers, 16 heads, FFN 4096, 256206 tokens, relu) with
tests/data/text-tok/nllb's tokenizer, translating eng_Latn to fra_Latn (the target
forced first: CTranslate2's target_prefix, encdec's tgt_lang); bart-large-cnn (BART:
d_model 1024, 12 + 12 layers, 16 heads, FFN 4096, 50264 tokens, gelu, learned
positions) with tests/data/tiny-random-bart's byte-level BPE. Their tokenizers are
smaller than the models' vocabularies: CTranslate2's converter gets placeholder
tokens for the other rows (ids, not text, are compared). Each is converted by
CTranslate2's own converter (ct2-transformers-converter's TransformersConverter)
next to it. The </s> logit can never win (Marian: -1e4 through final_logits_bias;
T5: a zero </s> row; NLLB: a minimum length of --max-new on both engines), so both
engines generate exactly --max-new tokens for every sequence.

Correctness first: encdec's greedy tokens for the batch-1 input are compared with
CTranslate2's f32 ones (the agreement is printed; random weights may part two engines
at a near tie, so it is reported, not assumed). Then each configuration (engine,
compute, batch, beams) runs in a fresh process: one warm-up, then --repeats timed
calls of the whole batch (encoder and decoding; tokens in, tokens out for CTranslate2,
text in and out for encdec, whose tokenizer gives MarianTokenizer's ids), reporting
the median generated tokens per second (batch x max_new / time: the returned best
sequences' tokens) and the process's peak RSS (VmHWM; the workers import neither
torch nor transformers: the inputs come from a file). Both run intra-op threads = --threads
(CTranslate2: inter_threads 1, intra_threads N; encdec: a session of N threads).
--no-logit-screen loads encdec's model without its screened logits (models/screen.h:
f32 greedy steps of up to 4 sequences read an int8 copy of the output matrix), for
the same rows before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {
    "opus-mt-en-de": {"model_type": "marian", "d_model": 512, "encoder_layers": 6, "decoder_layers": 6,
                      "encoder_attention_heads": 8, "decoder_attention_heads": 8,
                      "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "vocab_size": 58101,
                      "decoder_vocab_size": 58101, "max_position_embeddings": 512,
                      "activation_function": "swish", "scale_embedding": True, "pad_token_id": 58100,
                      "eos_token_id": 0, "decoder_start_token_id": 58100, "forced_eos_token_id": None,
                      "share_encoder_decoder_embeddings": True, "static_position_embeddings": True},
    "flan-t5-small": {},   # tools/gen_tiny_t5.py --bench's
    "nllb-200-distilled-600M": {"model_type": "m2m_100", "d_model": 1024, "encoder_layers": 12,
                                "decoder_layers": 12, "encoder_attention_heads": 16,
                                "decoder_attention_heads": 16, "encoder_ffn_dim": 4096,
                                "decoder_ffn_dim": 4096, "vocab_size": 256206,
                                "max_position_embeddings": 1024, "activation_function": "relu",
                                "scale_embedding": True, "pad_token_id": 1, "eos_token_id": 2,
                                "bos_token_id": 0, "decoder_start_token_id": 2, "dropout": 0.0,
                                "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0},
    "bart-large-cnn": {"model_type": "bart", "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
                       "encoder_attention_heads": 16, "decoder_attention_heads": 16,
                       "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "vocab_size": 50264,
                       "max_position_embeddings": 1024, "activation_function": "gelu",
                       "scale_embedding": False, "pad_token_id": 1, "eos_token_id": 2, "bos_token_id": 0,
                       "decoder_start_token_id": 2, "forced_bos_token_id": None,
                       "forced_eos_token_id": None, "normalize_before": False},
}
# the shapes whose tokenizers come from tests/data, and their languages
TOKENIZERS = {"nllb-200-distilled-600M": ("tests/data/text-tok/nllb", ("eng_Latn", "fra_Latn")),
              "bart-large-cnn": ("tests/data/tiny-random-bart", None)}
T5_PREFIX = "translate English to German: "
SENTENCES = [
    "The house is wonderful and the garden is green.",
    "We walked to the station while the children played in the park.",
    "The weather was cold, but the trees stayed green all winter long.",
    "A small cat sleeps on the warm windowsill every afternoon.",
    "Translation systems learn from millions of sentence pairs.",
    "She reads the newspaper before breakfast and writes letters after lunch.",
    "Our neighbours are friendly people who often invite us for dinner.",
    "The river flows quickly through the old town towards the sea.",
]


def cache_dir(shape):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "encdec", "models", shape + "-random")


def convert(d, ct2):
    from ctranslate2.converters import TransformersConverter

    class Converter(TransformersConverter):
        # CTranslate2 4.8's converter passes transformers >= 4.56's dtype=; the oracle
        # venv's 4.46 calls it torch_dtype (the spec is built by CTranslate2 as it is)
        def load_model(self, model_class, path, **kw):
            kw["torch_dtype"] = kw.pop("dtype", None)
            return model_class.from_pretrained(path, **kw)

    from ctranslate2.converters import transformers as T

    register = T.BartLoader.set_vocabulary

    def padded(self, spec, tokens):   # a tokenizer smaller than the model: placeholders
        rows = spec.decoder.embeddings.weight.shape[0]
        register(self, spec, tokens + ["<placeholder_%d>" % i for i in range(rows - len(tokens))])

    T.BartLoader.set_vocabulary = padded
    try:
        Converter(d).convert(ct2, force=True)
    finally:
        T.BartLoader.set_vocabulary = register


def make_model(shape):
    """The random model (HF directory + tokenizer) and its CTranslate2 conversion."""
    d = cache_dir(shape)
    ct2 = d + "-ct2"
    if os.path.exists(os.path.join(ct2, "model.bin")):
        return d, ct2
    if shape == "flan-t5-small":
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_tiny_t5.py"), "--bench", d],
                       check=True)
        convert(d, ct2)
        return d, ct2
    import io

    import sentencepiece as spm
    import torch
    import transformers

    if shape in TOKENIZERS:
        return make_big(shape, d, ct2)
    cfg = dict(SHAPES[shape])
    cfg.pop("model_type")
    config = transformers.MarianConfig(**cfg)
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():   # HF's own init (std 0.02); eos never generated
        model.final_logits_bias[0, config.eos_token_id] = -1e4
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    blobs = []
    for _ in range(2):
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(SENTENCES * 8), model_writer=buf,
                                       vocab_size=200, model_type="unigram", hard_vocab_limit=False,
                                       minloglevel=2)
        blobs.append(buf.getvalue())
    vocab = {"</s>": 0, "<unk>": 1}
    sp = spm.SentencePieceProcessor(model_proto=blobs[0])
    for i in range(sp.get_piece_size()):
        p = sp.id_to_piece(i)
        if p not in vocab and p not in ("<s>", "<unk>", "</s>"):
            vocab[p] = len(vocab)
    while len(vocab) < config.vocab_size - 1:
        vocab["\u2581w%05d" % len(vocab)] = len(vocab)
    vocab["<pad>"] = config.vocab_size - 1
    for name, blob in (("source.spm", blobs[0]), ("target.spm", blobs[1])):
        with open(os.path.join(d, name), "wb") as f:
            f.write(blob)
    with open(os.path.join(d, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    convert(d, ct2)
    return d, ct2


def make_big(shape, d, ct2):
    """NLLB / BART-large shapes: HF's own init (std 0.02), the test tokenizer beside."""
    import shutil

    import torch
    import transformers
    import transformers.models.m2m_100.modeling_m2m_100 as m2m

    m2m.is_fsdp_managed_module = lambda module: False   # this torch lacks torch.distributed
    cfg = dict(SHAPES[shape])
    kind = cfg.pop("model_type")
    config = (transformers.M2M100Config if kind == "m2m_100" else transformers.BartConfig)(**cfg)
    torch.manual_seed(0)
    cls = transformers.M2M100ForConditionalGeneration if kind == "m2m_100" else \
        transformers.BartForConditionalGeneration
    model = cls(config).eval()
    if kind == "bart":
        with torch.no_grad():
            model.final_logits_bias[0, config.eos_token_id] = -1e4
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    del model
    src = os.path.join(ROOT, TOKENIZERS[shape][0])
    for f in os.listdir(src):
        if not f.endswith((".safetensors", "config.json")) or f == "tokenizer_config.json":
            shutil.copy(os.path.join(src, f), d)
    convert(d, ct2)
    return d, ct2


def inputs(model_dir, n, shape):
    """n texts and their tokenizer's pieces (CTranslate2's input)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, use_fast=False)
    texts = [SENTENCES[i % len(SENTENCES)] + (" " + SENTENCES[(i * 3 + 1) % len(SENTENCES)] if i % 2 else "")
             for i in range(n)]
    if shape == "flan-t5-small":
        texts = [T5_PREFIX + t for t in texts]
    pieces = [tok.convert_ids_to_tokens(tok(t).input_ids) for t in texts]
    return texts, pieces


# ------------------------------------------------------------------------ workers
def worker_ct2(a, texts, pieces):
    import ctranslate2

    ct = {"f32": "float32", "int8": "int8"}[a.compute]
    tr = ctranslate2.Translator(a.ct2, device="cpu", compute_type=ct, inter_threads=1,
                                intra_threads=a.threads)
    src = pieces[:a.batch]
    langs = TOKENIZERS.get(a.shape, (None, None))[1]
    prefix = [[langs[1]]] * len(src) if langs else None
    min_len = a.max_new if a.shape.startswith("nllb") else 0

    def run():
        r = tr.translate_batch(src, target_prefix=prefix, beam_size=a.beam, max_decoding_length=a.max_new,
                               min_decoding_length=min_len, max_batch_size=0, return_scores=False)
        return [x.hypotheses[0] for x in r]

    return run


def worker_encdec(a, texts, pieces):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("ENCDEC_LIBRARY", a.lib)
    import ctypes

    from encdec import _native as N

    mp = N.lib.encdec_model_default_params()
    mp.compute = {"f32": 0, "int8": 2}[a.compute]
    mp.no_weight_check = 1   # the -1e4 </s> bias is "absurd" on purpose
    mp.no_logit_screen = int(a.no_logit_screen)
    m, s = ctypes.c_void_p(), ctypes.c_void_p()
    N.check(N.lib.encdec_model_load_ex(os.fsencode(a.model), ctypes.byref(mp), ctypes.byref(m)))
    sp = N.SessionParams()
    sp.n_threads = a.threads
    N.check(N.lib.encdec_session_new(m, ctypes.byref(sp), ctypes.byref(s)))
    arr = (ctypes.c_char_p * a.batch)(*[t.encode() for t in texts[:a.batch]])
    gp = N.lib.encdec_generate_default_params()
    gp.max_new_tokens = a.max_new
    gp.num_beams = a.beam
    langs = TOKENIZERS.get(a.shape, (None, None))[1]
    if langs:
        gp.src_lang, gp.tgt_lang = langs[0].encode(), langs[1].encode()
    if a.shape.startswith("nllb"):
        gp.min_new_tokens = a.max_new   # </s> never: as CTranslate2's min_decoding_length

    def run():
        r = ctypes.c_void_p()
        N.check(N.lib.encdec_generate(s, arr, a.batch, ctypes.byref(gp), ctypes.byref(r)))
        out = []
        for i in range(N.lib.encdec_result_n_sequences(r)):
            q = N.lib.encdec_result_sequence(r, i).contents
            out.append([q.tokens[k].id for k in range(q.n_tokens)])
        N.lib.encdec_result_free(r)
        return out

    return run


def peak_rss_mb():
    """This process's peak RSS since its exec (VmHWM: getrusage's ru_maxrss would keep
    the forking parent's, torch and transformers included)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(a):
    with open(a.inputs, encoding="utf-8") as f:   # (made by the parent: no transformers here)
        texts, pieces = json.load(f)
    run = (worker_ct2 if a.engine == "ct2" else worker_encdec)(a, texts, pieces)
    out = run()   # warm-up (and the tokens)
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    n_tok = sum(len(o) for o in out)
    med = statistics.median(times)
    first = out[0]
    if a.engine == "ct2":   # pieces -> ids through the CTranslate2 vocabulary (in id order)
        for name in ("shared_vocabulary.json", "target_vocabulary.json"):
            path = os.path.join(a.ct2, name)
            if os.path.exists(path):
                ids = {p: i for i, p in enumerate(json.load(open(path, encoding="utf-8")))}
                first = [ids.get(p, -1) for p in first]
                break
    print(json.dumps({"tok_s": n_tok / med, "tokens": n_tok, "median_s": med, "rss_mb": peak_rss_mb(),
                      "first": first}))


def one(a, engine, compute, batch, beam):
    cmd = [sys.executable, __file__, "--worker", "--engine", engine, "--compute", compute,
           "--batch", str(batch), "--beam", str(beam), "--model", a.model, "--ct2", a.ct2,
           "--threads", str(a.threads), "--max-new", str(a.max_new), "--repeats", str(a.repeats),
           "--lib", a.lib, "--inputs", a.inputs, "--shape", a.shape] + \
        (["--no-logit-screen"] if a.no_logit_screen else [])
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="opus-mt-en-de", choices=sorted(SHAPES))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batches", default="1,16,64")
    p.add_argument("--beams", default="1,4")
    p.add_argument("--computes", default="f32,int8")
    p.add_argument("--max-new", type=int, default=24)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--lib", default=os.path.join(ROOT, "build", "libencdec.so.0"))
    p.add_argument("--json")
    p.add_argument("--no-logit-screen", action="store_true",
                   help="encdec without screened logits (f32 greedy steps read the f32 output matrix)")
    # worker mode
    p.add_argument("--worker", action="store_true")
    p.add_argument("--engine")
    p.add_argument("--compute")
    p.add_argument("--batch", type=int)
    p.add_argument("--beam", type=int)
    p.add_argument("--model")
    p.add_argument("--ct2")
    p.add_argument("--inputs")
    a = p.parse_args()
    if a.worker:
        worker(a)
        return
    a.model, a.ct2 = make_model(a.shape)
    a.inputs = a.model + "-inputs.json"
    with open(a.inputs, "w", encoding="utf-8") as f:
        json.dump(inputs(a.model, max(map(int, a.batches.split(","))), a.shape), f, ensure_ascii=False)
    rows = []
    r_e = one(a, "encdec", "f32", 1, 1)
    r_c = one(a, "ct2", "f32", 1, 1)
    same = 0
    while same < min(len(r_e["first"]), len(r_c["first"])) and r_e["first"][same] == r_c["first"][same]:
        same += 1
    print(f"greedy batch 1, f32: the first {same} of {len(r_e['first'])} tokens agree "
          f"(encdec {r_e['first'][:8]}..., CTranslate2 {r_c['first'][:8]}...)")
    print(f"{'compute':8} {'batch':>5} {'beams':>5} {'encdec tok/s':>13} {'ct2 tok/s':>10} {'ratio':>6} "
          f"{'encdec MB':>9} {'ct2 MB':>7}")
    for compute in a.computes.split(","):
        for batch in map(int, a.batches.split(",")):
            for beam in map(int, a.beams.split(",")):
                e = one(a, "encdec", compute, batch, beam)
                c = one(a, "ct2", compute, batch, beam)
                row = {"compute": compute, "batch": batch, "beams": beam, "encdec_tok_s": e["tok_s"],
                       "ct2_tok_s": c["tok_s"], "ratio": e["tok_s"] / c["tok_s"],
                       "encdec_rss_mb": e["rss_mb"], "ct2_rss_mb": c["rss_mb"]}
                rows.append(row)
                print(f"{compute:8} {batch:5d} {beam:5d} {e['tok_s']:13.1f} {c['tok_s']:10.1f} "
                      f"{row['ratio']:6.2f} {e['rss_mb']:9.0f} {c['rss_mb']:7.0f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"shape": a.shape, "threads": a.threads, "max_new": a.max_new,
                       "greedy_agree": same, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
