#!/usr/bin/env python3
"""Writes fixtures/gemma4_assistant/: two tiny random Gemma 4 assistants (transformers 5.17's
gemma4_assistant, Gemma4AssistantForCausalLM: the drafters Google releases beside Gemma 4 as
google/gemma-4-*-it-assistant) for the float Gemma 4 fixture fixtures/gemma4/float, and
reference.json + reference.f32: what transformers' assistant computes for chained draft steps,
the reference for the engine's `--spec mtp --model-draft DIR` with such a drafter (issue 35).

What a draft step is (generation/candidate_generator.py, SinglePositionMultiTokenCandidateGenerator):
the target has run positions 0 .. P - 1 and picked token t (at P). The assistant's input is
concat(the target's scaled embedding of t, the target's final-normed hidden state at P - 1),
pre_projection to its own width, its Gemma 4 layers at position P (every layer KV-shared: q alone,
attending over the target's keys and values of its last full-attention layer (all of 0 .. P - 1)
and of its last sliding layer (the last window + 1 of them: the bidirectional sliding mask
|q - k| <= window flipped to the past), then the final norm, the logits (the tied lm_head, or the
centroid-masked embedder: the top-k centroids' vocabulary slices of token_ordering, the rest
masked) and post_projection of the normed state, which with the draft is the next step's input,
at the same position P. The reference runs the assistant's forward directly with the target's
shared_kv_states of positions 0 .. P - 1 (what the target holds; the candidate generator slices
the verify step's states to the new length, which after a rejection keeps the rejected draft's
key at P).

Assistants (hidden 48, 2 layers sliding + full, 4 heads; the layers' head_dim / KV heads are the
target's: sliding 16 / 2, full 32 / 1; MLP 96, gelu_pytorch_tanh; backbone_hidden_size 64),
torch.manual_seed(20261208), weights N(0, 0.1^2), RMSNorm weights 1 + 0.2 N(0, 1), layer_scalar
1 + 0.3 N(0, 1), saved as bfloat16 and read back in float32:
  assistant        use_ordered_embeddings: 503 centroids (one token each: the vocabulary, 503, is
                   prime), top 16, token_ordering a random permutation
  assistant-plain  the same weights without the masked embedder (the whole lm_head)
  assistant-unified  gemma4_unified_assistant (Gemma4UnifiedAssistantForCausalLM, the drafter of
                   Gemma 4 12B's unified release) for fixtures/gemma4-unified/float: the same shapes
                   with 2 KV heads on its full layer (its target's), ordered embeddings as above

JSON: per case (prompt ids, P, the token t, which assistant) the chained steps' drafts and where
each step's logits [n_vocab] float32 LE start in the .f32 (masked entries hold transformers'
fill, min(selected) - 1).

Run (a venv with torch and transformers >= 5.17):
  PYTHON tools/gen_gemma4_assistant_reference.py
"""
import json
import pathlib
import shutil

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
D = ROOT / "fixtures" / "gemma4_assistant"
SEED = 20261208
STEPS = 4
# (prompt length P, the token t the target picked): shorter than the sliding window (8), just past
# window + 1, and well past it.
CASES = [(6, 77), (10, 301), (23, 5), (41, 480)]


def text_config(vocab, unified=False):
    from transformers import Gemma4TextConfig, Gemma4UnifiedTextConfig
    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
    if unified:  # its target's global layers: head_dim 32, 2 KV heads (no k_eq_v)
        return Gemma4UnifiedTextConfig(vocab_size=vocab, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
                                       sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                                       rope_parameters=rope, num_kv_shared_layers=2, rms_norm_eps=1e-6,
                                       max_position_embeddings=256, tie_word_embeddings=True)
    return Gemma4TextConfig(vocab_size=vocab, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=16, global_head_dim=32, num_global_key_value_heads=1, sliding_window=8,
                            layer_types=["sliding_attention", "full_attention"], rope_parameters=rope, attention_k_eq_v=True,
                            hidden_size_per_layer_input=0, vocab_size_per_layer_input=0, num_kv_shared_layers=2,
                            enable_moe_block=False, use_double_wide_mlp=False, rms_norm_eps=1e-6, max_position_embeddings=256,
                            tie_word_embeddings=True)


