"""What each producer wrote for a tiny MoE model (for tools/gen_moe_fixtures.py): tensor names of
layer 0 with the expert index as E, shapes, dtypes; the quantization config verbatim; per-expert
scale checks (gate vs up tensor scale, input scale per layer or per expert, suspicious global
scales); ModelOpt's calibration state (every quantizer's amax set?)."""
import json
import pathlib
import re

import torch

# How transformers 5.17 computes the router (modeling_<arch>.py, <Arch>TopKRouter.forward and the
# sparse MoE block), written out for the C++ side; the float reference runs it in float32.
ROUTER_DOC = {
    "qwen3_moe": "logits = x @ gate.weight^T (model dtype); p = softmax(logits, dtype=float32) over all 8 experts; "
                 "(w, idx) = torch.topk(p, 2) (sorted descending; ties to the lower index); norm_topk_prob=true: "
                 "w /= w.sum(); w cast to the model dtype; y = sum_k w_k * down_k(silu(gate_k x) * up_k x)",
    "mixtral": "logits = x @ gate.weight^T; p = softmax(logits.float()) over all 8 experts; (w, idx) = topk(p, 2); "
               "w /= w.sum() always (no config switch; equal to a softmax over the 2 selected logits); w stays float32 "
               "(no cast back); y = sum_k w_k * w2_k(silu(w1_k x) * w3_k x)",
    "olmoe": "logits = x @ gate.weight^T; p = softmax(logits, dtype=float32) over all 8 experts; (w, idx) = topk(p, 2); "
             "norm_topk_prob=false: w NOT renormalised (sums to < 1); w cast to the model dtype; "
             "y = sum_k w_k * down_k(silu(gate_k x) * up_k x)",
    "qwen2_moe": "routed part as olmoe (softmax float32 over 8, topk 2, norm_topk_prob=false: no renormalisation, cast "
                 "to model dtype) plus shared: y = routed + sigmoid(x @ shared_expert_gate.weight^T) * "
                 "shared_expert.down(silu(shared_expert.gate x) * shared_expert.up x), the sigmoid gate a scalar per token",
}

ROUTER_DOC["qwen3_moe_i64"] = ROUTER_DOC["qwen3_moe"]

EXPERT_RE = re.compile(r"\.experts\.(\d+)\.")


def st_tensors(d):
    from safetensors import safe_open
    out = {}
    for f in sorted(pathlib.Path(d).glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                out[k] = s.get_tensor(k)
    return out


def modelopt_amax_report(q):
    """Every enabled TensorQuantizer under an `experts` module: how many, which have no amax."""
    from modelopt.torch.quantization.nn import TensorQuantizer
    n, missing, inputs = 0, [], {}
    for name, mod in q.named_modules():
        if not isinstance(mod, TensorQuantizer) or ".experts" not in name or not mod.is_enabled:
            continue
        n += 1
        amax = getattr(mod, "amax", None)
        if amax is None or not torch.isfinite(amax).all() or float(amax.float().max()) <= 0:
            missing.append(name)
        if "input_quantizer" in name:
            inputs[name] = None if amax is None else float(amax.float().max())
    return {"enabled_expert_quantizers": n, "without_amax": missing, "expert_input_quantizers": inputs}


def _pattern(name):
    return EXPERT_RE.sub(".experts.E.", name)


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _scalar(t):
    return float(t.float().reshape(-1)[0]) if t.numel() >= 1 else None


def layer0(tensors):
    pats = {}
    for k, t in sorted(tensors.items()):
        if not k.startswith("model.layers.0."):
            continue
        p = _pattern(k)
        e = pats.setdefault(p, {"shape": list(t.shape), "dtype": _dtype(t), "count": 0})
        e["count"] += 1
        if e["shape"] != list(t.shape) or e["dtype"] != _dtype(t):
            e["varies"] = True
    return pats


def scale_checks(tensors, n_layers, n_experts, tscale, iscale):
    """Per layer: whether gate and up tensor scales are equal for every expert, the distinct
    input-scale values per projection across experts, and suspicious values (0, 1, inf, nan).
    Projection names as the file has them (Mixtral: w1/w3/w2 or gate_proj/up_proj/down_proj)."""
    mix = any(".experts.0.w1." in k for k in tensors)
    gate, up, down = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
    res = {"projection_names": [gate, up, down]}
    for l in range(n_layers):
        base = [k for k in tensors if k.startswith(f"model.layers.{l}.") and ".experts.0." in k]
        if not base:
            continue
        prefix = base[0].split(".experts.0.")[0] + ".experts"
        r = {"gate_up_tensor_scale_equal": [], "input_scale_values": {}, "suspicious": []}
        for e in range(n_experts):
            g, u = tensors.get(f"{prefix}.{e}.{gate}.{tscale}"), tensors.get(f"{prefix}.{e}.{up}.{tscale}")
            r["gate_up_tensor_scale_equal"].append(None if g is None or u is None else bool(torch.equal(g, u)))
            for proj in (gate, up, down):
                for s in (tscale, iscale):
                    t = tensors.get(f"{prefix}.{e}.{proj}.{s}")
                    if t is None:
                        continue
                    v = _scalar(t)
                    if v != v or v in (0.0, 1.0, float("inf")):
                        r["suspicious"].append(f"{prefix}.{e}.{proj}.{s}={v}")
        for proj in (gate, up, down):
            vals = [tensors.get(f"{prefix}.{e}.{proj}.{iscale}") for e in range(n_experts)]
            if any(v is not None for v in vals):
                r["input_scale_values"][proj] = sorted({_scalar(v) for v in vals if v is not None})
        res[f"layer{l}"] = r
    return res


def manifest(arch_dir, quant_state):
    arch_dir = pathlib.Path(arch_dir)
    cfg = json.loads((arch_dir / "float" / "config.json").read_text())
    n_layers = cfg["num_hidden_layers"]
    n_experts = cfg.get("num_experts") or cfg.get("num_local_experts")
    out = {"model_type": cfg["model_type"], "n_experts": n_experts, "forms": {}}
    for d in sorted(p for p in arch_dir.iterdir() if p.is_dir()):
        t = st_tensors(d)
        c = json.loads((d / "config.json").read_text())
        f = {"files": sorted(p.name for p in d.iterdir()),
             "non_layer_tensors": {k: {"shape": list(v.shape), "dtype": _dtype(v)} for k, v in sorted(t.items())
                                   if not k.startswith("model.layers.")},
             "layer0": layer0(t), "quantization_config": c.get("quantization_config")}
        hq = d / "hf_quant_config.json"
        if hq.exists():
            f["hf_quant_config"] = json.loads(hq.read_text())
        if "modelopt" in d.name:
            f["scales"] = scale_checks(t, n_layers, n_experts, "weight_scale_2", "input_scale")
        elif d.name.startswith("ct-"):
            f["scales"] = scale_checks(t, n_layers, n_experts, "weight_global_scale", "input_global_scale")
        routers = [k for k in t if re.search(r"\.(mlp|block_sparse_moe)\.(gate|shared_expert_gate)\.", k)]
        f["routers"] = {k: _dtype(t[k]) for k in sorted(routers)}
        if d.name in quant_state:
            f["calibration_state"] = quant_state[d.name]
        out["forms"][d.name] = f
    for name, st in quant_state.items():
        if name not in out["forms"]:
            out["forms"][name] = {"calibration_state": st}
    return out
