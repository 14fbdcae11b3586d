#!/usr/bin/env python3
"""Cross-checks two outputs of `nvfp4 convert` from the same source, with independent readers:
an NVFP4 GGUF (read by PyPI `gguf`, decoded by gguf's own NVFP4 dequantizer) and a ModelOpt-layout
directory (read by PyPI `safetensors`, decoded here in numpy from the row layout with ml_dtypes'
float8_e4m3fn). For every NVFP4 layer, the ModelOpt weight, put in GGUF row order with
convert_hf_to_gguf.py's LlamaModel.permute for q/k, must equal the GGUF weight exactly.

Run: python tools/check_modelopt_interop.py OUT.gguf OUT_DIR
"""
import json
import pathlib
import sys

import gguf
import ml_dtypes
import numpy as np
import torch
from safetensors.torch import load_file

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def permute(x, n_head, n_head_kv=None):  # convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def hf_name(g):
    fixed = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
    layer = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    mod = g[: -len(".weight")]
    if mod in fixed:
        return fixed[mod]
    _, n, rest = mod.split(".", 2)
    return f"model.layers.{n}.{layer[rest]}"


def main(gguf_path, dir_path):
    d = pathlib.Path(dir_path)
    cfg = json.loads((d / "config.json").read_text())
    hq = json.loads((d / "hf_quant_config.json").read_text())
    assert cfg["quantization_config"]["quant_method"] == "modelopt"
    assert hq["quantization"]["quant_algo"] in ("NVFP4", "W4A16_NVFP4", "NVFP4_AWQ", "MIXED_PRECISION")
    raw = load_file(str(d / "model.safetensors"))

    def np_of(x):
        if x.dtype == torch.float8_e4m3fn:
            return x.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn)
        return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    st = {k: np_of(v) for k, v in raw.items()}
    r = gguf.GGUFReader(gguf_path)
    gt = {t.name: t for t in r.tensors}
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    n = 0
    for name, t in gt.items():
        if t.tensor_type != gguf.GGMLQuantizationType.NVFP4:
            continue
        base = name[: -len(".weight")]
        scale = float(np.asarray(gt[base + ".scale"].data).reshape(-1)[0])
        got = gguf.quants.dequantize(np.asarray(t.data), gguf.GGMLQuantizationType.NVFP4).astype(np.float32) * np.float32(scale)
        m = hf_name(name)
        codes, sc = st[m + ".weight"], st[m + ".weight_scale"]
        s2 = np.float32(st[m + ".weight_scale_2"])
        assert codes.dtype == np.uint8 and sc.dtype == ml_dtypes.float8_e4m3fn, (m, codes.dtype, sc.dtype)
        q = np.empty((codes.shape[0], codes.shape[1] * 2), dtype=np.float32)
        q[:, 0::2] = E2M1[codes & 15]
        q[:, 1::2] = E2M1[codes >> 4]
        w = (q * np.repeat(sc.astype(np.float32), 16, axis=1)) * s2
        if name.endswith("attn_q.weight"):
            w = permute(w, nh)
        elif name.endswith("attn_k.weight"):
            w = permute(w, nh, nkv)
        assert w.shape == got.shape, (name, w.shape, got.shape)
        assert np.array_equal(w, got), (name, float(np.abs(w - got).max()))
        n += 1
    assert n > 0
    print(f"ok: {n} NVFP4 layers equal bit for bit between the GGUF (PyPI gguf) and the ModelOpt directory "
          f"(PyPI safetensors + ml_dtypes), q/k through llama.cpp's permutation")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
