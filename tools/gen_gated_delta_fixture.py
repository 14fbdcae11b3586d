#!/usr/bin/env python3
"""Writes fixtures/gated_delta/cases.json: the Gated DeltaNet token mixer of Qwen3.5 / Qwen3-Next
(its causal conv1d with SiLU, L2-normalised q and k, g = -exp(A_log) * softplus(a + dt_bias),
beta = sigmoid(b), the delta rule per value head, the gated RMSNorm with SiLU(z)) computed by
transformers' own functions on random inputs, for src/runtime/gated_delta.cpp to be checked
against (tests/test_gated_delta.cpp). No torch is needed to read it.

Each case: the shape (key heads, value heads, head dims, conv kernel), the weights (conv1d
[conv_dim][kernel], A_log, dt_bias, the gated norm's weight, eps), T tokens of the in_proj
outputs (qkv [conv_dim] in transformers' q|k|v channel order, z [value_dim], a and b [value
heads]), and what transformers computes: y [T][value_dim] (the normed, gated output that goes
into out_proj) by its token-by-token form (torch_recurrent_gated_delta_rule, what it decodes
with) and by its chunked form (torch_chunk_gated_delta_rule, what it runs prompts with), and
the final states (conv state: the last kernel-1 inputs per channel, oldest first; recurrent
state [value heads][d_k][d_v]).

Run: PY tools/gen_gated_delta_fixture.py   (torch, transformers >= 5.17)
"""
import json
import pathlib

import torch
import torch.nn.functional as F
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5RMSNormGated
from transformers.models.qwen3_next.modeling_qwen3_next import (causal_conv1d_fn, torch_chunk_gated_delta_rule,
                                                                torch_recurrent_gated_delta_rule)

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = [  # (key heads, value heads, d_k, d_v, kernel, tokens, seed)
    (2, 4, 16, 16, 4, 12, 1),
    (1, 1, 8, 24, 4, 7, 2),
    (2, 2, 32, 16, 3, 9, 3),
]


def case(nk, nv, dk, dv, kern, T, seed):
    g = torch.Generator().manual_seed(seed)
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    r = lambda *s, scale=1.0: (scale * torch.randn(*s, generator=g)).float()
    conv_w = r(conv_dim, kern, scale=0.5)
    A_log = torch.log(torch.empty(nv).uniform_(0.5, 8, generator=g))
    dt_bias = r(nv, scale=0.5)
    norm_w = 1 + r(dv, scale=0.2)
    eps = 1e-6
    qkv, z, a, b = r(T, conv_dim), r(T, value_dim), r(T, nv), r(T, nv)

    x = F.silu(causal_conv1d_fn(qkv.T[None], conv_w, None, activation=None))[0].T  # [T, conv_dim]
    q, k, v = torch.split(x, [key_dim, key_dim, value_dim], dim=-1)
    q, k, v = q.reshape(1, T, nk, dk), k.reshape(1, T, nk, dk), v.reshape(1, T, nv, dv)
    beta = b.sigmoid()[None]
    gg = (-A_log.exp() * F.softplus(a + dt_bias))[None]
    if nv // nk > 1:
        q, k = q.repeat_interleave(nv // nk, dim=2), k.repeat_interleave(nv // nk, dim=2)
    norm = Qwen3_5RMSNormGated(dv, eps=eps)
    with torch.no_grad():
        norm.weight.copy_(norm_w)
    out = {}
    for name, fn in [("recurrent", torch_recurrent_gated_delta_rule), ("chunked", torch_chunk_gated_delta_rule)]:
        o, state = fn(q, k, v, g=gg, beta=beta, initial_state=None, output_final_state=True, use_qk_l2norm_in_kernel=True)
        with torch.no_grad():
            y = norm(o.reshape(-1, dv), z.reshape(-1, dv)).reshape(T, value_dim)
        out[name] = (y, state[0])
    conv_state = qkv[T - (kern - 1):].T  # [conv_dim][kernel-1], oldest first
    L = lambda t: [float(f) for f in t.reshape(-1).tolist()]
    return {"n_k_heads": nk, "n_v_heads": nv, "d_k": dk, "d_v": dv, "conv_kernel": kern, "tokens": T, "eps": eps,
            "conv_w": L(conv_w), "A_log": L(A_log), "dt_bias": L(dt_bias), "norm_w": L(norm_w),
            "qkv": L(qkv), "z": L(z), "a": L(a), "b": L(b),
            "y_recurrent": L(out["recurrent"][0]), "y_chunked": L(out["chunked"][0]),
            "state_recurrent": L(out["recurrent"][1]), "state_chunked": L(out["chunked"][1]),
            "conv_state": L(conv_state)}


def main():
    import transformers
    cases = [case(*c) for c in CASES]
    d = ROOT / "fixtures" / "gated_delta"
    d.mkdir(parents=True, exist_ok=True)
    (d / "cases.json").write_text(json.dumps({"versions": {"torch": torch.__version__, "transformers": transformers.__version__},
                                              "cases": cases}) + "\n")
    print("wrote", d / "cases.json", [c["tokens"] for c in cases])


if __name__ == "__main__":
    main()
