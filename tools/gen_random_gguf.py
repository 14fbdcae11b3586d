#!/usr/bin/env python3
"""Random-weight NVFP4 GGUFs at real model shapes, in llama.cpp's layout, for benchmarks.

  python tools/gen_random_gguf.py SHAPE OUT.gguf --tokenizer-from SMOLLM2.gguf [--seed N]
  python tools/gen_random_gguf.py SHAPE OUT.gguf --tokenizer-from SMOLLM2.gguf --float f16
  python tools/gen_random_gguf.py --list

SHAPE is one of SHAPES below: the dense Llama 3.x shapes (llama arch; tied or untied head as the
originals), two MoE shapes (olmoe, qwen3moe) with stacked experts, the Gated DeltaNet hybrids
Qwen3.6-27B and Qwen3.6-35B-A3B (qwen35, qwen35moe: llama.cpp's layout of src/io/hybrid_layout.h) and
Nemotron 3 Nano 30B-A3B (nemotron_h_moe: src/io/nemotron_layout.h). The tokenizer (and so the
vocabulary) is SmolLM2's, copied from the given GGUF: the weights are random, only the bytes a
token reads matter. Rope scaling (Llama 3's rope_freqs) is left out; rope base is the original's.

Layout, as `nvfp4 convert` and llama.cpp's convert_hf_to_gguf.py write NVFP4:
  - linear weights: ggml type NVFP4 (40), 36-byte blocks of 64 values (4 UE4M3 block scales, then
    32 bytes of E2M1 nibbles), ne = [n_in, n_out]; a `<name>.scale` F32 [1] companion (the
    per-tensor scale2);
  - MoE experts: blk.N.ffn_{gate,up,down}_exps.weight NVFP4, ne = [n_in, n_out, n_expert], and
    blk.N.ffn_{gate,up,down}_exps.scale F32 [n_expert]; router blk.N.ffn_gate_inp.weight F32
    ne = [hidden, n_expert];
  - token_embd (and output when untied) F16; norms F32 (q/k norms: full width for olmoe, one head
    for qwen3moe).
Block scales are drawn from E4M3 0.5..1.875 (bytes 0x30..0x3F: finite, sign clear), nibbles
uniformly, and scale2 = 1 / (3 * sqrt(n_in)), so activations stay finite and of order one.

--float f16 writes the same shape as an F16 source instead (file type MOSTLY_F16, no `.scale`
companions): every linear weight F16 drawn from N(0, 1/n_in), for quantizers to turn into their own
4-bit files side by side (scripts/bench-vs-ik.sh: `nvfp4 convert` and ik_llama.cpp's llama-quantize).

Streamed: the header and tensor table first, then one tensor at a time (the largest held is one
stacked expert tensor or the embedding, a few hundred MB), so 8B/30B files need no RAM to match.
"""
import argparse
import math
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:  # the repository's tools venv has it; llama.cpp's gguf-py works too
    sys.exit("gen_random_gguf: needs the `gguf` package (pip install gguf)")

NVFP4 = gguf.GGMLQuantizationType.NVFP4

