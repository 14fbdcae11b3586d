#!/usr/bin/env python3
"""Writes fixtures/dflash/qwen3 (a tiny random drafter in z-lab's DFlash layout, the
DFlashDraftModel of PyPI `dflash` 0.1.0, for the float Qwen3 fixture fixtures/arch/qwen3/float) and
fixtures/dflash/qwen3_reference.json + qwen3_reference.f32: what z-lab's own dflash_generate
does with it, greedy: the tokens, and the draft logits of every step, the
reference for the engine's DFlash drafter in z-lab's layout (issue 35: z-lab publishes such
drafters for Qwen3-4B/8B, Qwen3-Coder-30B-A3B and Llama 3.1 8B, families the engine runs).

The layout (dflash/model.py): a qwen3 config.json with architectures [DFlashDraftModel] and
dflash_config {block_size, mask_token_id, target_layer_ids}; tensors fc [hidden, k * hidden],
hidden_norm, layers.N.{self_attn.{q,k,v,o}_proj, q_norm, k_norm, mlp.{gate,up,down}_proj,
input_layernorm, post_attention_layernorm}, norm. target_layer_ids are layer indices (the output
of layer i is hidden_states[i + 1]). Here layer 0 is sliding (window 6: causal, |q - k| < 6, as
dflash/model.py's _attention_mask when is_causal is not set) and layer 1 full (bidirectional).

The drafter: hidden 64 (the target's), MLP 96, 4 heads / 2 KV heads of 16, block_size 4,
mask_token_id 501, target_layer_ids [0, 1], rope_theta 1e6; torch.manual_seed(20261207), weights
N(0, 0.1^2), RMSNorm weights 1 + 0.2 N(0, 1), saved as bfloat16 and read back in float32.

JSON per prompt: ids, tokens (dflash_generate's output after the prompt), steps [{start, rows,
offset}] (each draft step: the position of its anchor, its block's rows less one (shorter than
block_size - 1 at the end, where dflash_generate drafts from a shorter block), where its logits
[rows][n_vocab] float32 LE start in the .f32).

Run (a venv with torch, transformers >= 5.17 and `pip install --no-deps dflash==0.1.0`):
  PYTHON tools/gen_dflash_zlab_reference.py
"""
import json
import pathlib
import shutil

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
T = ROOT / "fixtures" / "arch" / "qwen3" / "float"
D = ROOT / "fixtures" / "dflash"
SEED = 20261207
PROMPTS = [[1, 17, 99, 4, 250, 31, 8], [1, 433, 69, 277, 437, 266, 64, 66, 66, 72, 7, 77, 468, 305, 427, 296, 416, 220]]
NEW_TOKENS = 8


def make_drafter(tc):
    from dflash.model import DFlashDraftModel
    from transformers import Qwen3Config
    cfg = Qwen3Config(
        hidden_size=tc.hidden_size, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        max_position_embeddings=256, vocab_size=tc.vocab_size, sliding_window=6, use_sliding_window=True,
        max_window_layers=0, layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2)
    cfg.architectures = ["DFlashDraftModel"]
    cfg.num_target_layers = tc.num_hidden_layers
    cfg.dflash_config = {"block_size": 4, "mask_token_id": 501, "target_layer_ids": [0, 1]}
    torch.manual_seed(SEED)
    m = DFlashDraftModel(cfg)
    with torch.no_grad():
        for _, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    out = D / "qwen3"
    if out.exists():
        shutil.rmtree(out)
    D.mkdir(parents=True, exist_ok=True)
    m.to(torch.bfloat16).save_pretrained(str(out))
    for f in out.iterdir():
        f.chmod(0o644)
    return DFlashDraftModel.from_pretrained(str(out), dtype=torch.float32).eval()


@torch.no_grad()
def main():
    import time

    import transformers
    import dflash.model
    from dflash.model import dflash_generate
    dflash.model._cuda_time = time.perf_counter  # its timer synchronizes CUDA; the stats are wanted for the steps
    from transformers import Qwen3ForCausalLM

    target = Qwen3ForCausalLM.from_pretrained(str(T), dtype=torch.float32, attn_implementation="eager").eval()
    drafter = make_drafter(target.config)
    B = drafter.block_size
    calls = []
    plain_logits = drafter.compute_logits

    def recording(hidden, head):
        out = plain_logits(hidden, head)
        calls.append(out[0].float().numpy().copy())
        return out

    drafter.compute_logits = recording
    rows, blob, offset = [], [], 0
    for ids in PROMPTS:
        calls.clear()
        x = torch.tensor([ids])
        r = dflash_generate(drafter, target, x, NEW_TOKENS, None, temperature=0.0, return_stats=True)
        tokens = r.output_ids[0, len(ids):].tolist()
        steps, start = [], len(ids)
        for c, produced in zip(calls, r.acceptance_lengths):
            steps.append({"start": start, "rows": int(c.shape[0]), "offset": offset})
            blob.append(c.astype("<f4").tobytes())
            offset += c.size
            start += produced
        rows.append({"ids": ids, "tokens": tokens, "acceptance_lengths": [int(a) for a in r.acceptance_lengths], "steps": steps})
    (D / "qwen3_reference.f32").write_bytes(b"".join(blob))
    meta = {"target": "arch/qwen3/float", "drafter": "qwen3", "block_size": B, "n_vocab": int(target.config.vocab_size),
            "logits_file": "qwen3_reference.f32", "seed": SEED,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "dflash": "0.1.0"},
            "prompts": rows}
    (D / "qwen3_reference.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(rows)[:600])


if __name__ == "__main__":
    main()
