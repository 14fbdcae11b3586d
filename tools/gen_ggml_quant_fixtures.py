#!/usr/bin/env python3
"""Writes fixtures/ggml/<TYPE>.blocks and <TYPE>.f32: random blocks of ggml's Q4_0, Q4_1, Q8_0,
Q4_K and Q6_K formats (half scales kept finite) and PyPI gguf's dequantization of them (float32,
little-endian). Also fixtures/ggml/smollm2_rows.json: for a few rows of the bundled SmolLM2 GGUF
(Q4_1 and Q8_0 tensors), the sum and the first values of gguf's dequantization.

Run: python tools/gen_ggml_quant_fixtures.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
(needs: pip install gguf numpy)
"""
import json
import pathlib
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "ggml"
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(2024)

# Offsets of the f16 scales inside each block, so that they can be set to finite values.
half_fields = {T.Q4_0: [0], T.Q4_1: [0, 2], T.Q8_0: [0], T.Q4_K: [0, 2], T.Q6_K: [208]}
for t, offs in half_fields.items():
    bsz, tsz = gguf.GGML_QUANT_SIZES[t]
    nblocks = 64
    raw = rng.integers(0, 256, size=(nblocks, tsz), dtype=np.uint8)
    for o in offs:
        h = (rng.standard_normal(nblocks) * 0.01).astype(np.float16)
        raw[:, o:o + 2] = h.view(np.uint8).reshape(nblocks, 2)
    deq = gguf.quants.dequantize(raw.reshape(1, -1), t).astype(np.float32).reshape(-1)
    assert deq.size == nblocks * bsz and np.isfinite(deq).all()
    raw.tofile(out / f"{t.name}.blocks")
    deq.astype("<f4").tofile(out / f"{t.name}.f32")
    print(t.name, nblocks, "blocks")

if len(sys.argv) > 1:
    r = gguf.GGUFReader(sys.argv[1])
    rows = {}
    for t in r.tensors:
        if t.name in ("blk.0.ffn_down.weight", "blk.7.attn_q.weight", "token_embd.weight"):
            deq = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            sel = [0, 1, deq.shape[0] - 1]
            rows[t.name] = {str(i): {"first": deq[i, :8].tolist(), "sum": float(deq[i].astype(np.float64).sum())}
                            for i in sel}
    (out / "smollm2_rows.json").write_text(json.dumps(rows, indent=1))
    print("wrote smollm2_rows.json")
