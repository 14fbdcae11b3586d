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

--scaled: fixtures/mixed/qwen3/reference_scaled.json for the FP8 forms whose scale varies along
the input (tools/gen_scaled_fp8_fixtures.py), dequantized here with numpy and ml_dtypes only:
MXFP8 = E4M3 (ml_dtypes.float8_e4m3fn) times the E8M0 byte of its 32 inputs read as
ml_dtypes.float8_e8m0fnu (2^(byte - 127)), in float32; FP8 block = E4M3 times the float32 scale of
its 128 x 128 block (weight_scale, or DeepSeek's weight_scale_inv; a grid with its unit axes
dropped is read back to [ceil(n_out/128), ceil(n_in/128)]), one float32 product. The model is
built from the fixture's own config.json (without its quantization_config) and every tensor of
the file goes in, so a fixture with its own shapes (deepseek-fp8-block) needs no float source.
Run: .pyvenv/bin/python tools/mixed_reference.py [--scaled]
"""
import json
import pathlib
import sys

import numpy as np
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


def read_safetensors_np(path):
    """The file's tensors as numpy arrays of ml_dtypes' types, read from its header and bytes
    (safetensors' own numpy reader has no FP8 type)."""
    import ml_dtypes
    types = {"F8_E4M3": ml_dtypes.float8_e4m3fn, "U8": np.uint8, "F32": np.float32, "BF16": ml_dtypes.bfloat16,
             "F16": np.float16, "U32": np.uint32, "I64": np.int64, "I32": np.int32}
    b = pathlib.Path(path).read_bytes()
    n = int.from_bytes(b[:8], "little")
    header = json.loads(b[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=types[v["dtype"]]).reshape(v["shape"])
    return out


def dequantized_np(path, block):
    """{module or tensor name: float32 numpy}: every tensor of the file, scaled FP8 layers and NVFP4
    dequantized with numpy / ml_dtypes (FP8 per tensor or channel too)."""
    import ml_dtypes
    raw = read_safetensors_np(path)
    out, used = {}, set()
    for k, w in raw.items():
        if not (k.endswith(".weight") and w.dtype == ml_dtypes.float8_e4m3fn):
            continue
        m = k[:-7]
        sn = m + ".weight_scale" if m + ".weight_scale" in raw else m + ".weight_scale_inv"
        s = raw[sn]
        v = w.astype(np.float32)
        n_out, n_in = v.shape
        if s.dtype == np.uint8:  # MXFP8: E8M0 per 32
            sc = s.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
            assert sc.shape == (n_out, n_in // 32), (k, sc.shape)
            out[m] = v * np.repeat(sc, 32, axis=1)
        elif not block:  # per tensor or per output channel
            out[m] = v * (s.astype(np.float32).reshape(-1, 1) if s.size > 1 else s.astype(np.float32).reshape(()))
        else:  # 128 x 128 blocks
            br, bc = -(-n_out // 128), -(-n_in // 128)
            sc = s.astype(np.float32).reshape(br, bc)
            out[m] = v * np.repeat(np.repeat(sc, 128, axis=0), 128, axis=1)[:n_out, :n_in]
        used.update({k, sn, m + ".input_scale"})
    for k, w in raw.items():
        if (k.endswith(".weight") and w.dtype == np.uint8) or k.endswith(".weight_packed"):
            ct = k.endswith(".weight_packed")
            m = k[:-14] if ct else k[:-7]
            codes = np.stack([w & 15, w >> 4], axis=-1).reshape(w.shape[0], -1)
            v = E2M1.numpy()[codes]
            bs = np.repeat(raw[m + ".weight_scale"].astype(np.float32), 16, axis=1)
            s2 = (np.float32(1.0) / raw[m + ".weight_global_scale"].astype(np.float32).reshape(())) if ct else raw[m + ".weight_scale_2"].astype(np.float32).reshape(())
            out[m] = (v * bs) * s2
            used.update({k, m + ".weight_scale", m + ".weight_global_scale", m + ".weight_scale_2", m + ".input_scale", m + ".input_global_scale", m + ".weight_shape"})
    for k, w in raw.items():
        if k not in used and w.dtype != np.uint8 and w.dtype != ml_dtypes.float8_e4m3fn:
            out[k] = w.astype(np.float32)
    return out


def scaled_main():
    from transformers import AutoConfig, AutoModelForCausalLM
    root = G.ROOT / "fixtures" / "mixed" / "qwen3"
    ref = {}
    for form in ["modelopt-mxfp8", "modelopt-mxfp8-mix", "ct-mxfp8", "ct-fp8-block", "modelopt-fp8-block", "deepseek-fp8-block"]:
        d = root / form
        if not d.exists():
            continue
        c = json.loads((d / "config.json").read_text())
        c.pop("quantization_config", None)
        cfg = AutoConfig.for_model(**c)
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="eager").eval()
        deq = dequantized_np(d / "model.safetensors", "block" in form)
        params = dict(model.named_parameters())
        n = 0
        with torch.no_grad():
            for k, w in deq.items():
                name = k if k in params else k + ".weight"
                params[name].copy_(torch.from_numpy(w))
                n += 1
        if cfg.tie_word_embeddings:
            assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
        assert n == len(params) or (cfg.tie_word_embeddings and n == len(params)), (form, n, len(params))
        lg = P.logits_of(model, PROMPT)
        seq = list(PROMPT)
        for _ in range(8):
            seq.append(int(P.logits_of(model, seq)[-1].argmax()))
        ref[form] = {"ids": PROMPT, "greedy": seq[len(PROMPT):], "tensors": n, "logits": [[float(x) for x in row] for row in lg]}
        print(form, n, "tensors; greedy", ref[form]["greedy"], flush=True)
    (root / "reference_scaled.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")


def install(model, deq):
    """deq's layers into the float model: a Qwen3-MoE's experts into transformers 5's fused
    gate_up_proj / down_proj, a Nemotron-H's (non-gated) into its fused up_proj [E, I, H] /
    down_proj [E, H, I]; the checkpoint's "backbone." is transformers 5's "model."."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for m, w in deq.items():
            if m.startswith("backbone."):
                m = "model." + m[len("backbone."):]
            if ".mixer.experts." in m:
                head, rest = m.split(".mixer.experts.")
                e, proj = rest.split(".")
                params[head + ".mixer.experts." + proj][int(e)].copy_(w)
            elif ".mlp.experts." in m:
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
        for form_dir in sorted([*(root / arch).glob("*-mixed"), *(root / arch).glob("*-selective")]):
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
    if "--scaled" in sys.argv:
        scaled_main()
    else:
        main()
