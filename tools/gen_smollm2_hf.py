#!/usr/bin/env python3
"""Writes models/smollm2-hf/{float,modelopt-nvfp4,modelopt-w4a16,ct-nvfp4,ct-nvfp4a16}/ (not
committed: models/ is git-ignored) and fixtures/arch/smollm2_logits.json (committed, small), and
publishes each directory as a symlink under /work/shared-out/smollm2-hf/<form>/ as soon as it
exists (float first).

float: SmolLM2-135M-Instruct from the bundled Q4_1 GGUF through transformers' own GGUF loader
(AutoModelForCausalLM.from_pretrained(dir, gguf_file=name), AutoTokenizer likewise; the loader
dequantizes with PyPI gguf and un-permutes q/k), saved by save_pretrained in float32 (so the
weights are exactly the GGUF's dequantized values) with the tokenizer and its chat template (in tokenizer_config.json: save_jinja_files=False). The
loader leaves `quantization_config: {quant_method: gguf}` in the config and a GGUF quantizer on the
model (save_pretrained refuses it); the weights are plain float after loading, so they are moved
into a fresh model of the same class and config without it (a float checkpoint).

The four quantized forms are made from the float directory by the real producers on the CPU
(tools/producers.py: ModelOpt NVFP4_DEFAULT_CFG / W4A16_NVFP4_CFG + export_hf_checkpoint; the one
non-ModelOpt step is explained there; llm-compressor oneshot NVFP4 / NVFP4A16 + save_compressed),
calibrated on data/calibration.txt's first lines.

smollm2_logits.json: transformers' float32 logits of the float model on two short prompts: per
position argmax and logsumexp, the last position's top-50 (ids, logits) and a 16-token greedy
continuation; the same top-50/argmax for ModelOpt's fake-quantized W4A16 and NVFP4 models
(modelopt_fq_w4a16 / modelopt_fq_nvfp4: float32, with the export's fused amax, see
tools/producers.py). `--forms` limits the directories written (the logits are always made; e.g.
`--forms none` for the logits alone).

Run: NVFP4_SMOLLM2_GGUF=$(bash scripts/model-path.sh) /work/tools-venv/v/bin/python tools/gen_smollm2_hf.py
     [--out models/smollm2-hf] [--shared /work/shared-out/smollm2-hf] [--forms float,...]
"""
import argparse
import json
import os
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORMS = ["float", "modelopt-nvfp4", "modelopt-w4a16", "ct-nvfp4", "ct-nvfp4a16"]
PROMPTS = ["The capital of France is",
           "<|im_start|>user\nWhat is 12 * 7?<|im_end|>\n<|im_start|>assistant\n"]


def record(model, ids, top=50, greedy=0):
    lg = P.logits_of(model, ids)
    last = lg[-1]
    v, i = torch.topk(last, top)
    out = {"argmax": lg.argmax(-1).tolist(), "logsumexp": [float(f"{x:.8g}") for x in torch.logsumexp(lg.double(), -1).tolist()],
           "top_ids": i.tolist(), "top_logits": [float(f"{x:.8g}") for x in v.tolist()]}
    if greedy:
        with torch.no_grad():
            g = model.generate(torch.tensor([ids]), max_new_tokens=greedy, do_sample=False)
        out["greedy"] = g[0, len(ids):].tolist()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "models" / "smollm2-hf"))
    ap.add_argument("--shared", default="/work/shared-out/smollm2-hf")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--logits", default=str(ROOT / "fixtures" / "arch" / "smollm2_logits.json"))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    forms = a.forms.split(",")
    out = pathlib.Path(a.out)
    fdir = out / "float"
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if "float" in forms or not fdir.exists():
        gguf = os.environ["NVFP4_SMOLLM2_GGUF"]
        d, n = os.path.split(gguf)
        loaded = AutoModelForCausalLM.from_pretrained(d, gguf_file=n, dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained(d, gguf_file=n)
        cfg = loaded.config
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        cfg.architectures = [type(loaded).__name__]
        model = type(loaded)(cfg).to(torch.float32).eval()  # the same weights, no GGUF quantizer attached
        missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
        assert not unexpected and all("rotary" in k for k in missing), (missing, unexpected)
        model.generation_config = loaded.generation_config
        del loaded
        # transformers' GGUF tokenizer loader names <|im_start|> as eos; the GGUF (and the
        # published tokenizer_config) say tokenizer.ggml.eos_token_id 2 = <|im_end|>, pad 2.
        tok.eos_token = tok.convert_ids_to_tokens(cfg.eos_token_id)
        tok.pad_token = tok.convert_ids_to_tokens(cfg.pad_token_id)
        model.save_pretrained(str(fdir))
        tok.save_pretrained(str(fdir), save_jinja_files=False)
        if a.shared:
            P.publish(fdir, pathlib.Path(a.shared) / "float")
        print("wrote", fdir, flush=True)
    model = P.load_float(fdir)
    tok = AutoTokenizer.from_pretrained(str(fdir))
    lines = (ROOT / "data" / "calibration.txt").read_text().split("\n")
    calib = [tok(t)["input_ids"][:128] for t in lines if t.strip()][:8]
    prompts = [tok(p)["input_ids"] for p in PROMPTS]
    rec = {"source": os.path.basename(os.environ.get("NVFP4_SMOLLM2_GGUF", "")), "versions": P.versions(),
           "prompts": [{"text": t, "ids": ids, "float": record(model, ids, greedy=16)} for t, ids in zip(PROMPTS, prompts)]}
    for form, algo in [("modelopt-w4a16", "w4a16"), ("modelopt-nvfp4", "nvfp4")]:
        q = P.modelopt_quantize(model, algo, calib)
        fq = P.modelopt_fake_quant_f32(q)
        for p, ids in zip(rec["prompts"], prompts):
            p[form.replace("modelopt-", "modelopt_fq_")] = record(fq, ids)
        del fq
        if form in forms:
            P.modelopt_export(q, out / form, tok)
            if a.shared:
                P.publish(out / form, pathlib.Path(a.shared) / form)
            print("wrote", out / form, flush=True)
        del q
    for form, scheme in [("ct-nvfp4a16", "NVFP4A16"), ("ct-nvfp4", "NVFP4")]:
        if form not in forms:
            continue
        P.ct_quantize_save(fdir, scheme, calib, out / form, tok)
        if a.shared:
            P.publish(out / form, pathlib.Path(a.shared) / form)
        print("wrote", out / form, flush=True)
    pathlib.Path(a.logits).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(a.logits).write_text(json.dumps(rec, indent=None) + "\n")
    print("wrote", a.logits)


if __name__ == "__main__":
    main()
