#!/usr/bin/env python3
"""Writes fixtures/reference/smollm2_logits.json: logits of SmolLM2-135M-Instruct computed by PyPI
`transformers` (LlamaForCausalLM, float32, eager attention, CPU) on the same F32 weights our f32
mode runs: the GGUF's tensors dequantized by PyPI `gguf` (Q4_1 linears, Q8_0 embedding/tied head,
F32 norms).

GGUF stores attn_q/attn_k rows permuted for adjacent-pair RoPE (convert_hf_to_gguf's `permute`);
HF Llama rotates halves, so the rows are permuted back here. The prompts' token ids are fixed in
the fixture (tokenized by the HF `tokenizers` oracle of tools/gen_smollm2_tokenizer_fixture.py), so the
test checks the model alone.

Saved per prompt and position: the full row's logsumexp and argmax, and the logits at the 32
largest entries plus 32 fixed pseudo-random vocabulary ids (small fixture, strong check).

Run: /path/to/python tools/gen_reference_logits.py MODEL.gguf
     (needs: pip install gguf torch transformers tokenizers numpy)
"""
import json
import pathlib
import sys

import numpy as np
import torch
import gguf
from gguf.quants import dequantize
from tokenizers import Tokenizer, models, pre_tokenizers, AddedToken

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "<|im_start|>user\nWhat is 12 * 7?<|im_end|>\n<|im_start|>assistant\n",
]


def unpermute(w, n_head):
    # convert_hf_to_gguf: w.reshape(n_head, 2, d // n_head // 2, *rest).swapaxes(1, 2).reshape(w.shape)
    d = w.shape[0]
    return w.reshape(n_head, d // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    path = sys.argv[1]
    r = gguf.GGUFReader(path)
    f = lambda k: r.fields[k].contents()
    T = {}
    for t in r.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
        T[t.name] = a.reshape([int(x) for x in reversed(t.shape)]) if a.ndim == 1 and len(t.shape) > 1 else a
    n_layer, n_head, n_kv = f("llama.block_count"), f("llama.attention.head_count"), f("llama.attention.head_count_kv")
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=T["token_embd.weight"].shape[0], hidden_size=f("llama.embedding_length"),
                      intermediate_size=f("llama.feed_forward_length"), num_hidden_layers=n_layer,
                      num_attention_heads=n_head, num_key_value_heads=n_kv,
                      max_position_embeddings=f("llama.context_length"), rms_norm_eps=f("llama.attention.layer_norm_rms_epsilon"),
                      rope_theta=f("llama.rope.freq_base"), tie_word_embeddings=True, attention_bias=False,
                      mlp_bias=False, torch_dtype=torch.float32, attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval().to(torch.float32)
    sd = {"model.embed_tokens.weight": T["token_embd.weight"], "model.norm.weight": T["output_norm.weight"],
          "lm_head.weight": T["token_embd.weight"]}
    for i in range(n_layer):
        b, h = f"blk.{i}.", f"model.layers.{i}."
        sd[h + "input_layernorm.weight"] = T[b + "attn_norm.weight"]
        sd[h + "post_attention_layernorm.weight"] = T[b + "ffn_norm.weight"]
        sd[h + "self_attn.q_proj.weight"] = unpermute(T[b + "attn_q.weight"], n_head)
        sd[h + "self_attn.k_proj.weight"] = unpermute(T[b + "attn_k.weight"], n_kv)
        sd[h + "self_attn.v_proj.weight"] = T[b + "attn_v.weight"]
        sd[h + "self_attn.o_proj.weight"] = T[b + "attn_output.weight"]
        sd[h + "mlp.gate_proj.weight"] = T[b + "ffn_gate.weight"]
        sd[h + "mlp.up_proj.weight"] = T[b + "ffn_up.weight"]
        sd[h + "mlp.down_proj.weight"] = T[b + "ffn_down.weight"]
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)

    tokens, types, merges = f("tokenizer.ggml.tokens"), f("tokenizer.ggml.token_type"), f("tokenizer.ggml.merges")
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[tuple(m.split(" ", 1)) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i in range(len(tokens)) if types[i] == 3])

    rng = np.random.default_rng(1234)
    fixed = sorted(int(x) for x in rng.choice(cfg.vocab_size, 32, replace=False))
    out = []
    for p in PROMPTS:
        ids = tok.encode(p, add_special_tokens=False).ids
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].double().numpy()
        rows = []
        for pos in range(len(ids)):
            row = logits[pos]
            top = [int(x) for x in np.argsort(-row, kind="stable")[:32]]
            idx = sorted(set(top) | set(fixed))
            m = row.max()
            rows.append({"argmax": int(np.argmax(row)), "logsumexp": float(m + np.log(np.exp(row - m).sum())),
                         "ids": idx, "logits": [float(row[i]) for i in idx]})
        out.append({"prompt": p, "ids": ids, "positions": rows})
        print(repr(p), len(ids), "tokens; next:", repr(tok.decode([rows[-1]["argmax"]])))
    dst = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "smollm2_logits.json"
    dst.write_text(json.dumps({"model": pathlib.Path(path).name, "torch": torch.__version__,
                               "transformers": __import__("transformers").__version__, "prompts": out}))
    print("wrote", dst, dst.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
