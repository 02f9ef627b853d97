#!/usr/bin/env python3
"""tests/fuzz/corpus/ggml/small.bin: the seed of tests/fuzz/fuzz_ggml.c, a
ggml Whisper file small enough for the fuzzer (about 2 KB) that still
reaches every stage of encdec's loader: the 11 hyper-parameters (vocabulary
2008 = 400 listed tokens + Whisper's English-only specials and timestamps,
width 2, one layer each, 80 mel bands), a 1 x 1 filter bank, the 400 tokens of
tiny-random-ggml's tokenizer (read from tests/data/tiny-random-ggml/ggml-f16.bin)
and one tensor (encoder.blocks.0.mlp.0.weight, f32 [8, 2]); the Whisper loader
then fails on the missing weights, with a message.

    python3 tools/ggml_fuzz_seed.py
"""
import struct

SRC = "tests/data/tiny-random-ggml/ggml-f16.bin"
OUT = "tests/fuzz/corpus/ggml/small.bin"


def main():
    data = open(SRC, "rb").read()
    pos = 4 + 11 * 4
    n_mel, n_fft = struct.unpack_from("<ii", data, pos)
    pos += 8 + 4 * n_mel * n_fft
    (n_tok,) = struct.unpack_from("<i", data, pos)
    vstart = pos
    pos += 4
    for _ in range(n_tok):
        (n,) = struct.unpack_from("<i", data, pos)
        pos += 4 + n
    vocab = data[vstart:pos]
    out = struct.pack("<I", 0x67676d6c)
    out += struct.pack("<11i", 2008, 1500, 2, 1, 1, 448, 2, 1, 1, 80, 0)
    out += struct.pack("<ii", 1, 1) + struct.pack("<f", 0.5)
    out += vocab
    name = b"encoder.blocks.0.mlp.0.weight"
    out += struct.pack("<iii", 2, len(name), 0) + struct.pack("<ii", 2, 8) + name
    out += struct.pack("<16f", *[0.01 * i for i in range(16)])
    import os
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    open(OUT, "wb").write(out)
    print(OUT, len(out), "bytes")


if __name__ == "__main__":
    main()
