#!/usr/bin/env python3
"""Writes fixtures/mixed/<arch>/<form>/: mixed-precision checkpoints as NVIDIA and Unsloth publish
them, made by the real producers on CPU from the committed tiny float models
(fixtures/arch/qwen3/float; fixtures/moe/qwen3_moe_i64/float, whose expert width 64 fits the
64-value blocks of llama.cpp's NVFP4, so the MoE converts to GGUF too; tokenizers copied along).

  form            producer
  modelopt-mixed  ModelOpt mtq.quantize with a per-module config: FP8 (E4M3 weight and input,
                  per-tensor scales, ModelOpt's FP8_DEFAULT_CFG quantizers) for the attention
                  projections, W4A16 NVFP4 (W4A16_NVFP4_CFG's weight quantizer) for the MLP / every
                  expert and for lm_head, max calibration on CALIB, then export_hf_checkpoint:
                  hf_quant_config.json quant_algo MIXED_PRECISION with its quantized_layers map
                  (the experts named once, "model.layers.N.mlp.experts": transformers 5 holds them
                  fused; the files hold one tensor per expert), as NVIDIA's Qwen3.6 repositories.
  ct-mixed        llm-compressor oneshot with QuantizationModifier(config_groups=...) of two
                  overlapping groups, save_pretrained(save_compressed=True), format
                  mixed-precision, as Unsloth's: "fp8" = FP8_DYNAMIC's scheme (E4M3 weights with
                  a per-channel scale, dynamic per-token activations) targeting every "Linear";
                  "nvfp4" = the NVFP4 scheme (W4A4) targeting the MLP projections or the experts
                  by regex (re:.*mlp\\.(gate|up|down)_proj$, re:.*mlp\\.experts\\.\\d+\\.(gate|up|down)_proj$).
                  compressed-tensors gives a regex target precedence over the class "Linear"
                  (utils/match.py match_targets), so the MLP is NVFP4 and the rest FP8.
                  ignore: lm_head and the MoE routers.

  nemotron_h, nemotron_h_latent (fixtures/nemotron_h/<arch>/float: Mamba-2, attention, MoE, MLP):
  modelopt-mixed  as above with FP8 for the Mamba-2 in_proj / out_proj, the attention, the shared
                  expert and LatentMoE's fc1/fc2_latent_proj, W4A16 NVFP4 for the routed experts
                  and the MLP layer; router, conv1d and lm_head left as they are (BF16): the layout
                  of Nemotron 3 Super's NVFP4 release
  ct-mixed        as above; the NVFP4 group by re:.*mixer\.experts\.\d+\.(up|down)_proj$ (no gate
                  projection), the routers (mixer.gate) ignored
  modelopt-selective (nemotron_h only) NVIDIA's Nemotron 3 Nano NVFP4 recipe: NVFP4 W4A4 everywhere
                  but the attention layer and the Mamba-2 layer that feeds it (BF16), an FP8 KV
                  cache (FP8_KV_CFG); its exclude_modules carry ModelOpt 0.47's unresolved-name
                  marker before a wildcard ("backbone.layers.0.\\0backbone.pt_name_sentinel*")

fixtures/mixed/manifest.json: the producers' versions and, per form, each tensor's dtype and shape.

Run: .pyvenv/bin/python tools/gen_mixed_fixtures.py [--out fixtures/mixed] [--arch qwen3,qwen3_moe_i64,nemotron_h,nemotron_h_latent]
(a venv with torch, nvidia-modelopt, llmcompressor, transformers, safetensors: see
fixtures/mixed/README.md)
"""
import argparse
import copy
import json
import os
import pathlib
import shutil
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOAT = {"qwen3": ROOT / "fixtures" / "arch" / "qwen3" / "float", "qwen3_moe_i64": ROOT / "fixtures" / "moe" / "qwen3_moe_i64" / "float",
         "nemotron_h": ROOT / "fixtures" / "nemotron_h" / "nemotron_h" / "float",
         "nemotron_h_latent": ROOT / "fixtures" / "nemotron_h" / "nemotron_h_latent" / "float"}
