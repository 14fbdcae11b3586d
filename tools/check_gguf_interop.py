#!/usr/bin/env python3
"""Reads a GGUF written by `nvfp4 convert` with PyPI `gguf` (an independent reader) and checks it
against the source it was converted from:

- every metadata key of the source is present with the same value (general.file_type = 39 apart);
- the tensors are the source's (plus `<base>.scale` companions), with the same shapes;
- each NVFP4 tensor, dequantized by gguf's own NVFP4 decoder and multiplied by its `.scale`,
  is within NVFP4's error of the source tensor dequantized by gguf (relative RMS < 0.2, and
  bit-equal to the source where the source was already NVFP4);
- copied tensors are byte-identical.

Run: python tools/check_gguf_interop.py SOURCE.gguf CONVERTED.gguf
"""
import sys

import numpy as np
import gguf

T = gguf.GGMLQuantizationType


def fields(r):
    out = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        out[k] = f.contents()
    return out


def main(src_path, out_path):
    src, out = gguf.GGUFReader(src_path), gguf.GGUFReader(out_path)
    fs, fo = fields(src), fields(out)
    assert fo["general.file_type"] == 39, fo.get("general.file_type")
    for k, v in fs.items():
        if k == "general.file_type":
            continue
        assert k in fo, f"metadata {k} lost"
        assert fo[k] == v, f"metadata {k} differs"
    st = {t.name: t for t in src.tensors}
    ot = {t.name: t for t in out.tensors}
    n_nv = n_copy = 0
    worst = 0.0
    for name, t in ot.items():
        if name.endswith(".scale") or name.endswith(".input_scale"):
            continue
        s = st[name]
        assert list(s.shape) == list(t.shape), name
        if t.tensor_type == T.NVFP4:
            base = name[:-7] if name.endswith(".weight") else name
            scale = float(np.asarray(ot[base + ".scale"].data).reshape(-1)[0])
            got = gguf.quants.dequantize(np.asarray(t.data), T.NVFP4).astype(np.float64) * scale
            want = gguf.quants.dequantize(np.asarray(s.data), s.tensor_type).astype(np.float64)
            if s.tensor_type == T.NVFP4:
                assert np.asarray(s.data).tobytes() == np.asarray(t.data).tobytes(), name
            rel = float(np.sqrt(np.mean((got - want) ** 2) / max(np.mean(want ** 2), 1e-30)))
            worst = max(worst, rel)
            assert rel < 0.2, (name, rel)
            n_nv += 1
        elif t.tensor_type == s.tensor_type:
            assert np.asarray(s.data).tobytes() == np.asarray(t.data).tobytes(), name
            n_copy += 1
        else:
            got = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
            want = gguf.quants.dequantize(np.asarray(s.data), s.tensor_type).astype(np.float32)
            assert np.allclose(got, want, rtol=1e-2, atol=1e-3), name
            n_copy += 1
    print(f"ok: {len(fs)} metadata keys carried over; {n_nv} NVFP4 tensors read by gguf "
          f"(worst relative RMS error vs source {worst:.4f}); {n_copy} other tensors equal")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
