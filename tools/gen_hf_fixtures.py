#!/usr/bin/env python3
"""Writes tiny Llama checkpoints in the safetensors families under fixtures/hf/:

modelopt/     ModelOpt NVFP4 (W4A4) export layout: config.json (quantization_config, quant_method
              modelopt), hf_quant_config.json (quant_algo NVFP4, exclude_modules [lm_head]),
              X.weight U8 / X.weight_scale F8_E4M3 / X.weight_scale_2 F32 / X.input_scale F32;
              weights quantized by NVIDIA ModelOpt's own NVFP4QTensor.quantize (with a given
              power-of-two weights_scaling_factor_2, so the reciprocal form below is exact).
              Sharded in two files with model.safetensors.index.json.
ct/           The same weights in compressed-tensors nvfp4-pack-quantized form: X.weight_packed,
              X.weight_scale, X.weight_global_scale = 1/scale2, X.input_global_scale = 1/input_scale,
              config_groups (targets Linear, FP4 weights and activations), ignore [lm_head].
mixed/        ModelOpt MIXED_PRECISION: attention FP8 (q per-tensor, k per-channel scale), MLP
              W4A16_NVFP4, the rest excluded/float; one file.
float/        The original float (BF16) model, no quantization config.
hf.expected.json  GGUF-order (llama.cpp permuted) codes of q/k computed with convert_hf_to_gguf.py's
              LlamaModel.permute formula, FP8 dequantized values, scales.

Run: /work/tools-venv/v/bin/python tools/gen_hf_fixtures.py  (needs torch, safetensors, nvidia-modelopt)
"""
import json
import pathlib
import warnings

import torch
from safetensors.torch import save_file

warnings.filterwarnings("ignore")
from modelopt.torch.quantization.qtensor import NVFP4QTensor  # noqa: E402

root = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "hf"
g = torch.Generator().manual_seed(11)
H, NH, NKV, FF, V = 64, 4, 2, 128, 32
HD = H // NH
config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
          "num_attention_heads": NH, "num_key_value_heads": NKV, "intermediate_size": FF,
          "num_hidden_layers": 1, "vocab_size": V, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "max_position_embeddings": 256, "torch_dtype": "bfloat16"}
P = "model.layers.0."
lin = {P + "self_attn.q_proj": (H, H), P + "self_attn.k_proj": (NKV * HD, H), P + "self_attn.v_proj": (NKV * HD, H),
       P + "self_attn.o_proj": (H, H), P + "mlp.gate_proj": (FF, H), P + "mlp.up_proj": (FF, H),
       P + "mlp.down_proj": (H, FF)}
fl = {"model.embed_tokens.weight": torch.randn(V, H, generator=g), "lm_head.weight": torch.randn(V, H, generator=g),
      P + "input_layernorm.weight": 1 + 0.1 * torch.randn(H, generator=g),
      P + "post_attention_layernorm.weight": 1 + 0.1 * torch.randn(H, generator=g),
      "model.norm.weight": 1 + 0.1 * torch.randn(H, generator=g)}
fl = {k: v.to(torch.bfloat16) for k, v in fl.items()}
w = {m: (torch.randn(*s, generator=g) * 0.05).to(torch.bfloat16) for m, s in lin.items()}


def permute(x, n_head, n_head_kv=None):  # convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def write(d, tensors, cfg, hfq=None, shards=1):
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    if hfq:
        (d / "hf_quant_config.json").write_text(json.dumps(hfq, indent=1))
    names = sorted(tensors)
    if shards == 1:
        save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
        return
    parts = [names[i::shards] for i in range(shards)]
    wm = {}
    for i, part in enumerate(parts):
        fn = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({k: tensors[k] for k in part}, str(d / fn), metadata={"format": "pt"})
        wm.update({k: fn for k in part})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}, indent=1))


expected = {"q": {}, "scale2": {}, "fp8": {}}
mo, ct = dict(fl), dict(fl)
for i, (m, x) in enumerate(w.items()):
    s2 = torch.tensor(2.0 ** (-9 - i % 3))
    q, ws, ws2 = NVFP4QTensor.quantize(x.float(), 16, None, s2)
    codes, sc = q._quantized_data, ws.view(torch.uint8) if ws.dtype != torch.uint8 else ws
    sc = sc.view(torch.float8_e4m3fn)
    inp = torch.tensor(2.0 ** -7, dtype=torch.float32)
    mo[m + ".weight"], mo[m + ".weight_scale"] = codes, sc
    mo[m + ".weight_scale_2"], mo[m + ".input_scale"] = ws2.float().reshape(()), inp.reshape(())
    ct[m + ".weight_packed"], ct[m + ".weight_scale"] = codes, sc
    ct[m + ".weight_global_scale"] = (1.0 / ws2.float()).reshape(1)
    ct[m + ".input_global_scale"] = (1.0 / inp).reshape(1)
    expected["scale2"][m] = float(ws2)
    if m.endswith("q_proj") or m.endswith("k_proj"):
        # Row permutation of the bytes (codes and scales are per row).
        kv = None if m.endswith("q_proj") else NKV
        expected["q"][m] = {"codes": permute(codes, NH, kv).flatten().tolist(),
                            "scales": permute(sc.view(torch.uint8), NH, kv).flatten().tolist()}
for k in ("model.embed_tokens.weight", "lm_head.weight"):
    pass
mo_cfg = dict(config, quantization_config={"quant_method": "modelopt", "quant_algo": "NVFP4",
                                           "exclude_modules": ["lm_head"], "group_size": 16})
write(root / "modelopt", mo, mo_cfg, {"producer": {"name": "modelopt", "version": "0.47.0"},
                                      "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                                       "group_size": 16, "exclude_modules": ["lm_head"]}}, shards=2)
fp4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True, "dynamic": False}
ct_cfg = dict(config, quantization_config={
    "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "quantization_status": "compressed",
    "ignore": ["lm_head"],
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": fp4,
                                  "input_activations": dict(fp4, dynamic="local"), "format": "nvfp4-pack-quantized"}}})
write(root / "ct", ct, ct_cfg)

# Mixed: FP8 attention (q per-tensor, k per-channel, v/o per-tensor), W4A16 NVFP4 MLP.
mx = dict(fl)
layers = {}
for m, x in w.items():
    if "self_attn" in m:
        per_channel = m.endswith("k_proj")
        amax = x.float().abs().amax(dim=1, keepdim=True) if per_channel else x.float().abs().amax()
        scale = (amax / 448.0).float()
        q8 = (x.float() / scale).to(torch.float8_e4m3fn)
        mx[m + ".weight"] = q8
        mx[m + ".weight_scale"] = scale.reshape(-1) if per_channel else scale.reshape(())
        layers[m] = {"quant_algo": "FP8"}
        deq = q8.float() * scale
        if m.endswith("q_proj"):
            deq = permute(deq, NH)
        elif m.endswith("k_proj"):
            deq = permute(deq, NH, NKV)
        expected["fp8"][m] = deq.flatten().tolist()
    else:
        mx[m + ".weight"], mx[m + ".weight_scale"] = mo[m + ".weight"], mo[m + ".weight_scale"]
        mx[m + ".weight_scale_2"] = mo[m + ".weight_scale_2"]
        layers[m] = {"quant_algo": "W4A16_NVFP4"}
write(root / "mixed", mx, config, {"producer": {"name": "modelopt"},
                                   "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers,
                                                    "exclude_modules": ["lm_head"]}})
write(root / "float", dict(fl, **{m + ".weight": x for m, x in w.items()}), config)
(root / "hf.expected.json").write_text(json.dumps(expected))
print("wrote", root)
