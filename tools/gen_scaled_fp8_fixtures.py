#!/usr/bin/env python3
"""Writes fixtures/mixed/qwen3/<form>/: FP8 layers whose scale varies along the input (MXFP8 and
FP8 with 128x128 block scales), made by the real producers on CPU from the committed tiny float
Qwen3 (fixtures/arch/qwen3/float), and reference_scaled.json (tools/mixed_reference.py --scaled).

  form                 producer
  modelopt-mxfp8       ModelOpt 0.47 mtq.quantize with MXFP8_DEFAULT_CFG (E4M3 weights, an E8M0
                       scale per 32 inputs, dynamic MX activations; lm_head left out by the config)
                       + export_hf_checkpoint: hf_quant_config.json quant_algo MXFP8, group_size 32.
  modelopt-mxfp8-mix   ModelOpt MIXED_PRECISION with a per-module config: MXFP8 attention
                       (MXFP8_DEFAULT_CFG's quantizers), W4A16 NVFP4 MLP and lm_head, as NVIDIA's
                       "FP4-Local" checkpoints mix NVFP4 and MXFP8.
  ct-mxfp8             llm-compressor 0.14 oneshot, two config groups (format mixed-precision):
                       the MXFP8 preset (group strategy, group_size 32, scale_dtype torch.uint8,
                       format mxfp8-quantized) targeting "Linear", NVFP4 targeting the MLP by regex.
  ct-fp8-block         llm-compressor 0.14 oneshot with the FP8_BLOCK preset (block_structure
                       [128, 128], F32 weight_scale per block; format float-quantized) targeting
                       "Linear", lm_head ignored.
  modelopt-fp8-block   ModelOpt FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG + export_hf_checkpoint: quant_algo
                       "fp8_pb_wo" (its lower-case name), weight_scale F32 with the unit axes of
                       the block grid dropped ([] for a one-block matrix).
  deepseek-fp8-block   No producer of ours writes transformers' fine-grained FP8 (DeepSeek / GLM /
                       Kimi: quant_method "fp8", weight_block_size [128, 128], weight_scale_inv),
                       so this script writes it with numpy and ml_dtypes, DeepSeek's own rule
                       (scale = block amax / 448, E4M3 = round-to-nearest-even of w / scale), on a
                       wider random Qwen3 (hidden 160, intermediate 288, one layer, tied
                       embeddings) so that matrices hold several blocks, 32-wide at the edges.

Run: .pyvenv/bin/python tools/gen_scaled_fp8_fixtures.py [--form a,b] && .pyvenv/bin/python tools/mixed_reference.py --scaled
"""
import argparse
import copy
import json
import os
import pathlib
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_mixed_fixtures as G  # noqa: E402
import producers as P  # noqa: E402

ROOT = G.ROOT
OUT = ROOT / "fixtures" / "mixed" / "qwen3"
FLOAT = G.FLOAT["qwen3"]
FORMS = ["modelopt-mxfp8", "modelopt-mxfp8-mix", "ct-mxfp8", "ct-fp8-block", "modelopt-fp8-block", "deepseek-fp8-block"]


def modelopt_form(cfg, calib, out, tok):
    import modelopt.torch.quantization as mtq
    P.install_cpu_fake_quant()
    m = P.load_float(FLOAT, torch.bfloat16)
    mtq.quantize(m, copy.deepcopy(cfg), P.forward_loop_of(calib))
    P.modelopt_export(m, out, tok)


def mxfp8_mix_cfg():
    import modelopt.torch.quantization as mtq
    mx = dict(G._entries(mtq.MXFP8_DEFAULT_CFG))
    w4 = dict(G._entries(mtq.W4A16_NVFP4_CFG))
    off = {"enable": False}
    quant_cfg = {
        "*": off,
        "*self_attn*weight_quantizer": copy.deepcopy(mx["*weight_quantizer"]),
        "*self_attn*input_quantizer": copy.deepcopy(mx["*input_quantizer"]),
        "*mlp*weight_quantizer": copy.deepcopy(w4["*weight_quantizer"]),
        "*lm_head*weight_quantizer": copy.deepcopy(w4["*weight_quantizer"]),
    }
    if isinstance(mtq.MXFP8_DEFAULT_CFG["quant_cfg"], list):
        quant_cfg = [{"quantizer_name": k, **v} for k, v in quant_cfg.items()]
    return {"quant_cfg": quant_cfg, "algorithm": "max"}


