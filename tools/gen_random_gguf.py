#!/usr/bin/env python3
"""Random-weight NVFP4 GGUFs at real model shapes, in llama.cpp's layout, for benchmarks.

  python tools/gen_random_gguf.py SHAPE OUT.gguf --tokenizer-from SMOLLM2.gguf [--seed N]
  python tools/gen_random_gguf.py --list

SHAPE is one of SHAPES below: the dense Llama 3.x shapes (llama arch; tied or untied head as the
originals) and two MoE shapes (olmoe, qwen3moe) with stacked experts. The tokenizer (and so the
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
    # Qwen3-30B-A3B: intermediate_size 6144 (unused by the MoE layers), moe_intermediate_size 768.
    "qwen3-30b-a3b": dict(arch="qwen3moe", layers=48, hidden=2048, heads=32, kv=4, head_dim=128, ff=6144,
                          experts=128, used=8, expert_ff=768, qk_norm="head",
                          tied=False, rope=1000000.0, eps=1e-6, ctx=40960),
}


def nvfp4_bytes(rng, lead_shape, n_in):
    """Random NVFP4 rows: bytes of shape lead_shape + (n_in / 64 * 36,)."""
    assert n_in % 64 == 0, n_in
    nb = int(np.prod(lead_shape)) * (n_in // 64)
    raw = np.frombuffer(rng.bytes(nb * 36), dtype=np.uint8).reshape(nb, 36).copy()
    raw[:, :4] = 0x30 | (raw[:, :4] & 0x0F)  # UE4M3 0.5 .. 1.875
    return raw.reshape(*lead_shape, (n_in // 64) * 36)


def plan(shape, vocab):
    """The tensors in file order: (name, numpy shape, kind, n_in) with kind nvfp4|f16|f32|scale."""
    s = SHAPES[shape]
    h, hd, L = s["hidden"], s["head_dim"], s["layers"]
    qd, kvd = s["heads"] * hd, s["kv"] * hd
    t = [("token_embd.weight", (vocab, h), "f16", h)]
    moe = "experts" in s

    def lin(name, n_out, n_in, lead=()):
        t.append((name + ".weight", (*lead, n_out), "nvfp4", n_in))
        t.append((name + ".scale", lead if lead else (1,), "scale", n_in))

    for i in range(L):
        b = f"blk.{i}."
        t.append((b + "attn_norm.weight", (h,), "f32", 0))
        lin(b + "attn_q", qd, h)
        lin(b + "attn_k", kvd, h)
        lin(b + "attn_v", kvd, h)
        lin(b + "attn_output", h, qd)
        if moe:
            w = qd if s["qk_norm"] == "full" else hd
            wk = kvd if s["qk_norm"] == "full" else hd
            t.append((b + "attn_q_norm.weight", (w,), "f32", 0))
            t.append((b + "attn_k_norm.weight", (wk,), "f32", 0))
        t.append((b + "ffn_norm.weight", (h,), "f32", 0))
        if moe:
            e, ff = s["experts"], s["expert_ff"] or s["ff"]
            t.append((b + "ffn_gate_inp.weight", (e, h), "router", h))
            lin(b + "ffn_gate_exps", ff, h, (e,))
            lin(b + "ffn_up_exps", ff, h, (e,))
            lin(b + "ffn_down_exps", h, ff, (e,))
        else:
            lin(b + "ffn_gate", s["ff"], h)
            lin(b + "ffn_up", s["ff"], h)
            lin(b + "ffn_down", h, s["ff"])
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


def write(shape, out, tok_src, seed):
    s = SHAPES[shape]
    arch = s["arch"]
    tmp = out + ".part"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(f"random {shape}")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_NVFP4)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_block_count(s["layers"])
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    w.add_feed_forward_length(s["ff"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv"])
    w.add_rope_freq_base(s["rope"])
    w.add_layer_norm_rms_eps(s["eps"])
    if s["head_dim"] * s["heads"] != s["hidden"]:
        w.add_key_length(s["head_dim"])
        w.add_value_length(s["head_dim"])
    if arch == "llama":
        w.add_rope_dimension_count(s["head_dim"])
    if "experts" in s:
        w.add_expert_count(s["experts"])
        w.add_expert_used_count(s["used"])
        if s["expert_ff"]:
            w.add_expert_feed_forward_length(s["expert_ff"])
    vocab = copy_tokenizer(w, tok_src)
    w.add_vocab_size(vocab)
    tensors = plan(shape, vocab)
    total = 0
    for name, shp, kind, n_in in tensors:
        if kind == "nvfp4":
            byte_shape = (*shp[:-1], shp[-1], (n_in // 64) * 36)
            nbytes = int(np.prod(byte_shape))
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=NVFP4)
        else:
            dt = np.float16 if kind == "f16" else np.float32
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
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    a = ap.parse_args()
    if a.list:
        for k, v in SHAPES.items():
            print(k, v)
        return 0
    if not (a.shape and a.out and a.tokenizer_from):
        ap.error("SHAPE, OUT and --tokenizer-from are required")
    write(a.shape, a.out, a.tokenizer_from, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
