#!/usr/bin/env python3
"""Writes fixtures/mixed/<arch>/<form>/../reference.json: transformers' logits on the dequantized
weights of each mixed fixture (tools/gen_mixed_fixtures.py), what the engine's f32 mode computes.

Each quantized linear of the checkpoint is dequantized here from its stored tensors, without our
C++ code: FP8 E4M3 value (torch's float8_e4m3fn) times weight_scale (per tensor or per output
channel); NVFP4 codes (two per byte, low nibble first, E2M1 values 0 0.5 1 1.5 2 3 4 6 with the
sign in bit 3) times the E4M3 block scale of each 16 times the tensor scale (ModelOpt
weight_scale_2; compressed-tensors 1 / weight_global_scale). The float model of the same weights
(the fixture's source) gets them (a MoE's per-expert tensors go into transformers 5's fused
gate_up_proj [E, 2I, H] (gate rows first) and down_proj [E, H, I]) and runs in float32, eager.

reference.json: {form: {"ids": prompt, "logits": [n_pos][n_vocab], "greedy": 8 argmax tokens}}.
Run: .pyvenv/bin/python tools/mixed_reference.py
"""
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gen_mixed_fixtures as G  # noqa: E402
import producers as P  # noqa: E402

E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float32)
PROMPT = [17, 250, 3, 99, 402, 7, 311, 45]


def load(d):
    from safetensors import safe_open
    t = {}
    for f in sorted(d.glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            t.update({k: h.get_tensor(k) for k in h.keys()})
    return t


def dequantized(t):
    out = {}
    for k, w in t.items():
        if k.endswith(".weight") and w.dtype == torch.float8_e4m3fn:
            m = k[:-7]
            s = t[m + ".weight_scale"].float()
            out[m] = w.float() * (s.reshape(-1, 1) if s.numel() > 1 else s.reshape(()))
        elif (k.endswith(".weight") and w.dtype == torch.uint8) or k.endswith(".weight_packed"):
            ct = k.endswith(".weight_packed")
            m = k[:-14] if ct else k[:-7]
            codes = torch.stack([w & 15, w >> 4], dim=-1).reshape(w.shape[0], -1).long()
            v = E2M1[codes]
            bs = t[m + ".weight_scale"].float().repeat_interleave(16, dim=1)
            s2 = 1.0 / t[m + ".weight_global_scale"].float() if ct else t[m + ".weight_scale_2"].float()
            out[m] = v * bs * s2.reshape(())
    return out


def install(model, deq):
    params = dict(model.named_parameters())
    with torch.no_grad():
        for m, w in deq.items():
            if ".mlp.experts." in m:
                head, rest = m.split(".mlp.experts.")
                e, proj = rest.split(".")
                e = int(e)
                if proj == "down_proj":
                    params[head + ".mlp.experts.down_proj"][e].copy_(w)
                else:
                    gu = params[head + ".mlp.experts.gate_up_proj"]
                    half = gu.shape[1] // 2
                    (gu[e, :half] if proj == "gate_proj" else gu[e, half:]).copy_(w)
            else:
                params[m + ".weight"].copy_(w)


def main():
    root = G.ROOT / "fixtures" / "mixed"
    for arch, float_dir in G.FLOAT.items():
        ref = {}
        for form_dir in sorted((root / arch).glob("*-mixed")):
            model = P.load_float(float_dir)
            deq = dequantized(load(form_dir))
            install(model, deq)
            lg = P.logits_of(model, PROMPT)
            seq = list(PROMPT)
            for _ in range(8):
                seq.append(int(P.logits_of(model, seq)[-1].argmax()))
            ref[form_dir.name] = {"ids": PROMPT, "greedy": seq[len(PROMPT):], "dequantized_layers": len(deq),
                                  "logits": [[float(x) for x in row] for row in lg]}
            print(arch, form_dir.name, len(deq), "layers dequantized; greedy", ref[form_dir.name]["greedy"], flush=True)
        (root / arch / "reference.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