def ct_form(groups, calib, out, tok, ignore=("lm_head",)):
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    if out.exists():
        shutil.rmtree(out)
    m = P.load_float(FLOAT, torch.bfloat16)
    recipe = QuantizationModifier(config_groups=groups, ignore=list(ignore))
    ds = Dataset.from_dict({"input_ids": [list(c) for c in calib], "attention_mask": [[1] * len(c) for c in calib]})
    oneshot(model=m, recipe=recipe, dataset=ds, num_calibration_samples=len(calib),
            max_seq_length=max(len(c) for c in calib), shuffle_calibration_samples=False)
    m.save_pretrained(str(out), save_compressed=True)
    tok.save_pretrained(str(out), save_jinja_files=False)


def block_quantize(w):
    """DeepSeek's 128x128 block rule in numpy: scale = amax / 448 per block (edges smaller), E4M3
    by ml_dtypes' round-to-nearest-even cast of w / scale. Returns (uint8 bytes, float32 scales)."""
    import ml_dtypes
    n_out, n_in = w.shape
    br, bc = -(-n_out // 128), -(-n_in // 128)
    s = np.zeros((br, bc), np.float32)
    q = np.zeros(w.shape, ml_dtypes.float8_e4m3fn)
    for i in range(br):
        for j in range(bc):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            amax = np.float32(max(np.abs(blk).max(), 1e-4))
            s[i, j] = amax / np.float32(448.0)
            q[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = (blk / s[i, j]).astype(ml_dtypes.float8_e4m3fn)
    return q.view(np.uint8), s


def deepseek_form(out, tok):
    from safetensors.numpy import save_file
    from transformers import AutoConfig, AutoModelForCausalLM
    if out.exists():
        shutil.rmtree(out)
    cfg = AutoConfig.from_pretrained(str(FLOAT))
    cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = 160, 288, 1
    cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim = 5, 1, 32
    cfg.layer_types = ["full_attention"]
    cfg.tie_word_embeddings = True
    torch.manual_seed(1234)
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    import ml_dtypes
    tensors = {}
    for k, v in m.state_dict().items():
        if k == "lm_head.weight":
            continue  # tied
        a = v.float().numpy()
        if k.endswith("_proj.weight"):
            q, s = block_quantize(a)
            tensors[k] = q.view(ml_dtypes.float8_e4m3fn)
            tensors[k[:-7] + ".weight_scale_inv"] = s
        else:
            tensors[k] = a.astype(ml_dtypes.bfloat16)
    out.mkdir(parents=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    c = json.loads(cfg.to_json_string())
    c["dtype"] = "bfloat16"
    c["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]}
    (out / "config.json").write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")
    tok.save_pretrained(str(out), save_jinja_files=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--form", default=",".join(FORMS))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(2)
    import modelopt.torch.quantization as mtq
    from compressed_tensors.quantization import preset_name_to_scheme
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(FLOAT))
    calib = G.calibration(tok)
    man_path = ROOT / "fixtures" / "mixed" / "manifest.json"
    manifest = json.loads(man_path.read_text())
    for form in a.form.split(","):
        out = OUT / form
        if form == "modelopt-mxfp8":
            modelopt_form(mtq.MXFP8_DEFAULT_CFG, calib, out, tok)
        elif form == "modelopt-mxfp8-mix":
            modelopt_form(mxfp8_mix_cfg(), calib, out, tok)
        elif form == "modelopt-fp8-block":
            modelopt_form(mtq.FP8_2D_BLOCKWISE_WEIGHT_ONLY_CFG, calib, out, tok)
        elif form == "ct-mxfp8":
            ct_form({"mxfp8": preset_name_to_scheme("MXFP8", ["Linear"]),
                     "nvfp4": preset_name_to_scheme("NVFP4", [G.NVFP4_TARGET["qwen3"]])}, calib, out, tok)
        elif form == "ct-fp8-block":
            ct_form({"fp8_block": preset_name_to_scheme("FP8_BLOCK", ["Linear"])}, calib, out, tok)
        elif form == "deepseek-fp8-block":
            deepseek_form(out, tok)
        else:
            raise SystemExit("unknown form " + form)
        manifest["forms"][f"qwen3/{form}"] = G.describe(out)
        print(form, "written", flush=True)
    manifest["versions"] = P.versions()
    man_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
