#!/usr/bin/env python3
"""Writes fixtures/arch/<arch>-awq/: ModelOpt's NVFP4_AWQ form of one tiny fixture model
(tools/gen_arch_fixtures.py's fixtures/arch/<arch>/float, loaded in bfloat16 as that script's
producers do) and the logits to check the runtime's pre_quant_scale against.

  modelopt-nvfp4-awq/  mtq.quantize(NVFP4_AWQ_LITE_CFG) calibrated on the same 8 lines of
                       data/calibration.txt as the other ModelOpt forms (64 ids each), then
                       export_hf_checkpoint: quant_algo NVFP4_AWQ, per layer weight (W * s
                       quantized), weight_scale, weight_scale_2, input_scale; q/k/v and gate/up
                       get one scale per group folded into the preceding norm weight (no
                       pre_quant_scale tensor), o_proj and down_proj keep pre_quant_scale
  logits.json/.f32     as tools/gen_arch_fixtures.py's (same prompts, read from
                       fixtures/arch/<arch>/logits.json), sets:
    modelopt_awq_a16   ModelOpt's fake-quantized AWQ model with the export's resmoothing
                       applied in bfloat16 (as the export) and then cast to float32, with its
                       input quantizers disabled: TensorQuantizer.forward still multiplies by
                       pre_quant_scale (before its `_disabled` check), the weights are the
                       exported NVFP4 values, activations float (what the runtime's a16/f32 run)
    modelopt_awq       the same with the input quantizers on (W4A4: what the runtime's w4a4 runs)

Run: /work/tools-venv/v/bin/python tools/gen_awq_fixture.py [--arch qwen2]
"""
import argparse
import json
import os
import pathlib
import shutil
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SETS = ["modelopt_awq_a16", "modelopt_awq"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="qwen2")
    ap.add_argument("--root", default=str(ROOT / "fixtures" / "arch"))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    import modelopt.torch.quantization as mtq
    from transformers import AutoTokenizer
    src = pathlib.Path(a.root) / a.arch
    out = pathlib.Path(a.root) / (a.arch + "-awq")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tok = AutoTokenizer.from_pretrained(str(src / "float"))
    base = json.loads((src / "logits.json").read_text())
    prompts = [p["ids"] for p in base["prompts"]]
    lines = [l for l in (ROOT / "data" / "calibration.txt").read_text().split("\n") if l.strip()]
    calib = [tok(l)["input_ids"][:64] for l in lines[:8]]

    model16 = P.load_float(src / "float", torch.bfloat16)
    P.install_cpu_fake_quant()
    t0 = time.time()
    mtq.quantize(model16, mtq.NVFP4_AWQ_LITE_CFG, P.forward_loop_of(calib))
    P.modelopt_export(model16, out / "modelopt-nvfp4-awq", tok)
    seconds = round(time.time() - t0, 2)
    # the export's resmoothing on a bf16 copy, as export_hf_checkpoint does it (it folds the
    # q/k/v and gate/up pre_quant_scale into the preceding norm weight, in bf16), then float32:
    # the norm weights and pre_quant_scales are then the exported bf16 values
    from modelopt.torch.export.unified_export_hf import requantize_resmooth_fused_llm_layers
    import copy
    q16 = copy.deepcopy(model16)
    with torch.no_grad():
        requantize_resmooth_fused_llm_layers(q16)
    q32 = q16.float()
    logits = {"modelopt_awq": [P.logits_of(q32, ids) for ids in prompts]}
    n_off = 0
    for name, mod in q32.named_modules():
        if name.endswith("input_quantizer") and hasattr(mod, "disable") and mod.is_enabled:
            mod.disable()
            n_off += 1
    assert n_off > 0
    logits["modelopt_awq_a16"] = [P.logits_of(q32, ids) for ids in prompts]
    rec = {"arch": a.arch + "-awq", "from": a.arch, "n_vocab": base["n_vocab"], "versions": P.versions(),
           "logits_file": "logits.f32", "sets": SETS, "quantize_seconds": seconds, "prompts": []}
    offset = 0
    for ids in prompts:
        rec["prompts"].append({"ids": ids, "offset": offset})
        offset += len(SETS) * len(ids) * base["n_vocab"]
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in SETS:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    print("wrote", out, "in", seconds, "s;", n_off, "input quantizers disabled for", SETS[0])


if __name__ == "__main__":
    main()