# name: arch, layers, hidden, heads, kv heads, head_dim, dense MLP (or MoE: expert width, experts,
# used), tied head, rope base, rms eps, context, q/k norm (None, "full", "head").
SHAPES = {
    "llama-1b": dict(arch="llama", layers=16, hidden=2048, heads=32, kv=8, head_dim=64, ff=8192,
                     tied=True, rope=500000.0, eps=1e-5, ctx=131072),
    "llama-3b": dict(arch="llama", layers=28, hidden=3072, heads=24, kv=8, head_dim=128, ff=8192,
                     tied=True, rope=500000.0, eps=1e-5, ctx=131072),
    "llama-8b": dict(arch="llama", layers=32, hidden=4096, heads=32, kv=8, head_dim=128, ff=14336,
                     tied=False, rope=500000.0, eps=1e-5, ctx=131072),
    # OLMoE-1B-7B-0924: intermediate_size 1024 is the expert width (convert writes it as
    # feed_forward_length; there is no expert_feed_forward_length for olmoe).
    "olmoe-1b-7b": dict(arch="olmoe", layers=16, hidden=2048, heads=16, kv=16, head_dim=128, ff=1024,
                        experts=64, used=8, expert_ff=None, qk_norm="full",
                        tied=False, rope=10000.0, eps=1e-5, ctx=4096),
    # OLMoE-1B-7B's shape in the qwen3moe layout (q/k norms per head, not full width), for peers
    # without the olmoe architecture (ik_llama.cpp 8337e4cd refuses it): the same bytes a token.
    "olmoe-1b-7b-qwen3moe": dict(arch="qwen3moe", layers=16, hidden=2048, heads=16, kv=16, head_dim=128,
                                 ff=1024, experts=64, used=8, expert_ff=1024, qk_norm="head",
                                 tied=False, rope=10000.0, eps=1e-5, ctx=4096),
    # Qwen3-30B-A3B: intermediate_size 6144 (unused by the MoE layers), moe_intermediate_size 768.
    "qwen3-30b-a3b": dict(arch="qwen3moe", layers=48, hidden=2048, heads=32, kv=4, head_dim=128, ff=6144,
                          experts=128, used=8, expert_ff=768, qk_norm="head",
                          tied=False, rope=1000000.0, eps=1e-6, ctx=40960),
    # Gated DeltaNet hybrids (llama.cpp's qwen35 / qwen35moe layout: src/io/hybrid_layout.h): every
    # 4th layer full attention (q_proj with its output gate: 2 x q rows; q/k norms; RoPE over 64 of
    # 256 dimensions), the others linear attention (linear: key heads, value heads, head size).
    # Qwen3.6-27B: dense SwiGLU 17408. Qwen3.6-35B-A3B: 256 experts of 512, 8 used, shared 512.
    "qwen3.6-27b": dict(arch="qwen35", layers=64, hidden=5120, heads=24, kv=4, head_dim=256, ff=17408,
                        qk_norm="head", tied=False, rope=10000000.0, eps=1e-6, ctx=262144,
                        hybrid=dict(interval=4, k_heads=16, v_heads=48, d=128, conv=4, n_rot=64)),
    "qwen3.6-35b-a3b": dict(arch="qwen35moe", layers=40, hidden=2048, heads=16, kv=2, head_dim=256, ff=512,
                            experts=256, used=8, expert_ff=512, shared_ff=512, qk_norm="head",
                            tied=False, rope=10000000.0, eps=1e-6, ctx=262144,
                            hybrid=dict(interval=4, k_heads=16, v_heads=32, d=128, conv=4, n_rot=64)),
    # Nemotron 3 Nano 30B-A3B (llama.cpp's nemotron_h_moe layout: src/io/nemotron_layout.h): layers
    # by the pattern (M Mamba-2, E MoE, * attention without RoPE, each after its one RMSNorm);
    # Mamba-2 64 heads of 64, state 128, 8 groups, conv 4; MoE 128 non-gated squared-ReLU experts
    # of 1856, 6 used, a shared expert of 3712, sigmoid router with a correction bias, scale 2.5.
    "nemotron3-nano-30b-a3b": dict(arch="nemotron_h_moe", layers=52, hidden=2688, heads=32, kv=2, head_dim=128, ff=1856,
                                   experts=128, used=6, expert_ff=1856, shared_ff=3712, qk_norm=None,
                                   tied=False, rope=10000.0, eps=1e-5, ctx=262144,
                                   nemotron=dict(pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                                                 m_heads=64, m_head_dim=64, d_state=128, groups=8, conv=4, scale=2.5)),
    # Gemma 4 26B-A4B (llama.cpp's gemma4 layout: src/io/gemma4_layout.h): 30 layers, every 6th
    # global (head 512, 2 KV heads, K = V: no attn_v, proportional RoPE over 64 of 256 pairs
    # through rope_freqs), the others sliding (window 1024, head 256, 8 KV heads); each layer a
    # GeGLU MLP of 2112 beside 128 experts of 704, 8 used (gate and up apart, as NVFP4 experts
    # are in that layout; the router's per-expert scale folded into ffn_down_exps.scale); four
    # norms, a layer scalar; tied head; logits capped at 30. The vocabulary is SmolLM2's (49152),
    # not Gemma's 262144: the head reads 5.3x fewer bytes than the release's.
    "gemma4-26b-a4b": dict(arch="gemma4", layers=30, hidden=2816, heads=16, kv=8, head_dim=256, ff=2112,
                           experts=128, used=8, expert_ff=704, qk_norm="head", tied=True, rope=1000000.0,
                           eps=1e-6, ctx=262144,
                           gemma4=dict(every=6, window=1024, head_g=512, kv_g=2, rot_pairs_g=64, rope_swa=10000.0, cap=30.0)),
    # Muse Glimmer 30B (transformers' MuseGlimmerTextConfig defaults; llama.cpp's muse-glimmer
    # layout): 52 dense layers, sliding (window 2048, RoPE) but every 4th from the last, which is
    # global without position encoding; q/k RMS-normed per head, an attention output gate (the q
    # width), four norms; untied head, logits times output_multiplier then capped at 20. The
    # vocabulary is SmolLM2's (49152), not the release's 202048: the head reads 4.1x fewer bytes.
    "muse-glimmer-30b": dict(arch="muse-glimmer", layers=52, hidden=6656, heads=32, kv=2, head_dim=128, ff=19968,
                             tied=False, rope=500000.0, eps=1e-5, ctx=131072,
                             muse=dict(window=2048, cap=20.0, scale=0.19611613513818404)),
}


