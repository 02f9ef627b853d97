#!/usr/bin/env python3
"""tests/data/tiny-random-ggml/: a small random Whisper as whisper.cpp's own
tools write it (f32, f16, q8_0, q5_0, q5_1, q4_0, q4_1), and Hugging Face
transformers' outputs for it (the golden the C loader is checked against).

Usage (from the repository root; .venv from scripts/venv.sh, and a
whisper.cpp source tree with its quantize tool built, e.g.
`cmake -S whisper.cpp -B whisper.cpp/build && cmake --build whisper.cpp/build --target quantize`):

    .venv/bin/python tools/gen_ggml_fixture.py WHISPER_CPP_DIR [QUANTIZE_BINARY]

What it does:
  1. a Hugging Face Whisper checkpoint in a temporary folder: d_model 32, 2 heads, ffn 64,
     2 + 2 layers, 80 mel bands, 1500 / 448 positions, and the STANDARD English-only
     special-token layout (the one whisper.cpp and encdec derive from the vocabulary size):
     400 byte-level BPE tokens (tools/gen_tiny_whisper.py's corpus), <|endoftext|> 400,
     <|startoftranscript|> 401, 99 language tokens 402..500, <|translate|> 501,
     <|transcribe|> 502, <|startoflm|> 503, <|startofprev|> 504, <|nospeech|> 505,
     <|notimestamps|> 506, 1501 timestamps 507..2007: vocab_size 2008. Seeded weights
     (whisper_oracle.random_weights), rounded to f16 so that the f16 file is exact.
  2. whisper.cpp's models/convert-h5-to-ggml.py on it (run from WHISPER_CPP_DIR, not
     copied): ggml-f16.bin, and with its use-f32 argument ggml-f32.bin; then whisper.cpp's
     quantize on ggml-f16.bin: ggml-q8_0.bin, ggml-q5_0.bin, ggml-q5_1.bin, ggml-q4_0.bin,
     ggml-q4_1.bin.
  3. golden.safetensors: transformers in float64 on ../shared/audio/jfk.wav's log-mel
     (whisper_oracle.log_mel): encoder rows and cross K/V (encoder_goldens), the prompt
     [<|startoftranscript|>, <|notimestamps|>], 8 greedy steps without suppression
     (tokens), every step's full logits row [8, 2008] and its raw argmax; and for each
     quantized file, the same encoder rows and teacher-forced logits of the model holding
     that file's weights as ggml's own Python package (gguf.quants) decodes them, rounded
     to f16 as encdec holds them (<type>.encoder_out, <type>.logits).

The C test (tests/test_ggml.c) loads each file with encdec's loader and compares with
these values: f32 and f16 within float noise, the quantized files within their
quantisation's error.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402
from gen_tiny_whisper import CORPUS  # noqa: E402

SEED = 11
OUT_DIR = os.path.join("tests", "data", "tiny-random-ggml")
N_REGULAR = 400
LANGS = ("en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu "
         "ta no th ur hr bg lt la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn "
         "bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am yi lo uz fo ht ps tk nn "
         "mt sa lb my bo tl mg as tt haw ln ha ba jw su").split()
assert len(LANGS) == 99
SPECIALS = (["<|endoftext|>", "<|startoftranscript|>"] + ["<|%s|>" % c for c in LANGS] +
            ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
             "<|nospeech|>", "<|notimestamps|>"])
TIMESTAMPS = ["<|%.2f|>" % (0.02 * i) for i in range(1501)]
VOCAB = N_REGULAR + len(SPECIALS) + len(TIMESTAMPS)
EOT, SOT = N_REGULAR, N_REGULAR + 1
NOTIMESTAMPS = N_REGULAR + len(SPECIALS) - 1
MAX_NEW = 8
TYPES = ["q8_0", "q5_0", "q5_1", "q4_0", "q4_1"]

# openai-whisper's tensor names (as convert-h5-to-ggml.py writes them) -> Hugging Face's
WHOLE = {
    "encoder.positional_embedding": "model.encoder.embed_positions.weight",
    "decoder.positional_embedding": "model.decoder.embed_positions.weight",
    "decoder.token_embedding.weight": "model.decoder.embed_tokens.weight",
    "encoder.ln_post.weight": "model.encoder.layer_norm.weight",
    "encoder.ln_post.bias": "model.encoder.layer_norm.bias",
    "decoder.ln.weight": "model.decoder.layer_norm.weight",
    "decoder.ln.bias": "model.decoder.layer_norm.bias",
}
PART = {
    "attn_ln": "self_attn_layer_norm", "attn.query": "self_attn.q_proj", "attn.key": "self_attn.k_proj",
    "attn.value": "self_attn.v_proj", "attn.out": "self_attn.out_proj",
    "cross_attn_ln": "encoder_attn_layer_norm", "cross_attn.query": "encoder_attn.q_proj",
    "cross_attn.key": "encoder_attn.k_proj", "cross_attn.value": "encoder_attn.v_proj",
    "cross_attn.out": "encoder_attn.out_proj", "mlp_ln": "final_layer_norm", "mlp.0": "fc1",
    "mlp.2": "fc2",
}


def hf_name(name):
    if name in WHOLE:
        return WHOLE[name]
    if name.startswith("encoder.conv"):
        return "model." + name
    side, _, layer, rest = name.split(".", 3)
    part, kind = rest.rsplit(".", 1)
    return "model.%s.layers.%s.%s.%s" % (side, layer, PART[part], kind)


def read_ggml(path):
    """The tensors of a ggml Whisper file as {HF name: float32 array}: quantized blocks
    decoded by ggml's own Python package (gguf.quants), not by encdec's code."""
    import struct
    from gguf import quants, GGMLQuantizationType as Q

    data = open(path, "rb").read()
    pos = 4 + 11 * 4
    n_mel, n_fft = struct.unpack_from("<ii", data, pos)
    pos += 8 + 4 * n_mel * n_fft
    (n_tok,) = struct.unpack_from("<i", data, pos)
    pos += 4
    for _ in range(n_tok):
        (n,) = struct.unpack_from("<i", data, pos)
        pos += 4 + n
    out = {}
    while pos < len(data):
        n_dims, name_len, ttype = struct.unpack_from("<iii", data, pos)
        pos += 12
        ne = struct.unpack_from("<%di" % n_dims, data, pos)
        pos += 4 * n_dims
        name = data[pos:pos + name_len].decode()
        pos += name_len
        shape = tuple(reversed(ne))
        count = int(np.prod(ne))
        if ttype in (0, 1):
            dt = np.float32 if ttype == 0 else np.float16
            a = np.frombuffer(data, dt, count, pos).astype(np.float32)
            pos += count * np.dtype(dt).itemsize
        else:
            qt = Q(ttype)
            block, size = {Q.Q4_0: (32, 18), Q.Q4_1: (32, 20), Q.Q5_0: (32, 22), Q.Q5_1: (32, 24),
                           Q.Q8_0: (32, 34)}[qt]
            nbytes = count // block * size
            raw = np.frombuffer(data, np.uint8, nbytes, pos).reshape(-1, ne[0] // block * size)
            a = quants.dequantize(raw, qt).astype(np.float32)
            pos += nbytes
        a = a.reshape(shape)
        if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
            a = a.reshape(-1)
        out[hf_name(name)] = a
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    wcpp = os.path.abspath(sys.argv[1])
    quantize = sys.argv[2] if len(sys.argv) > 2 else os.path.join(wcpp, "build", "bin", "quantize")
    assert VOCAB == 2008 and NOTIMESTAMPS == 506
    tok_text, tok = oracle.build_bpe_tokenizer(CORPUS, N_REGULAR, SPECIALS + TIMESTAMPS, compact=False)
    cfg = oracle.tiny_config("encdec/tiny-random-ggml", 80, VOCAB, "float16", SOT, EOT, SOT, [],
                             [220, EOT], d_model=32, encoder_attention_heads=2,
                             decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64)
    model = oracle.new_model(cfg, SEED)
    weights = oracle.random_weights(model, SEED, torch.float16)

    tmp = tempfile.mkdtemp()
    try:
        hf = os.path.join(tmp, "hf")
        os.makedirs(hf)
        oracle.write_json(os.path.join(hf, "config.json"), cfg, indent=1)
        save_file(weights, os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
        # convert-h5-to-ggml.py reads vocab.json (regular tokens and <|endoftext|>, as
        # Hugging Face writes it) and added_tokens.json
        vocab = {k: v for k, v in tok.get_vocab().items() if v <= EOT}
        added = {k: v for k, v in tok.get_vocab().items() if v > EOT}
        oracle.write_json(os.path.join(hf, "vocab.json"), vocab)
        oracle.write_json(os.path.join(hf, "added_tokens.json"), added)
        # its mel filters come from an openai-whisper checkout: the installed package's
        import whisper
        wdir = os.path.join(tmp, "openai-whisper")
        os.makedirs(os.path.join(wdir, "whisper"))
        shutil.copytree(os.path.join(os.path.dirname(whisper.__file__), "assets"),
                        os.path.join(wdir, "whisper", "assets"))
        conv = os.path.join(wcpp, "models", "convert-h5-to-ggml.py")
        os.makedirs(OUT_DIR, exist_ok=True)
        for f32 in (False, True):
            out = os.path.join(tmp, "f32" if f32 else "f16")
            os.makedirs(out)
            subprocess.run([sys.executable, conv, hf, wdir, out] + (["use-f32"] if f32 else []),
                           check=True, stdout=subprocess.DEVNULL)
            src = os.path.join(out, "ggml-model-f32.bin" if f32 else "ggml-model.bin")
            shutil.copy(src, os.path.join(OUT_DIR, "ggml-f32.bin" if f32 else "ggml-f16.bin"))
        for t in TYPES:
            subprocess.run([quantize, os.path.join(OUT_DIR, "ggml-f16.bin"),
                            os.path.join(OUT_DIR, "ggml-%s.bin" % t), t], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(tmp)

    # the golden: transformers, float64, from the same f16 weights
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    m64 = oracle.model_from_weights(
        WhisperForConditionalGeneration(WhisperConfig(**{k: v for k, v in cfg.items()
                                                         if not k.startswith("_")})),
        weights, torch.float64, torch.float16)
    audio = oracle.read_wav(oracle.JFK_WAV)
    mel = oracle.log_mel(oracle.feature_extractor_from(oracle.TINY_EN_PREPROC), audio)
    enc = oracle.encode(m64, mel)
    res = oracle.greedy(m64, enc, [SOT, NOTIMESTAMPS], [], [], EOT, MAX_NEW)
    t = oracle.encoder_goldens(mel, enc[0], oracle.cross_kv(m64, enc))
    # each quantized file: its weights decoded by gguf, held as f16 as encdec holds them,
    # then the same encoder rows and teacher-forced logits
    enc_idx = t["enc_row_idx"]
    for q in TYPES:
        sd = read_ggml(os.path.join(OUT_DIR, "ggml-%s.bin" % q))
        sd = {k: torch.from_numpy(v.astype(np.float16)) for k, v in sd.items()}
        mq = oracle.model_from_weights(
            WhisperForConditionalGeneration(WhisperConfig(**{k: v for k, v in cfg.items()
                                                             if not k.startswith("_")})),
            sd, torch.float64, torch.float16)
        eq = oracle.encode(mq, mel)
        seq = list(res["prompt"])
        rows = []
        with torch.no_grad():
            for tk in res["tokens"]:
                o = mq(encoder_outputs=(eq,), decoder_input_ids=torch.tensor([seq]), use_cache=False)
                rows.append(o.logits[0, -1].float().numpy())
                seq.append(tk)
        t["%s.encoder_out" % q] = eq[0][enc_idx].float().numpy()
        t["%s.logits" % q] = np.stack(rows)
    t.update({
        "prompt": np.array(res["prompt"], dtype=np.int32),
        "tokens": np.array(res["tokens"], dtype=np.int32),
        "logits": res["logits"].float().numpy(),
        "raw_argmax": np.array(res["raw_argmax"], dtype=np.int32),
    })
    meta = {"model": "tools/gen_ggml_fixture.py seed %d, vocab %d" % (SEED, VOCAB),
            "reference": "transformers float64 on jfk.wav (whisper_oracle.log_mel)",
            "files": ["ggml-f32.bin", "ggml-f16.bin"] + ["ggml-%s.bin" % x for x in TYPES]}
    oracle.save_golden(t, os.path.join(OUT_DIR, "golden.safetensors"), meta)
    print("tokens", res["tokens"])
    for f in sorted(os.listdir(OUT_DIR)):
        print("%-20s %8d bytes" % (f, os.path.getsize(os.path.join(OUT_DIR, f))))


if __name__ == "__main__":
    main()
