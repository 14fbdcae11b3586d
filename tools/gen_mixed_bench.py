#!/usr/bin/env python3
"""Random-weight Qwen3-MoE directories at Qwen3-30B-A3B's widths, as ModelOpt MIXED_PRECISION
exports them (NVFP4 W4A16 experts and lm_head), in three forms that differ only in the attention
projections: FP8 (per-tensor E4M3, NVIDIA's mixed checkpoints), NVFP4, and BF16 (unquantized).
The experts, embedding, head, norms and routers are one shared shard (written once, linked into
each directory), so the three cost one model's disk. For issue 29's speed bars (bench model).

  python tools/gen_mixed_bench.py models/bench/mixed-30b-a3b --layers 8
  build/nvfp4 bench model -m models/bench/mixed-30b-a3b/fp8 ...

Each directory gets Qwen3's tokenizer files (fixtures/tokenizers/qwen3, the real ones).
"""
import argparse
import json
import os
import shutil

import numpy as np

HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 2048, 32, 4, 128
EXPERTS, TOP_K, MOE_INTER, VOCAB = 128, 8, 768, 151936


def bf16(a):
    u = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


class Shard:
    def __init__(self, path):
        self.path, self.items = path, []

    def add(self, name, dtype, shape, data):
        self.items.append((name, dtype, list(shape), np.ascontiguousarray(data).tobytes()))

    def write(self):
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, dtype, shape, raw in self.items:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
            off += len(raw)
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(self.path + ".tmp", "wb") as f:
            f.write(len(h).to_bytes(8, "little") + h)
            for *_, raw in self.items:
                f.write(raw)
        os.replace(self.path + ".tmp", self.path)
        return [name for name, *_ in self.items]


def nvfp4(sh, rng, name, n_out, n_in):
    sh.add(name + ".weight", "U8", (n_out, n_in // 2), rng.integers(0, 256, (n_out, n_in // 2), dtype=np.uint8))
    sh.add(name + ".weight_scale", "F8_E4M3", (n_out, n_in // 16), rng.integers(0x28, 0x40, (n_out, n_in // 16), dtype=np.uint8))
    sh.add(name + ".weight_scale_2", "F32", (), np.array(0.0021, dtype=np.float32))


def fp8(sh, rng, name, n_out, n_in):
    codes = rng.integers(0x28, 0x60, (n_out, n_in), dtype=np.uint8) | (rng.integers(0, 2, (n_out, n_in), dtype=np.uint8) << 7)
    sh.add(name + ".weight", "F8_E4M3", (n_out, n_in), codes)
    sh.add(name + ".weight_scale", "F32", (), np.array(0.0005, dtype=np.float32))
    sh.add(name + ".input_scale", "F32", (), np.array(0.02, dtype=np.float32))


def dense(sh, rng, name, n_out, n_in):
    sh.add(name + ".weight", "BF16", (n_out, n_in), bf16(rng.standard_normal((n_out, n_in), dtype=np.float32) * 0.02))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizers", "qwen3"))
    a = ap.parse_args()
    L = a.layers
    rng = np.random.default_rng(29)
    os.makedirs(os.path.join(a.out, "shared"), exist_ok=True)
    common = os.path.join(a.out, "shared", "common.safetensors")
    attn_shapes = {"q_proj": (HEADS * HEAD_DIM, HIDDEN), "k_proj": (KV_HEADS * HEAD_DIM, HIDDEN),
                   "v_proj": (KV_HEADS * HEAD_DIM, HIDDEN), "o_proj": (HIDDEN, HEADS * HEAD_DIM)}
    sh = Shard(common)
    ones = lambda n: bf16(np.ones(n, dtype=np.float32))
    sh.add("model.embed_tokens.weight", "BF16", (VOCAB, HIDDEN), bf16(rng.standard_normal((VOCAB, HIDDEN), dtype=np.float32) * 0.02))
    sh.add("model.norm.weight", "BF16", (HIDDEN,), ones(HIDDEN))
    nvfp4(sh, rng, "lm_head", VOCAB, HIDDEN)
    for l in range(L):
        p = f"model.layers.{l}."
        sh.add(p + "input_layernorm.weight", "BF16", (HIDDEN,), ones(HIDDEN))
        sh.add(p + "post_attention_layernorm.weight", "BF16", (HIDDEN,), ones(HIDDEN))
        sh.add(p + "self_attn.q_norm.weight", "BF16", (HEAD_DIM,), ones(HEAD_DIM))
        sh.add(p + "self_attn.k_norm.weight", "BF16", (HEAD_DIM,), ones(HEAD_DIM))
        dense(sh, rng, p + "mlp.gate", EXPERTS, HIDDEN)
        for e in range(EXPERTS):
            for proj, (o, i) in (("gate_proj", (MOE_INTER, HIDDEN)), ("up_proj", (MOE_INTER, HIDDEN)), ("down_proj", (HIDDEN, MOE_INTER))):
                nvfp4(sh, rng, p + f"mlp.experts.{e}.{proj}", o, i)
    common_names = sh.write()
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": HIDDEN,
              "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
              "num_hidden_layers": L, "num_experts": EXPERTS, "num_experts_per_tok": TOP_K,
              "moe_intermediate_size": MOE_INTER, "intermediate_size": 6144, "decoder_sparse_step": 1,
              "mlp_only_layers": [], "norm_topk_prob": True, "vocab_size": VOCAB, "rms_norm_eps": 1e-6,
              "rope_theta": 1000000.0, "max_position_embeddings": 40960, "tie_word_embeddings": False,
              "hidden_act": "silu", "attention_bias": False, "bos_token_id": 151643, "eos_token_id": 151645,
              "torch_dtype": "bfloat16"}
    for form in ("fp8", "nvfp4", "bf16"):
        d = os.path.join(a.out, form)
        os.makedirs(d, exist_ok=True)
        ash = Shard(os.path.join(d, "attn.safetensors"))
        layers = {}
        for l in range(L):
            for proj, (o, i) in attn_shapes.items():
                name = f"model.layers.{l}.self_attn.{proj}"
                if form == "fp8":
                    fp8(ash, rng, name, o, i)
                    layers[name] = {"quant_algo": "FP8"}
                elif form == "nvfp4":
                    nvfp4(ash, rng, name, o, i)
                    layers[name] = {"quant_algo": "W4A16_NVFP4", "group_size": 16}
                else:
                    dense(ash, rng, name, o, i)
            layers[f"model.layers.{l}.mlp.experts"] = {"quant_algo": "W4A16_NVFP4", "group_size": 16}
        layers["lm_head"] = {"quant_algo": "W4A16_NVFP4", "group_size": 16}
        attn_names = ash.write()
        link = os.path.join(d, "common.safetensors")
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", "shared", "common.safetensors"), link)
        wm = {n: "common.safetensors" for n in common_names if not n.startswith("__")}
        wm.update({n: "attn.safetensors" for n in attn_names if not n.startswith("__")})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": wm}, f)
        q = {"producer": {"name": "modelopt", "version": "0.47.0"},
             "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": None, "quantized_layers": layers}}
        with open(os.path.join(d, "hf_quant_config.json"), "w") as f:
            json.dump(q, f, indent=1)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f, indent=1)
        for t in ("tokenizer.json", "tokenizer_config.json"):
            if os.path.exists(os.path.join(a.tokenizer, t)):
                shutil.copy(os.path.join(a.tokenizer, t), os.path.join(d, t))
        print("wrote", d)


if __name__ == "__main__":
    main()
