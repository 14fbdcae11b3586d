#!/usr/bin/env python3
"""Writes fixtures/io/* with PyPI `safetensors` and `gguf` (independent writers) for the reader
and writer tests.

py.safetensors  one tensor of every byte-sized dtype torch can store (F64..BOOL, F8_E4M3 with all
                256 bytes, F8_E5M2, a scalar, a zero-size tensor) and one metadata entry, written
                by safetensors.torch.save_file. Our writer must reproduce it byte for byte.
py.gguf         metadata of several value types and tensors F32, F16, Q8_0, NVFP4, written by
                gguf.GGUFWriter. Our writer, fed what our reader parsed, must reproduce it byte
                for byte.
py.expected.json  what the readers must report: dtype, shape, bytes (hex) and float values.

Run: /work/tools-venv/v/bin/python tools/gen_io_fixtures.py  (needs safetensors, gguf, torch, numpy)
"""
import json
import pathlib

import gguf
import numpy as np
import torch
from safetensors.torch import save_file
from safetensors import safe_open

out = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "io"
out.mkdir(parents=True, exist_ok=True)
g = torch.Generator().manual_seed(3)

t = {
    "f64": torch.tensor([1.0 / 3.0, -2.5], dtype=torch.float64),
    "f32": torch.randn(2, 3, generator=g),
    "f16": torch.tensor([0.5, -1.25, 65504.0, 6e-8], dtype=torch.float16),
    "bf16": torch.randn(2, 2, generator=g).to(torch.bfloat16),
    "f8_e4m3": torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).reshape(16, 16),
    "f8_e5m2": torch.tensor([0.5, -3.0, 57344.0, 1.52587890625e-05], dtype=torch.float8_e5m2),
    "u8": torch.tensor([0, 1, 255], dtype=torch.uint8),
    "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
    "i16": torch.tensor([-30000, 7], dtype=torch.int16),
    "i32": torch.tensor([-2000000000, 5], dtype=torch.int32),
    "i64": torch.tensor([-(2**62), 9], dtype=torch.int64),
    "boolean": torch.tensor([True, False, True]),
    "scalar": torch.tensor(1.5),
    "empty": torch.zeros(0, 4),
    "model.layers.0.mlp.down_proj.weight": torch.randn(4, 8, generator=g).to(torch.bfloat16),
}
st_path = out / "py.safetensors"
save_file(t, str(st_path), metadata={"format": "pt"})

ST_NAME = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2", torch.uint8: "U8",
           torch.int8: "I8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64",
           torch.bool: "BOOL"}
expected = {"safetensors": {"metadata": {"format": "pt"}, "tensors": {}}}
with safe_open(str(st_path), framework="pt") as f:
    for name in f.keys():
        x = f.get_tensor(name)
        e = {
            "dtype": ST_NAME[x.dtype],
            "shape": list(x.shape),
            "hex": x.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex() if x.numel() else "",
        }
        if x.is_floating_point():
            # float32 values (NaN as the string "nan": E4M3 0x7F/0xFF)
            e["values"] = ["nan" if v != v else v for v in x.to(torch.float32).flatten().tolist()]
        expected["safetensors"]["tensors"][name] = e

w = gguf.GGUFWriter(str(out / "py.gguf"), arch="llama")
w.add_uint32("llama.block_count", 2)
w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
w.add_string("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}")
w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b"])
w.add_array("tokenizer.ggml.scores", [0.0, -1.0, -2.5, 3.0])
w.add_bool("test.flag", False)
w.add_uint64("test.u64", 2**40 + 1)
w.add_int8("test.i8", -3)
w.add_float64("test.f64", 0.1)
rng = np.random.default_rng(9)
w.add_tensor("token_embd.weight", rng.standard_normal((3, 8)).astype(np.float32))
w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float16))
q8 = gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("blk.0.ffn_up.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
nv = rng.integers(0, 256, size=(2, 72), dtype=np.uint8)
nv[:, 0:4] = rng.integers(0x20, 0x50, size=(2, 4))
nv[:, 36:40] = rng.integers(0x20, 0x50, size=(2, 4))
w.add_tensor("blk.0.ffn_down.weight", nv, raw_dtype=gguf.GGMLQuantizationType.NVFP4)
w.add_tensor("blk.0.ffn_down.scale", np.array([0.03125], dtype=np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

r = gguf.GGUFReader(str(out / "py.gguf"))
expected["gguf"] = {
    t.name: {"type": int(t.tensor_type), "ne": [int(d) for d in t.shape], "hex": np.asarray(t.data).tobytes().hex()}
    for t in r.tensors
}
(out / "py.expected.json").write_text(json.dumps(expected, indent=1))
print("wrote", st_path, out / "py.gguf")