NEMOTRON = {"nemotron_h", "nemotron_h_latent"}
NVFP4_TARGET = {"qwen3": r"re:.*mlp\.(gate|up|down)_proj$", "qwen3_moe_i64": r"re:.*mlp\.experts\.\d+\.(gate|up|down)_proj$",
                "nemotron_h": r"re:.*mixer\.experts\.\d+\.(up|down)_proj$", "nemotron_h_latent": r"re:.*mixer\.experts\.\d+\.(up|down)_proj$"}
CT_IGNORE = ["lm_head", "re:.*mlp.gate$", "re:.*mixer.gate$"]


def calibration(tok):
    lines = [l for l in (ROOT / "data" / "calibration.txt").read_text().split("\n") if l.strip()]
    return [tok(l)["input_ids"][:64] for l in lines]


def _entries(cfg):
    """ModelOpt's quant_cfg as (pattern, attributes) pairs, dict or list form."""
    q = cfg["quant_cfg"]
    if isinstance(q, dict):
        return list(q.items())
    out = []
    for e in q:
        if isinstance(e, dict) and "quantizer_name" in e:
            out.append((e["quantizer_name"], {k: v for k, v in e.items() if k != "quantizer_name"}))
        else:
            out.append(tuple(e))
    return out


def modelopt_mixed_cfg(arch="qwen3"):
    import modelopt.torch.quantization as mtq
    fp8 = dict(_entries(mtq.FP8_DEFAULT_CFG))
    w4 = dict(_entries(mtq.W4A16_NVFP4_CFG))
    off = {"enable": False}
    # Later patterns override earlier ones (ModelOpt applies them in order).
    if arch in NEMOTRON:
        fp8_layers = ["*mixer.in_proj*", "*mixer.out_proj*", "*mixer.[qkvo]_proj*", "*shared_experts*", "*latent_proj*"]
        quant_cfg = {"*": off}
        for pat in fp8_layers:
            quant_cfg[pat + "weight_quantizer"] = copy.deepcopy(fp8["*weight_quantizer"])
            quant_cfg[pat + "input_quantizer"] = copy.deepcopy(fp8["*input_quantizer"])
        for pat in ["*mixer.experts.*", "*mixer.up_proj*", "*mixer.down_proj*"]:
            quant_cfg[pat + "weight_quantizer"] = copy.deepcopy(w4["*weight_quantizer"])
        quant_cfg.update({"*mixer.gate.*": off, "*conv1d*": off, "*lm_head*": off})
        if isinstance(mtq.FP8_DEFAULT_CFG["quant_cfg"], list):
            quant_cfg = [{"quantizer_name": k, **v} for k, v in quant_cfg.items()]
        return {"quant_cfg": quant_cfg, "algorithm": "max"}
    quant_cfg = {
        "*": off,
        "*self_attn*weight_quantizer": copy.deepcopy(fp8["*weight_quantizer"]),
        "*self_attn*input_quantizer": copy.deepcopy(fp8["*input_quantizer"]),
        "*mlp*weight_quantizer": copy.deepcopy(w4["*weight_quantizer"]),
        "*lm_head*weight_quantizer": copy.deepcopy(w4["*weight_quantizer"]),
        "*mlp.gate.*": off,
        "*router*": off,
    }
    if isinstance(mtq.FP8_DEFAULT_CFG["quant_cfg"], list):
        quant_cfg = [{"quantizer_name": k, **v} for k, v in quant_cfg.items()]
    return {"quant_cfg": quant_cfg, "algorithm": "max"}


