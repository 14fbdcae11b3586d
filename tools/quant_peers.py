#!/usr/bin/env python3
"""The peers of scripts/quant-table.sh: a float HF model (tools/gen_smollm2_hf.py's float/ or a
fixture's float directory) quantized to NVFP4 by ModelOpt's AWQ-lite (mtq.quantize with
NVFP4_AWQ_LITE_CFG, then export_hf_checkpoint: quant_algo NVFP4_AWQ, per-input-channel
pre_quant_scale, W4A4 input_scale) and by llm-compressor (oneshot, scheme NVFP4, W4A4), both on
the CPU (tools/producers.py: ModelOpt's fake-quant op dispatched to its own NVFP4QTensor), both
calibrated on the same text as `nvfp4 convert --calibrate`: the whole file tokenized by the
model's tokenizer (no special tokens added, as the engine's calibration) and cut into windows of
--ctx tokens (the engine's windows). Writes OUT/modelopt-awq-lite/ and OUT/ct-nvfp4-cal/ and
OUT/times.json ({form: seconds of quantize + export, wall}).

Run: /work/tools-venv/v/bin/python tools/quant_peers.py FLOAT_DIR OUT_DIR [--calib data/calibration.txt]
     [--ctx 512] [--forms modelopt-awq-lite,ct-nvfp4-cal]
"""
import argparse
import json
import os
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402

FORMS = ["modelopt-awq-lite", "ct-nvfp4-cal"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("float_dir")
    ap.add_argument("out")
    ap.add_argument("--calib", default=str(pathlib.Path(__file__).resolve().parent.parent / "data" / "calibration.txt"))
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(a.float_dir)
    ids = tok(pathlib.Path(a.calib).read_text(), add_special_tokens=False)["input_ids"]
    calib = [ids[s:s + a.ctx] for s in range(0, len(ids), a.ctx)]
    print(f"calibration: {len(ids)} tokens in {len(calib)} windows", flush=True)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tpath = out / "times.json"
    times = json.loads(tpath.read_text()) if tpath.exists() else {}
    forms = a.forms.split(",")
    if "modelopt-awq-lite" in forms:
        import modelopt.torch.quantization as mtq
        P.install_cpu_fake_quant()
        model = P.load_float(a.float_dir)
        t0 = time.time()
        mtq.quantize(model, mtq.NVFP4_AWQ_LITE_CFG, P.forward_loop_of(calib))
        P.modelopt_export(model, out / "modelopt-awq-lite", tok)
        times["modelopt-awq-lite"] = round(time.time() - t0, 1)
        tpath.write_text(json.dumps(times) + "\n")
        print("wrote", out / "modelopt-awq-lite", times["modelopt-awq-lite"], "s", flush=True)
        del model
    if "ct-nvfp4-cal" in forms:
        t0 = time.time()
        P.ct_quantize_save(a.float_dir, "NVFP4", calib, out / "ct-nvfp4-cal", tok)
        times["ct-nvfp4-cal"] = round(time.time() - t0, 1)
        tpath.write_text(json.dumps(times) + "\n")
        print("wrote", out / "ct-nvfp4-cal", times["ct-nvfp4-cal"], "s", flush=True)
    times["versions"] = P.versions()
    tpath.write_text(json.dumps(times) + "\n")


if __name__ == "__main__":
    main()
