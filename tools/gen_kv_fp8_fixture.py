#!/usr/bin/env python3
"""Writes fixtures/kv_fp8/qwen3/: a ModelOpt export with an FP8 KV cache, as NVIDIA's mixed
repositories declare it (hf_quant_config.json kv_cache_quant_algo FP8, each attention's
self_attn.k_proj.k_scale and self_attn.v_proj.v_scale = the calibrated amax / 448), and ModelOpt's
own forward of the same quantized model as the reference.

  modelopt-w4a16-kvfp8/  the committed tiny float Qwen3 (fixtures/arch/qwen3/float) quantized by
                         ModelOpt mtq.quantize with W4A16_NVFP4_CFG's quantizers plus
                         FP8_KV_CFG's (*[kv]_bmm_quantizer: E4M3, per-tensor), max calibration on
                         data/calibration.txt, then export_hf_checkpoint.
  ct-nvfp4a16-kvfp8/      the same float model through llm-compressor oneshot (QuantizationModifier
                         targets Linear, scheme NVFP4A16, ignore lm_head, kv_cache_scheme: float
                         8-bit per tensor, static, symmetric) and save_compressed: config.json's
                         quantization_config.kv_cache_scheme, self_attn.k_scale / v_scale per layer
                         (F32 [1]). Its scales are read as stored; no reference logits (compressed-
                         tensors' decompression does not apply the KV quantization).
  reference.json         ids (a prompt of 40 tokens), "greedy" (8 argmax tokens of the KV-quantized
                         forward, each from a full forward of the sequence so far), the k/v scales
                         read back from the export, and the maximum |logit|.
  logits_kvfp8.f32       ModelOpt's fake-quantized forward in float32 (weights NVFP4 quantize-
                         dequantized, keys after RoPE and values through its FP8 quantizers at
                         amax / 448), [40][vocab] little-endian float32: what `--precision a16 --kv
                         fp8` computes.
  logits_kvf32.f32       the same forward with the KV quantizers disabled: what `--kv f32` computes.

tests/test_kv_fp8.cpp reads them (no torch in CI).
Run: .pyvenv/bin/python tools/gen_kv_fp8_fixture.py (the venv of fixtures/mixed/README.md)
"""
import argparse
import copy
import json
import os
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_mixed_fixtures as G  # noqa: E402
import producers as P  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLOAT = ROOT / "fixtures" / "arch" / "qwen3" / "float"
PROMPT = [17, 250, 3, 99, 402, 7, 311, 45, 12, 480, 66, 5, 201, 333, 90, 18, 77, 460, 2, 150,
          41, 299, 8, 371, 64, 120, 9, 255, 33, 444, 71, 16, 190, 300, 27, 81, 499, 4, 222, 58]


def cfg():
    import modelopt.torch.quantization as mtq
    w4 = G._entries(mtq.W4A16_NVFP4_CFG)
    kv = G._entries(mtq.FP8_KV_CFG)
    entries = w4 + kv
    if isinstance(mtq.W4A16_NVFP4_CFG["quant_cfg"], list):
        return {"quant_cfg": [{"quantizer_name": k, **v} for k, v in entries], "algorithm": "max"}
    return {"quant_cfg": dict(entries), "algorithm": "max"}


def set_kv_quantizers(model, enabled):
    for name, mod in model.named_modules():
        if name.endswith("k_bmm_quantizer") or name.endswith("v_bmm_quantizer"):
            mod.enable() if enabled else mod.disable()


def ct_form(tok, calib, out):
    import shutil
    from compressed_tensors.quantization import QuantizationArgs
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    if out.exists():
        shutil.rmtree(out)
    m = P.load_float(FLOAT, torch.float32)
    kv = QuantizationArgs(num_bits=8, type="float", strategy="tensor", dynamic=False, symmetric=True)
    recipe = QuantizationModifier(targets="Linear", scheme="NVFP4A16", ignore=["lm_head"], kv_cache_scheme=kv)
    ds = Dataset.from_dict({"input_ids": [list(c) for c in calib], "attention_mask": [[1] * len(c) for c in calib]})
    oneshot(model=m, recipe=recipe, dataset=ds, num_calibration_samples=len(calib),
            max_seq_length=max(len(c) for c in calib), shuffle_calibration_samples=False)
    m.save_pretrained(str(out), save_compressed=True)
    tok.save_pretrained(str(out), save_jinja_files=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "kv_fp8" / "qwen3"))
    ap.add_argument("--form", default="modelopt,ct")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(2)
    import modelopt.torch.quantization as mtq
    from safetensors import safe_open
    from transformers import AutoTokenizer

    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(str(FLOAT))
    calib = G.calibration(tok)
    if "ct" in a.form.split(","):
        ct_form(tok, calib, out / "ct-nvfp4a16-kvfp8")
    if "modelopt" not in a.form.split(","):
        return
    P.install_cpu_fake_quant()
    m = P.load_float(FLOAT, torch.float32)
    mtq.quantize(m, cfg(), P.forward_loop_of(calib))
    kv_q = [n for n, _ in m.named_modules() if n.endswith("_bmm_quantizer")]
    assert kv_q, "no KV quantizers were inserted"
    ck = out / "modelopt-w4a16-kvfp8"
    P.modelopt_export(m, ck, tok)
    hq = json.loads((ck / "hf_quant_config.json").read_text())
    assert hq["quantization"]["kv_cache_quant_algo"] == "FP8", hq
    scales = {}
    for f in sorted(ck.glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            for k in h.keys():
                if k.endswith("k_scale") or k.endswith("v_scale"):
                    scales[k] = float(h.get_tensor(k).float().reshape(-1)[0])
    assert scales, "the export holds no k/v scales"
    ref = P.modelopt_fake_quant_f32(m)
    set_kv_quantizers(ref, True)
    with_kv = P.logits_of(ref, PROMPT).numpy().astype("<f4")
    greedy = P.greedy(ref, PROMPT, 8)
    set_kv_quantizers(ref, False)
    without_kv = P.logits_of(ref, PROMPT).numpy().astype("<f4")
    (out / "logits_kvfp8.f32").write_bytes(with_kv.tobytes())
    (out / "logits_kvf32.f32").write_bytes(without_kv.tobytes())
    meta = {"ids": PROMPT, "greedy": greedy, "scales": scales, "n_vocab": int(with_kv.shape[1]),
            "max_abs_logit": float(np.abs(with_kv).max()),
            "kv_effect_max_abs": float(np.abs(with_kv - without_kv).max()), "versions": P.versions()}
    (out / "reference.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: meta[k] for k in ("scales", "kv_effect_max_abs", "max_abs_logit", "greedy")}, indent=1))


if __name__ == "__main__":
    main()
