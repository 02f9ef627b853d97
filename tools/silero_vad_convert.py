"""Silero VAD v6's ONNX graph (faster-whisper's assets/silero_vad_v6.onnx)
-> a directory encdec loads: model.safetensors (f32) and config.json.

    python3 tools/silero_vad_convert.py silero_vad_v6.onnx DEST_DIR

scripts/fetch-model.sh vad runs it (with the `onnx` package installed into
a temporary folder). The graph's layers, as encdec's src/models/vad.c
computes them: each 32 ms frame (512 samples at 16 kHz, after the 64 last
samples of the one before) reflect-padded by 128 samples; a 256-point
transform at hop 128 (the basis, a Conv1d weight) whose last 4 of 5
windows' magnitudes go through four Conv1d + ReLU layers (129 -> 128 -> 64
-> 64 -> 128 channels, strides 1, 2, 2, 1); an LSTM of 128 (ONNX gate
order i, o, f, c; its state carried from frame to frame); ReLU, a 1x1
Conv1d to one channel, sigmoid. The graph itself is checked against that
layout (operators, shapes, attributes) before anything is written: another
version of the model is refused, not converted wrong.
"""
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

EXPECT = {   # initializer -> (name in the safetensors file, shape)
    "encoder.feature_extractor.forward_basis_buffer": ("stft.basis", (258, 1, 256)),
    "encoder.conv_layers.0.weight": ("conv.0.weight", (128, 129, 3)),
    "encoder.conv_layers.0.bias": ("conv.0.bias", (128,)),
    "encoder.conv_layers.1.weight": ("conv.1.weight", (64, 128, 3)),
    "encoder.conv_layers.1.bias": ("conv.1.bias", (64,)),
    "encoder.conv_layers.2.weight": ("conv.2.weight", (64, 64, 3)),
    "encoder.conv_layers.2.bias": ("conv.2.bias", (64,)),
    "encoder.conv_layers.3.weight": ("conv.3.weight", (128, 64, 3)),
    "encoder.conv_layers.3.bias": ("conv.3.bias", (128,)),
    "decoder.conv1d.weight": ("out.weight", (1, 128, 1)),
    "decoder.conv1d.bias": ("out.bias", (1,)),
}


def fail(msg):
    sys.exit("silero_vad_convert: " + msg)


def check_graph(g):
    ops = [n.op_type for n in g.node]
    want = ["Pad", "Unsqueeze", "Conv", "Slice", "Slice", "Pow", "Pow", "Add", "Sqrt",
            "Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Transpose",
            "LSTM", "Squeeze", "Relu", "Transpose", "Conv", "Sigmoid", "Reshape"]
    if ops != want:
        fail("not the Silero VAD v6 graph encdec knows (operators %s)" % ops)
    ins = {i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim] for i in g.input}
    if ins.get("input", [None, None])[1] != 576 or ins.get("h") != [1, 1, 128]:
        fail("inputs %s: expected input [n, 576], h and c [1, 1, 128]" % ins)
    convs = [n for n in g.node if n.op_type == "Conv"]
    for n, (k, s, p) in zip(convs, [(256, 128, 0), (3, 1, 1), (3, 2, 1), (3, 2, 1), (3, 1, 1), (1, 1, 0)]):
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        if list(a["kernel_shape"]) != [k] or list(a["strides"]) != [s] or list(a["pads"]) != [p, p]:
            fail("a Conv is not the layer encdec computes: %s" % a)
    pad = [n for n in g.node if n.op_type == "Pad"][0]
    if onnx.helper.get_attribute_value(pad.attribute[0]) != b"reflect":
        fail("the input padding is not 'reflect'")
    lstm = [n for n in g.node if n.op_type == "LSTM"][0]
    a = {x.name: onnx.helper.get_attribute_value(x) for x in lstm.attribute}
    if a != {"hidden_size": 128}:
        fail("the LSTM is not a plain 128-unit one: %s" % a)
    return lstm


def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    m = onnx.load(sys.argv[1])
    g = m.graph
    lstm = check_graph(g)
    init = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    out = {}
    for src, (dst, shape) in EXPECT.items():
        if src not in init or tuple(init[src].shape) != shape:
            fail("%s: missing or not %s" % (src, shape))
        out[dst] = init[src].astype(np.float32)
    w, r, b = (init[n] for n in lstm.input[1:4])
    if w.shape != (1, 512, 128) or r.shape != (1, 512, 128) or b.shape != (1, 1024):
        fail("LSTM weights %s %s %s: expected [1, 512, 128] x 2 and [1, 1024]" % (w.shape, r.shape, b.shape))
    out["lstm.weight_ih"] = w[0].astype(np.float32)   # [4H, 128], gates i, o, f, c
    out["lstm.weight_hh"] = r[0].astype(np.float32)
    out["lstm.bias"] = (b[0, :512] + b[0, 512:]).astype(np.float32)   # Wb + Rb
    os.makedirs(sys.argv[2], exist_ok=True)
    write_safetensors(os.path.join(sys.argv[2], "model.safetensors"), out)
    with open(os.path.join(sys.argv[2], "config.json"), "w") as f:
        json.dump({"model_type": "silero_vad", "version": 6, "sampling_rate": 16000,
                   "frame_samples": 512, "context_samples": 64, "hidden_size": 128,
                   "source": os.path.basename(sys.argv[1])}, f, indent=1)
    print("silero_vad_convert: wrote %s (%d tensors)" % (sys.argv[2], len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
