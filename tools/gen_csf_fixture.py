#!/usr/bin/env python3
"""Writes fixtures/mixed/qwen3/modelopt-mixed-csf/: the ModelOpt MIXED_PRECISION fixture
(modelopt-mixed: FP8 attention, W4A16 NVFP4 MLP and lm_head) with its MLP block scales stored
CSF-compressed, as the CSF checkpoints of Local Inference Lab store routed-expert scales and a
vLLM fork's loader decodes them (decode_nvfp4_csf_scale; codec
"byte-window4-fixed-stream-u24-exceptions/1"; the quantized_layers entries say
"weight_scale_encoding": "csf"):

  <module>.weight_scale.nvfp4_csf_fixed       uint8 [rows // 16, 16 * (1 + cols // 2)]: per slab of
      16 rows, the rows' base bytes (0..240), then each row's 4-bit codes, two per byte, low
      nibble first; a scale byte is base + code;
  <module>.weight_scale.nvfp4_csf_exceptions  uint32 [k]: sorted words, low 24 bits the flat
      position row * cols + col, high 8 bits the scale byte there.

The encoder follows b12x's (csf_encode.py): each row's base is the lowest one whose 16-byte window
[base, base + 15] covers the most of the row's bytes; bytes outside it are exceptions (their code
0). Only numpy. The tiny model's rows span fewer than 16 values, so two columns of every row are
written as exceptions over a wrong code (see main); the script checks its own decoder gives the
bytes back.

Run: python3 tools/gen_csf_fixture.py (numpy; no torch)
"""
import json
import pathlib
import shutil

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "fixtures" / "mixed" / "qwen3" / "modelopt-mixed"
OUT = ROOT / "fixtures" / "mixed" / "qwen3" / "modelopt-mixed-csf"
TYPES = {"F8_E4M3": np.uint8, "U8": np.uint8, "F32": np.float32, "BF16": np.uint16, "F16": np.float16, "U32": np.uint32}


def read(path):
    b = path.read_bytes()
    n = int.from_bytes(b[:8], "little")
    header = json.loads(b[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], b[8 + n + s:8 + n + e])
    return out, header.get("__metadata__")


def write(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]
        header[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def encode(s, forced=()):
    rows, cols = s.shape
    assert rows % 16 == 0 and cols % 2 == 0
    fixed = np.zeros((rows // 16, 16 * (1 + cols // 2)), np.uint8)
    words = []
    for r in range(rows):
        v = s[r].astype(np.int32)
        best, base = -1, 0
        for b in range(0, 241):
            c = int(np.count_nonzero((v >= b) & (v < b + 16)))
            if c > best:
                best, base = c, b
        code = np.where((v >= base) & (v < base + 16), v - base, 0).astype(np.uint8)
        out = (v < base) | (v >= base + 16)
        for c in forced:  # stored as exceptions although inside the window, over a wrong code
            if c < cols and not out[c]:
                out[c] = True
                code[c] = (code[c] + 5) & 15
        for c in np.nonzero(out)[0]:
            words.append((r * cols + int(c)) | (int(v[c]) << 24))
        slab = fixed[r // 16]
        slab[r % 16] = base
        row = slab[16 + (r % 16) * (cols // 2):16 + (r % 16 + 1) * (cols // 2)]
        row[:] = code[0::2] | (code[1::2] << 4)
    return fixed, np.array(sorted(words, key=lambda w: w & 0xFFFFFF), np.uint32)


def decode(fixed, words, rows, cols):
    bases = fixed[:, :16].reshape(rows, 1).astype(np.int32)
    packed = fixed[:, 16:].reshape(rows, cols // 2)
    codes = np.stack([packed & 15, packed >> 4], -1).reshape(rows, cols)
    out = (bases + codes).reshape(-1)
    out[words & 0xFFFFFF] = words >> 24
    return out.astype(np.uint8).reshape(rows, cols)


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for f in SRC.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, OUT / f.name)
    tensors, meta = read(SRC / "model.safetensors")
    hq = json.loads((SRC / "hf_quant_config.json").read_text())
    n_exc = 0
    for k in [k for k in tensors if ".mlp." in k and k.endswith(".weight_scale")]:
        dt, shape, raw = tensors.pop(k)
        s = np.frombuffer(raw, np.uint8).reshape(shape)
        # This tiny model's rows span fewer than 16 values, so none falls outside its window:
        # columns 1 and 3 of every row are stored as exceptions anyway (the format lets an
        # exception replace any byte), over a wrong code, so a decoder that skipped them fails.
        fixed, words = encode(s, forced=(1, 3))
        assert np.array_equal(decode(fixed, words, *shape), s), k
        n_exc += len(words)
        tensors[k + ".nvfp4_csf_fixed"] = ("U8", list(fixed.shape), fixed.tobytes())
        tensors[k + ".nvfp4_csf_exceptions"] = ("U32", [len(words)], words.astype("<u4").tobytes())
        hq["quantization"]["quantized_layers"][k[:-13]]["weight_scale_encoding"] = "csf"
    assert n_exc > 0, "no exceptions: the test would not exercise them"
    write(OUT / "model.safetensors", tensors, meta)
    (OUT / "hf_quant_config.json").write_text(json.dumps(hq, indent=4) + "\n")
    cfg = json.loads((OUT / "config.json").read_text())
    if "quantization_config" in cfg and "quantized_layers" in cfg["quantization_config"]:
        cfg["quantization_config"]["quantized_layers"] = hq["quantization"]["quantized_layers"]
        (OUT / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    print("CSF: 6 MLP scale matrices,", n_exc, "exceptions")


if __name__ == "__main__":
    main()
