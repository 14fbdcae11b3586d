#!/usr/bin/env python3
"""Writes fixtures/ggml/q8_0_quant.f32 and q8_0_quant.blocks: float32 rows of 576 values and the
PyPI gguf package's Q8_0 quantization of them (gguf.quants.quantize(rows, Q8_0): ggml's
quantize_row_q8_0_ref numbers). Rows: real rows of the bundled SmolLM2 GGUF (blk.0.ffn_up and
blk.7.attn_q dequantized from Q4_1, the first rounded to float16 as an F16 head would hold them;
token_embd dequantized from Q8_0 and scaled by 1.001 so that they do not round-trip trivially),
then synthetic rows: exact halves (d = 1: round half away from zero), a zero block, tiny values.

Run: python tools/gen_q8_0_quant_fixture.py path/to/SmolLM2-135M-Instruct.Q4_1.gguf
(needs: pip install gguf numpy)
"""
import pathlib
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "ggml"
r = gguf.GGUFReader(sys.argv[1])
deq = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32) for t in r.tensors
       if t.name in ("blk.0.ffn_up.weight", "blk.7.attn_q.weight", "token_embd.weight")}
rows = [deq["blk.0.ffn_up.weight"][:16].astype(np.float16).astype(np.float32),
        deq["blk.7.attn_q.weight"][100:116],
        deq["token_embd.weight"][[0, 1, 2, 500, 1000, 20000, 49151, 300]] * np.float32(1.001)]
n = 576
halves = np.zeros(n, np.float32)
halves[0::32] = 127.0
halves[1::32] = 0.5
halves[2::32] = -0.5
halves[3::32] = 1.5
halves[4::32] = -2.5
halves[5::32] = 126.5
halves[6::32] = -126.5
halves[7::32] = -127.0
zero = np.random.default_rng(7).standard_normal(n).astype(np.float32)
zero[32:64] = 0.0
zero[64:96] *= np.float32(1e-6)
rows += [halves[None, :], zero[None, :]]
x = np.concatenate(rows).astype(np.float32)
assert x.shape[1] == n
q = gguf.quants.quantize(x, T.Q8_0)
assert q.dtype == np.uint8 and q.shape == (x.shape[0], n // 32 * 34)
x.astype("<f4").tofile(out / "q8_0_quant.f32")
q.tofile(out / "q8_0_quant.blocks")
print(x.shape[0], "rows of", n)
