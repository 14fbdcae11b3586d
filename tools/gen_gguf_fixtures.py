#!/usr/bin/env python3
"""Writes fixtures/gguf/*.gguf with PyPI `gguf` (an independent GGUF writer) for the reader tests.

small.gguf: every metadata value type (u8..f64, bool, string, arrays of ints, strings and nested
arrays), general.alignment = 64, and tensors of types F32 [3x4], F16 [2x8], Q8_0 [2x32] and
NVFP4 [2x64] with known contents. expected.json lists what the reader must report.

Run: /path/to/python tools/gen_gguf_fixtures.py   (needs: pip install gguf numpy)
"""
import json
import pathlib

import numpy as np
import gguf

out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "gguf"
out.mkdir(parents=True, exist_ok=True)

w = gguf.GGUFWriter(str(out / "small.gguf"), arch="llama")
w.data_alignment = 64
w.add_uint32("general.alignment", 64)
w.add_uint8("test.u8", 200)
w.add_int8("test.i8", -100)
w.add_uint16("test.u16", 60000)
w.add_int16("test.i16", -30000)
w.add_uint32("test.u32", 4000000000)
w.add_int32("test.i32", -2000000000)
w.add_float32("test.f32", 0.15625)
w.add_bool("test.bool", True)
w.add_string("test.string", "héllo wörld ✓")
w.add_uint64("test.u64", 2**63 + 5)
w.add_int64("test.i64", -(2**62))
w.add_float64("test.f64", 1.0 / 3.0)
w.add_array("test.arr_i32", [1, -2, 3])
w.add_array("test.arr_str", ["a", "bc", ""])
w.add_array("test.arr_nested", [[1, 2], [3]])

f32 = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
w.add_tensor("t.f32", f32)
f16 = (np.arange(16, dtype=np.float32).reshape(2, 8) - 8).astype(np.float16)
w.add_tensor("t.f16", f16)
rng = np.random.default_rng(5)
x = rng.standard_normal((2, 32)).astype(np.float32)
q8 = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("t.q8_0", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
# gguf cannot quantize NVFP4 (it dequantizes it): random blocks, scale bytes finite and unsigned.
nvq = rng.integers(0, 256, size=(2, 36), dtype=np.uint8)
nvq[:, :4] = rng.integers(0x20, 0x50, size=(2, 4), dtype=np.uint8)
w.add_tensor("t.nvfp4", nvq, raw_dtype=gguf.GGMLQuantizationType.NVFP4)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

expected = {
    "q8_0_dequant": gguf.quants.dequantize(q8, gguf.GGMLQuantizationType.Q8_0).flatten().tolist(),
    "nvfp4_dequant": gguf.quants.dequantize(nvq, gguf.GGMLQuantizationType.NVFP4).flatten().tolist(),
}
(out / "small.expected.json").write_text(json.dumps(expected))
print("wrote", out / "small.gguf")


# ---- NVFP4 checkpoints in llama.cpp's form, good and broken (SPEC.md sections 3 and 6) ----------
def nvfp4_file(fname, *, file_type=39, scale=0.0125, scale_dtype=np.float32, input_scale=None,
               scale_byte=None, with_nvfp4=True):
    w = gguf.GGUFWriter(str(out / fname), arch="llama")
    w.add_uint32("general.file_type", file_type)
    r = np.random.default_rng(9)
    blocks = r.integers(0, 256, size=(3, 2 * 36), dtype=np.uint8)  # 3 rows x 128 values
    for b in range(2):
        blocks[:, 36 * b:36 * b + 4] = r.integers(0x28, 0x48, size=(3, 4), dtype=np.uint8)
    if scale_byte is not None:
        blocks[1, 36 + 2] = scale_byte
    if with_nvfp4:
        w.add_tensor("blk.0.ffn_up.weight", blocks, raw_dtype=gguf.GGMLQuantizationType.NVFP4)
        if scale is not None:
            w.add_tensor("blk.0.ffn_up.scale", np.array([scale], dtype=scale_dtype))
        if input_scale is not None:
            w.add_tensor("blk.0.ffn_up.input_scale", np.array([input_scale], dtype=np.float32))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(128, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if with_nvfp4 and scale_byte is None:
        deq = gguf.quants.dequantize(blocks, gguf.GGMLQuantizationType.NVFP4).astype(np.float32)
        return deq
    return None


deq = nvfp4_file("nvfp4_good.gguf", input_scale=0.004)
(out / "nvfp4_good.expected.json").write_text(json.dumps({"dequant_unscaled": deq.flatten().tolist()}))
nvfp4_file("nvfp4_no_scale.gguf", scale=None)              # valid: absent scale means 1.0
nvfp4_file("bad_scale_f16.gguf", scale_dtype=np.float16)   # companion scale of the wrong dtype
nvfp4_file("bad_scale_zero.gguf", scale=0.0)               # tensor scale not positive
nvfp4_file("bad_scale_nan.gguf", scale=float("nan"))       # tensor scale not finite
nvfp4_file("bad_byte_nan.gguf", scale_byte=0x7F)           # NaN block scale byte
nvfp4_file("bad_byte_sign.gguf", scale_byte=0xB8)          # block scale byte with the sign bit
nvfp4_file("mixed_ftype.gguf", file_type=1)                # NVFP4 tensors, file type says F16 (accepted)
nvfp4_file("bad_no_nvfp4.gguf", with_nvfp4=False)          # file type says NVFP4, no NVFP4 tensor
print("wrote NVFP4 GGUF fixtures")