def make(vocab, ordered, out, unified=False):
    if unified:
        from transformers.models.gemma4_unified_assistant import (Gemma4UnifiedAssistantConfig as Config,
                                                                  Gemma4UnifiedAssistantForCausalLM as Assistant)
    else:
        from transformers.models.gemma4_assistant import Gemma4AssistantConfig as Config, Gemma4AssistantForCausalLM as Assistant
    cfg = Config(text_config=text_config(vocab, unified).to_dict(), backbone_hidden_size=64, use_ordered_embeddings=ordered,
                 num_centroids=vocab, centroid_intermediate_top_k=16)
    cfg.architectures = [Assistant.__name__]
    torch.manual_seed(SEED)
    m = Assistant(cfg).eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "masked_embedding" in name:
                continue
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
        for name, b in m.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(1.0 + 0.3 * torch.randn(b.shape, generator=g))
        if ordered:
            m.masked_embedding.centroids.weight.copy_(0.1 * torch.randn(m.masked_embedding.centroids.weight.shape, generator=g))
            m.masked_embedding.token_ordering.copy_(torch.randperm(vocab, generator=g))
    if out.exists():
        shutil.rmtree(out)
    m.to(torch.bfloat16).save_pretrained(str(out))
    for f in out.iterdir():
        f.chmod(0o644)
    return Assistant.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager").eval()


@torch.no_grad()
def main():
    import transformers
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(1)
    D.mkdir(parents=True, exist_ok=True)
    targets = {t: AutoModelForCausalLM.from_pretrained(str(ROOT / "fixtures" / t / "float"), dtype=torch.float32,
                                                       attn_implementation="eager").eval() for t in ("gemma4", "gemma4-unified")}
    vocab = targets["gemma4"].config.vocab_size
    helpers = {"assistant": make(vocab, True, D / "assistant"), "assistant-plain": make(vocab, False, D / "assistant-plain"),
               "assistant-unified": make(vocab, True, D / "assistant-unified", unified=True)}
    g = torch.Generator().manual_seed(SEED + 1)
    text = torch.randint(3, vocab - 3, (max(p for p, _ in CASES),), generator=g).tolist()
    rec = {"targets": {"assistant": "gemma4", "assistant-plain": "gemma4", "assistant-unified": "gemma4-unified"}, "transformers": transformers.__version__, "torch": torch.__version__,
           "n_vocab": vocab, "steps": STEPS, "cases": []}
    blobs, offset = [], 0
    for name, a in helpers.items():
        target = targets[rec["targets"][name]]
        emb = target.get_input_embeddings()
        for P, t in CASES:
            ids = [2] + text[:P - 1]
            o = target(input_ids=torch.tensor([ids]), output_hidden_states=True, return_shared_kv_states=True, use_cache=False)
            h = o.hidden_states[-1][:, P - 1:P]
            kv = {k: (v[0][:, :, :P], v[1][:, :, :P]) for k, v in o.shared_kv_states.items()}
            tok = torch.tensor([[t]])
            case = {"assistant": name, "ids": ids, "P": P, "token": t, "drafts": [], "offsets": []}
            for _ in range(STEPS):
                x = torch.cat([emb(tok), h], dim=-1)
                out = a(inputs_embeds=x, position_ids=torch.tensor([[P]]), shared_kv_states=kv, attention_mask=None)
                lg = out.logits[0, 0]
                tok = lg.argmax(-1).view(1, 1)
                h = out.last_hidden_state
                case["drafts"].append(int(tok))
                case["offsets"].append(offset)
                blobs.append(lg.numpy().astype("<f4").tobytes())
                offset += vocab * 4
            rec["cases"].append(case)
    (D / "reference.f32").write_bytes(b"".join(blobs))
    (D / "reference.json").write_text(json.dumps(rec, indent=1) + "\n")
    for c in rec["cases"]:
        print(c["assistant"], c["P"], c["drafts"])


if __name__ == "__main__":
    main()