def muse_plan(s, t, lin):
    """The blocks of a muse-glimmer shape (llama.cpp's tensor names and shapes)."""
    h, hd = s["hidden"], s["head_dim"]
    qd, kvd = s["heads"] * hd, s["kv"] * hd
    for i in range(s["layers"]):
        b = f"blk.{i}."
        t.append((b + "attn_norm.weight", (h,), "f32", 0))
        lin(b + "attn_q", qd, h)
        lin(b + "attn_k", kvd, h)
        lin(b + "attn_v", kvd, h)
        lin(b + "attn_gate", qd, h)
        lin(b + "attn_output", h, qd)
        t.append((b + "attn_q_norm.weight", (hd,), "f32", 0))
        t.append((b + "attn_k_norm.weight", (hd,), "f32", 0))
        t.append((b + "post_attention_norm.weight", (h,), "f32", 0))
        t.append((b + "ffn_norm.weight", (h,), "f32", 0))
        lin(b + "ffn_gate", s["ff"], h)
        lin(b + "ffn_up", s["ff"], h)
        lin(b + "ffn_down", h, s["ff"])
        t.append((b + "post_ffw_norm.weight", (h,), "f32", 0))


def gemma4_plan(s, t, lin):
    """The blocks of a gemma4 shape (llama.cpp's tensor names and shapes)."""
    h, g = s["hidden"], s["gemma4"]
    e, eff = s["experts"], s["expert_ff"]
    for i in range(s["layers"]):
        b = f"blk.{i}."
        glob = (i + 1) % g["every"] == 0
        hd, kv = (g["head_g"], g["kv_g"]) if glob else (s["head_dim"], s["kv"])
        t.append((b + "attn_norm.weight", (h,), "f32", 0))
        lin(b + "attn_q", s["heads"] * hd, h)
        lin(b + "attn_k", kv * hd, h)
        if not glob:
            lin(b + "attn_v", kv * hd, h)
        lin(b + "attn_output", h, s["heads"] * hd)
        t.append((b + "attn_q_norm.weight", (hd,), "f32", 0))
        t.append((b + "attn_k_norm.weight", (hd,), "f32", 0))
        t.append((b + "post_attention_norm.weight", (h,), "f32", 0))
        t.append((b + "layer_output_scale.weight", (1,), "f32", 0))
        t.append((b + "ffn_norm.weight", (h,), "f32", 0))
        lin(b + "ffn_gate", s["ff"], h)
        lin(b + "ffn_up", s["ff"], h)
        lin(b + "ffn_down", h, s["ff"])
        t.append((b + "post_ffw_norm.weight", (h,), "f32", 0))
        t.append((b + "ffn_gate_inp.weight", (e, h), "router", h))
        t.append((b + "ffn_gate_inp.scale", (h,), "f32", 0))
        t.append((b + "pre_ffw_norm_2.weight", (h,), "f32", 0))
        t.append((b + "post_ffw_norm_1.weight", (h,), "f32", 0))
        t.append((b + "post_ffw_norm_2.weight", (h,), "f32", 0))
        lin(b + "ffn_gate_exps", eff, h, (e,))
        lin(b + "ffn_up_exps", eff, h, (e,))
        lin(b + "ffn_down_exps", h, eff, (e,))


