#!/usr/bin/env python3
"""A random-weight DFlash drafter at a real shape, in z-lab's layout (PyPI dflash's
DFlashDraftModel: a qwen3 config.json with dflash_config, BF16 safetensors), for timing `--spec
dflash` beside its target (`nvfp4 bench model -m TARGET --dflash DIR`). Only the bytes a draft step
reads matter: weights N(0, 1/n_in) in BF16, norms 1.

  python tools/gen_bench_dflash.py SHAPE OUT_DIR [--vocab N] [--layers L] [--block 16]

SHAPE: the target's widths (tools/gen_random_gguf.py's names): llama-8b (Llama 3.1 8B: z-lab
publishes LLaMA3.1-8B-Instruct-DFlash), muse-glimmer-30b (its release assistant's widths). The
drafter: L layers (default 5, as z-lab's and Muse Glimmer's assistants) of the target's hidden size,
heads, KV heads, head size and MLP width; target_layer_ids spread as dflash's
build_target_layer_ids(target layers, L) (limited to --target-layers when the target GGUF holds
fewer); vocab: the target GGUF's (SmolLM2's 49152 for gen_random_gguf.py's files).
"""
import argparse
import json
import os
import struct

import numpy as np

SHAPES = {
    "llama-8b": dict(layers=32, hidden=4096, heads=32, kv=8, head_dim=128, ff=14336, rope=500000.0),
    "muse-glimmer-30b": dict(layers=52, hidden=6656, heads=32, kv=8, head_dim=128, ff=19968, rope=500000.0),
}


def layer_ids(n_target, n_draft):
    if n_draft == 1:
        return [n_target // 2]
    span = n_target - 3 - 1
    return [round(1 + i * span / (n_draft - 1)) for i in range(n_draft)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--target-layers", type=int, default=0, help="the layers the target file holds (default: the shape's)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    s = SHAPES[a.shape]
    d, hd, L = s["hidden"], s["head_dim"], a.layers
    nt = a.target_layers or s["layers"]
    ids = layer_ids(nt, L)
    if min(ids) < 0 or max(ids) >= nt:
        ids = [round(i * (nt - 1) / max(L - 1, 1)) for i in range(L)]
    tensors = [("fc.weight", [d, len(ids) * d]), ("hidden_norm.weight", [d]), ("norm.weight", [d])]
    for l in range(L):
        b = f"layers.{l}."
        tensors += [(b + "self_attn.q_proj.weight", [s["heads"] * hd, d]), (b + "self_attn.k_proj.weight", [s["kv"] * hd, d]),
                    (b + "self_attn.v_proj.weight", [s["kv"] * hd, d]), (b + "self_attn.o_proj.weight", [d, s["heads"] * hd]),
                    (b + "self_attn.q_norm.weight", [hd]), (b + "self_attn.k_norm.weight", [hd]),
                    (b + "input_layernorm.weight", [d]), (b + "post_attention_layernorm.weight", [d]),
                    (b + "mlp.gate_proj.weight", [s["ff"], d]), (b + "mlp.up_proj.weight", [s["ff"], d]),
                    (b + "mlp.down_proj.weight", [d, s["ff"]])]
    header, off = {}, 0
    for name, shape in tensors:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for name, shape in tensors:
            if len(shape) == 1:
                x = np.ones(shape, np.float32)
            else:
                x = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(shape[1]))
            f.write((x.view(np.uint32) >> 16).astype(np.uint16).tobytes())
    cfg = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "attention_bias": False, "hidden_act": "silu",
           "hidden_size": d, "intermediate_size": s["ff"], "num_hidden_layers": L, "num_attention_heads": s["heads"],
           "num_key_value_heads": s["kv"], "head_dim": hd, "rms_norm_eps": 1e-6, "vocab_size": a.vocab,
           "rope_parameters": {"rope_type": "default", "rope_theta": s["rope"]}, "layer_types": ["full_attention"] * L,
           "num_target_layers": nt, "dtype": "bfloat16",
           "dflash_config": {"block_size": a.block, "mask_token_id": 0, "target_layer_ids": ids}}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    print(f"{a.out}: {L} layers of {d}, taps {ids}, {off / 2**30:.2f} GiB BF16")


if __name__ == "__main__":
    main()