def modelopt_selective_cfg():
    """NVIDIA's Nemotron 3 Nano NVFP4 recipe on the fixture's pattern M*E-ME: NVFP4 (W4A4, input
    scales) everywhere but the attention layer (1) and the Mamba-2 layer feeding it (0), which stay
    BF16, the routers, conv1d and lm_head as ModelOpt leaves them, and an FP8 KV cache
    (FP8_KV_CFG: per-tensor k/v scales)."""
    import modelopt.torch.quantization as mtq
    off = {"enable": False}
    entries = _entries(mtq.NVFP4_DEFAULT_CFG) + _entries(mtq.FP8_KV_CFG) + [("*layers.0.mixer.*", off), ("*layers.1.mixer.*_proj*", off)]
    if isinstance(mtq.NVFP4_DEFAULT_CFG["quant_cfg"], list):
        return {"quant_cfg": [{"quantizer_name": k, **v} for k, v in entries], "algorithm": "max"}
    return {"quant_cfg": dict(entries), "algorithm": "max"}


def modelopt_selective(model16, calib, out, tok):
    import modelopt.torch.quantization as mtq
    P.install_cpu_fake_quant()
    m = copy.deepcopy(model16)
    mtq.quantize(m, modelopt_selective_cfg(), P.forward_loop_of(calib))
    P.modelopt_export(m, out, tok)


def modelopt_mixed(model16, calib, out, tok, arch="qwen3"):
    import modelopt.torch.quantization as mtq
    P.install_cpu_fake_quant()
    m = copy.deepcopy(model16)
    mtq.quantize(m, modelopt_mixed_cfg(arch), P.forward_loop_of(calib))
    P.modelopt_export(m, out, tok)


def ct_mixed(float_dir, arch, calib, out, tok):
    from compressed_tensors.quantization import preset_name_to_scheme
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier

    if out.exists():
        shutil.rmtree(out)
    m = P.load_float(float_dir, torch.bfloat16)
    groups = {"fp8": preset_name_to_scheme("FP8_DYNAMIC", ["Linear"]),
              "nvfp4": preset_name_to_scheme("NVFP4", [NVFP4_TARGET[arch]])}
    recipe = QuantizationModifier(config_groups=groups, ignore=CT_IGNORE)
    ds = Dataset.from_dict({"input_ids": [list(c) for c in calib], "attention_mask": [[1] * len(c) for c in calib]})
    oneshot(model=m, recipe=recipe, dataset=ds, num_calibration_samples=len(calib),
            max_seq_length=max(len(c) for c in calib), shuffle_calibration_samples=False)
    m.save_pretrained(str(out), save_compressed=True)
    tok.save_pretrained(str(out), save_jinja_files=False)


def describe(d):
    from safetensors import safe_open
    t = {}
    for f in sorted(d.glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            for k in h.keys():
                x = h.get_slice(k)
                t[k] = [x.get_dtype(), list(x.get_shape())]
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "mixed"))
    ap.add_argument("--arch", default="qwen3,qwen3_moe_i64,nemotron_h,nemotron_h_latent")
    ap.add_argument("--form", default="modelopt-mixed,ct-mixed,modelopt-selective")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(2)
    from transformers import AutoTokenizer
    out_root = pathlib.Path(a.out)
    man_path = out_root / "manifest.json"
    manifest = json.loads(man_path.read_text()) if man_path.exists() else {"forms": {}}
    manifest["versions"] = P.versions()
    for arch in a.arch.split(","):
        tok = AutoTokenizer.from_pretrained(str(FLOAT[arch]))
        calib = calibration(tok)
        for form in a.form.split(","):
            out = out_root / arch / form
            if form == "modelopt-selective":
                if arch != "nemotron_h":
                    continue
                modelopt_selective(P.load_float(FLOAT[arch], torch.bfloat16), calib, out, tok)
            elif form == "modelopt-mixed":
                modelopt_mixed(P.load_float(FLOAT[arch], torch.bfloat16), calib, out, tok, arch)
            else:
                ct_mixed(FLOAT[arch], arch, calib, out, tok)
            manifest["forms"][f"{arch}/{form}"] = describe(out)
            print(arch, form, "written", flush=True)
    man_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