def nemotron_plan(s, t, lin):
    """The blocks of a nemotron_h_moe shape (llama.cpp's tensor names and shapes)."""
    h, hd, nm = s["hidden"], s["head_dim"], s["nemotron"]
    inner = nm["m_heads"] * nm["m_head_dim"]
    conv_dim = inner + 2 * nm["groups"] * nm["d_state"]
    e, ff, sf = s["experts"], s["expert_ff"], s["shared_ff"]
    for i, kind in enumerate(nm["pattern"][:s["layers"]]):
        b = f"blk.{i}."
        t.append((b + "attn_norm.weight", (h,), "f32", 0))
        if kind == "M":
            lin(b + "ssm_in", 2 * inner + 2 * nm["groups"] * nm["d_state"] + nm["m_heads"], h)
            t.append((b + "ssm_conv1d.weight", (conv_dim, nm["conv"]), "conv", nm["conv"]))
            t.append((b + "ssm_conv1d.bias", (conv_dim,), "router", 1))
            t.append((b + "ssm_dt.bias", (nm["m_heads"],), "router", 1))
            t.append((b + "ssm_a", (nm["m_heads"], 1), "ssm_a", 0))
            t.append((b + "ssm_d", (nm["m_heads"], 1), "f32", 0))
            t.append((b + "ssm_norm.weight", (nm["groups"], inner // nm["groups"]), "f32", 0))
            lin(b + "ssm_out", h, inner)
        elif kind == "*":
            lin(b + "attn_q", s["heads"] * hd, h)
            lin(b + "attn_k", s["kv"] * hd, h)
            lin(b + "attn_v", s["kv"] * hd, h)
            lin(b + "attn_output", h, s["heads"] * hd)
        else:
            t.append((b + "ffn_gate_inp.weight", (e, h), "router", h))
            t.append((b + "exp_probs_b.bias", (e,), "router", 64))
            lin(b + "ffn_up_exps", ff, h, (e,))
            lin(b + "ffn_down_exps", h, ff, (e,))
            lin(b + "ffn_up_shexp", sf, h)
            lin(b + "ffn_down_shexp", h, sf)


def nvfp4_bytes(rng, lead_shape, n_in):
    """Random NVFP4 rows: bytes of shape lead_shape + (n_in / 64 * 36,)."""
    assert n_in % 64 == 0, n_in
    nb = int(np.prod(lead_shape)) * (n_in // 64)
    raw = np.frombuffer(rng.bytes(nb * 36), dtype=np.uint8).reshape(nb, 36).copy()
    raw[:, :4] = 0x30 | (raw[:, :4] & 0x0F)  # UE4M3 0.5 .. 1.875
    return raw.reshape(*lead_shape, (n_in // 64) * 36)


def plan(shape, vocab, linear="nvfp4"):
    """The tensors in file order: (name, numpy shape, kind, n_in) with kind nvfp4|f16|f32|scale."""
    s = SHAPES[shape]
    h, hd, L = s["hidden"], s["head_dim"], s["layers"]
    qd, kvd = s["heads"] * hd, s["kv"] * hd
    t = [("token_embd.weight", (vocab, h), "f16", h)]
    moe = "experts" in s

    def lin(name, n_out, n_in, lead=()):
        if linear == "f16":
            t.append((name + ".weight", (*lead, n_out, n_in), "lin16", n_in))
            return
        t.append((name + ".weight", (*lead, n_out), "nvfp4", n_in))
        t.append((name + ".scale", lead if lead else (1,), "scale", n_in))

    def ffn(b):
        if moe:
            e, ff = s["experts"], s["expert_ff"] or s["ff"]
            t.append((b + "ffn_gate_inp.weight", (e, h), "router", h))
            lin(b + "ffn_gate_exps", ff, h, (e,))
            lin(b + "ffn_up_exps", ff, h, (e,))
            lin(b + "ffn_down_exps", h, ff, (e,))
            if s.get("shared_ff"):
                sf = s["shared_ff"]
                t.append((b + "ffn_gate_inp_shexp.weight", (h,), "router", h))
                lin(b + "ffn_gate_shexp", sf, h)
                lin(b + "ffn_up_shexp", sf, h)
                lin(b + "ffn_down_shexp", h, sf)
        else:
            lin(b + "ffn_gate", s["ff"], h)
            lin(b + "ffn_up", s["ff"], h)
            lin(b + "ffn_down", h, s["ff"])

    hy = s.get("hybrid")
    if s.get("nemotron"):
        nemotron_plan(s, t, lin)
        L = 0
    if s.get("muse"):
        muse_plan(s, t, lin)
        L = 0
    if s.get("gemma4"):
        g = s["gemma4"]
        t.append(("rope_freqs.weight", (g["head_g"] // 2,), "rope_freqs", g["rot_pairs_g"]))
        gemma4_plan(s, t, lin)
        L = 0
    for i in range(L):
        b = f"blk.{i}."
        t.append((b + "attn_norm.weight", (h,), "f32", 0))
        if hy and (i + 1) % hy["interval"] != 0:  # a Gated DeltaNet layer
            kd, vd, nv = hy["k_heads"] * hy["d"], hy["v_heads"] * hy["d"], hy["v_heads"]
            lin(b + "attn_qkv", 2 * kd + vd, h)
            lin(b + "attn_gate", vd, h)
            t.append((b + "ssm_beta.weight", (nv, h), "router", h))
            t.append((b + "ssm_alpha.weight", (nv, h), "router", h))
            t.append((b + "ssm_conv1d.weight", (2 * kd + vd, hy["conv"]), "conv", hy["conv"]))
            t.append((b + "ssm_a", (nv,), "ssm_a", 0))
            t.append((b + "ssm_dt.bias", (nv,), "router", 1))
            t.append((b + "ssm_norm.weight", (hy["d"],), "f32", 0))
            lin(b + "ssm_out", h, vd)
            t.append((b + "post_attention_norm.weight", (h,), "f32", 0))
            ffn(b)
            continue
        lin(b + "attn_q", 2 * qd if hy else qd, h)
        lin(b + "attn_k", kvd, h)
        lin(b + "attn_v", kvd, h)
        lin(b + "attn_output", h, qd)
        if moe or hy:
            w = qd if s["qk_norm"] == "full" else hd
            wk = kvd if s["qk_norm"] == "full" else hd
            t.append((b + "attn_q_norm.weight", (w,), "f32", 0))
            t.append((b + "attn_k_norm.weight", (wk,), "f32", 0))
        t.append((b + ("post_attention_norm.weight" if hy else "ffn_norm.weight"), (h,), "f32", 0))
        ffn(b)
    t.append(("output_norm.weight", (h,), "f32", 0))
    if not s["tied"]:
        t.append(("output.weight", (vocab, h), "f16", h))
    return t


def tensor_data(rng, kind, shp, n_in):
    if kind == "nvfp4":
        return nvfp4_bytes(rng, shp, n_in)
    if kind == "scale":
        return np.full(shp, 1.0 / (3.0 * math.sqrt(n_in)), dtype=np.float32)
    if kind == "f32":  # norm weights around 1
        return (1.0 + 0.1 * rng.standard_normal(shp)).astype(np.float32)
    if kind == "router":
        return (rng.standard_normal(shp) / math.sqrt(n_in)).astype(np.float32)
    if kind == "conv":  # a causal conv's taps, of order 1 / sqrt(kernel)
        return (rng.standard_normal(shp) / math.sqrt(n_in)).astype(np.float32)
    if kind == "rope_freqs":  # proportional RoPE: factor 1 on the first n_in pairs, 1e30 (not rotated) after
        out = np.full(shp, 1e30, dtype=np.float32)
        out[:n_in] = 1.0
        return out
    if kind == "ssm_a":  # llama.cpp stores -exp(A_log): negative decay rates
        return (-np.exp(rng.uniform(-1.0, 1.0, shp))).astype(np.float32)
    if kind == "lin16":  # a float linear weight: N(0, 1 / n_in), rows of unit RMS times 1/sqrt(n_in)
        out = np.empty(shp, dtype=np.float16)
        flat = out.reshape(-1, shp[-1])
        step = max(1, (1 << 24) // shp[-1])
        for r in range(0, flat.shape[0], step):
            n = min(step, flat.shape[0] - r)
            flat[r:r + n] = rng.standard_normal((n, shp[-1]), dtype=np.float32) / np.float32(math.sqrt(n_in))
        return out
    if kind == "f16":  # embedding rows of unit RMS
        out = np.empty(shp, dtype=np.float16)
        step = max(1, (1 << 24) // shp[-1])
        for r in range(0, shp[0], step):
            out[r:r + step] = rng.standard_normal((min(step, shp[0] - r), shp[-1]), dtype=np.float32)
        return out
    raise ValueError(kind)


def copy_tokenizer(w, src):
    r = gguf.GGUFReader(src)
    n_vocab = None
    for k, f in r.fields.items():
        if not k.startswith("tokenizer."):
            continue
        vtype = f.types[0]
        val = f.contents()
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(k, val, vtype, sub)
        if k == "tokenizer.ggml.tokens":
            n_vocab = len(val)
    if not n_vocab:
        sys.exit(f"gen_random_gguf: {src}: no tokenizer.ggml.tokens")
    return n_vocab


def write(shape, out, tok_src, seed, linear="nvfp4"):
    s = SHAPES[shape]
    arch = s["arch"]
    tmp = out + ".part"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(f"random {shape}")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if linear == "f16" else gguf.LlamaFileType.MOSTLY_NVFP4)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_block_count(s["layers"])
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    nm = s.get("nemotron")
    g4 = s.get("gemma4")
    if g4:  # llama.cpp's gemma4 keys: the global layers' sizes plain, the sliding ones' _swa
        glob = [(i + 1) % g4["every"] == 0 for i in range(s["layers"])]
        w.add_feed_forward_length(s["ff"])
        w.add_head_count_kv([g4["kv_g"] if x else s["kv"] for x in glob])
        w.add_rope_freq_base(s["rope"])
        w.add_key_value(f"{arch}.rope.freq_base_swa", g4["rope_swa"], gguf.GGUFValueType.FLOAT32)
        w.add_key_length(g4["head_g"])
        w.add_value_length(g4["head_g"])
        w.add_key_value(f"{arch}.attention.key_length_swa", s["head_dim"], gguf.GGUFValueType.UINT32)
        w.add_key_value(f"{arch}.attention.value_length_swa", s["head_dim"], gguf.GGUFValueType.UINT32)
        w.add_rope_dimension_count(g4["head_g"])
        w.add_key_value(f"{arch}.rope.dimension_count_swa", s["head_dim"], gguf.GGUFValueType.UINT32)
        w.add_sliding_window(g4["window"])
        w.add_key_value(f"{arch}.attention.sliding_window_pattern", [not x for x in glob], gguf.GGUFValueType.ARRAY,
                        gguf.GGUFValueType.BOOL)
        w.add_key_value(f"{arch}.attention.shared_kv_layers", 0, gguf.GGUFValueType.UINT32)
        w.add_key_value(f"{arch}.embedding_length_per_layer_input", 0, gguf.GGUFValueType.UINT32)
        w.add_final_logit_softcapping(g4["cap"])
    elif s.get("muse"):
        mu = s["muse"]
        w.add_feed_forward_length(s["ff"])
        w.add_head_count_kv(s["kv"])
        w.add_rope_freq_base(s["rope"])
        w.add_sliding_window(mu["window"])
        w.add_key_value(f"{arch}.attention.sliding_window_pattern",
                        [(s["layers"] - 1 - i) % 4 != 0 for i in range(s["layers"])], gguf.GGUFValueType.ARRAY,
                        gguf.GGUFValueType.BOOL)
        w.add_final_logit_softcapping(mu["cap"])
        w.add_logit_scale(mu["scale"])
    elif nm:  # the layer kinds in per-layer arrays, as llama.cpp's converter writes them
        pattern = nm["pattern"][:s["layers"]]
        w.add_feed_forward_length([s["expert_ff"] if c == "E" else 0 for c in pattern])
        w.add_head_count_kv([s["kv"] if c == "*" else 0 for c in pattern])
        w.add_layer_norm_eps(s["eps"])
    else:
        w.add_feed_forward_length(s["ff"])
        w.add_head_count_kv(s["kv"])
        w.add_rope_freq_base(s["rope"])
    w.add_head_count(s["heads"])
    w.add_layer_norm_rms_eps(s["eps"])
    if s["head_dim"] * s["heads"] != s["hidden"] and not g4:
        w.add_key_length(s["head_dim"])
        w.add_value_length(s["head_dim"])
    if arch == "llama":
        w.add_rope_dimension_count(s["head_dim"])
    if nm:
        w.add_ssm_conv_kernel(nm["conv"])
        w.add_ssm_state_size(nm["d_state"])
        w.add_ssm_group_count(nm["groups"])
        w.add_ssm_time_step_rank(nm["m_heads"])
        w.add_ssm_inner_size(nm["m_heads"] * nm["m_head_dim"])
        w.add_expert_shared_count(1)
        w.add_expert_weights_norm(True)
        w.add_expert_weights_scale(nm["scale"])
        w.add_expert_group_count(1)
        w.add_expert_group_used_count(1)
    if "experts" in s:
        w.add_expert_count(s["experts"])
        w.add_expert_used_count(s["used"])
        if s["expert_ff"]:
            w.add_expert_feed_forward_length(s["expert_ff"])
        if s.get("shared_ff"):
            w.add_expert_shared_feed_forward_length(s["shared_ff"])
    if s.get("hybrid"):
        hy = s["hybrid"]
        w.add_ssm_conv_kernel(hy["conv"])
        w.add_ssm_state_size(hy["d"])
        w.add_ssm_group_count(hy["k_heads"])
        w.add_ssm_time_step_rank(hy["v_heads"])
        w.add_ssm_inner_size(hy["v_heads"] * hy["d"])
        w.add_full_attention_interval(hy["interval"])
        w.add_rope_dimension_count(hy["n_rot"])
        w.add_rope_dimension_sections([11, 11, 10, 0])
    vocab = copy_tokenizer(w, tok_src)
    w.add_vocab_size(vocab)
    tensors = plan(shape, vocab, linear)
    total = 0
    for name, shp, kind, n_in in tensors:
        if kind == "nvfp4":
            byte_shape = (*shp[:-1], shp[-1], (n_in // 64) * 36)
            nbytes = int(np.prod(byte_shape))
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=NVFP4)
        else:
            dt = np.float16 if kind in ("f16", "lin16") else np.float32
            nbytes = int(np.prod(shp)) * np.dtype(dt).itemsize
            w.add_tensor_info(name, shp, np.dtype(dt), nbytes)
        total += nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for i, (name, shp, kind, n_in) in enumerate(tensors):
        data = tensor_data(rng, kind, shp, n_in)
        w.write_tensor_data(data)
        del data
        if i % 50 == 0:
            print(f"gen_random_gguf: {shape}: {i + 1}/{len(tensors)} tensors", file=sys.stderr)
    w.close()
    os.replace(tmp, out)
    print(f"gen_random_gguf: wrote {out} ({total / 1e9:.2f} GB of tensors, {len(tensors)} tensors)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", nargs="?", choices=sorted(SHAPES))
    ap.add_argument("out", nargs="?")
    ap.add_argument("--tokenizer-from", help="GGUF whose tokenizer.* metadata is copied (SmolLM2's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0,
                    help="fewer layers than the shape has (a quick check of the layout; 0: all)")
    ap.add_argument("--float", choices=["f16"], help="write an F16 source of the shape, not NVFP4")
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    a = ap.parse_args()
    if a.list:
        for k, v in SHAPES.items():
            print(k, v)
        return 0
    if not (a.shape and a.out and a.tokenizer_from):
        ap.error("SHAPE, OUT and --tokenizer-from are required")
    if a.layers:
        SHAPES[a.shape] = dict(SHAPES[a.shape], layers=a.layers)
    write(a.shape, a.out, a.tokenizer_from, a.seed, a.float or "nvfp4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
