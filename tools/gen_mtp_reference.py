#!/usr/bin/env python3
"""Writes fixtures/hybrid/<arch>/mtp_logits.json + mtp_logits.f32: the logits of the float-vlm
fixtures' multi-token-prediction (MTP) layer (issue 35), computed in float32 with transformers'
own pieces, since transformers does not model the MTP module (it ignores mtp.* on load):

  h      = the text model's final-normed hidden states (Qwen3_5TextModel's last_hidden_state)
  e      = Qwen3_5RMSNorm(pre_fc_norm_embedding)(embed_tokens(ids[t + 1]))
  u      = mtp.fc(concat(e, Qwen3_5RMSNorm(pre_fc_norm_hidden)(h[t])))          (embedding first)
  u      = Qwen3_5DecoderLayer (full_attention, the family's MLP or MoE) with mtp.layers.0.*,
           causal over the MTP positions 0 .. n - 2, RoPE at position t
  logits = lm_head(Qwen3_5RMSNorm(mtp.norm)(u))

as vLLM's qwen3_5_mtp.py (Qwen3_5MultiTokenPredictor) composes them. Position t of the output
predicts the token at t + 2. For each prompt of the arch's logits.json: `ids`, `offset` (floats
into mtp_logits.f32) and `rows` (n - 1) logits rows of n_vocab float32 LE.

Run (a venv with torch and transformers >= 5.17):
  PYTHON tools/gen_mtp_reference.py [--arch qwen3_5,qwen3_5_moe]
"""
import argparse
import json
import pathlib

import numpy as np
import torch
from safetensors.torch import load_file

ROOT = pathlib.Path(__file__).resolve().parent.parent


@torch.no_grad()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="qwen3_5,qwen3_5_moe")
    args = ap.parse_args()
    import transformers
    for arch in args.arch.split(","):
        if arch == "qwen3_5":
            from transformers.models.qwen3_5 import modeling_qwen3_5 as M
            from transformers import Qwen3_5ForConditionalGeneration as VLM
        else:
            from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as M
            from transformers import Qwen3_5MoeForConditionalGeneration as VLM
        Norm = getattr(M, "Qwen3_5RMSNorm", None) or getattr(M, "Qwen3_5MoeRMSNorm")
        Layer = getattr(M, "Qwen3_5DecoderLayer", None) or getattr(M, "Qwen3_5MoeDecoderLayer")
        d = ROOT / "fixtures" / "hybrid" / arch
        vlm = VLM.from_pretrained(str(d / "float-vlm"), dtype=torch.float32, attn_implementation="eager").eval()
        cfg = vlm.config.text_config
        text = vlm.model.language_model
        sd = {k: v.float() for k, v in load_file(str(next((d / "float-vlm").glob("*.safetensors")))).items() if k.startswith("mtp.")}
        full = max(i for i, t in enumerate(cfg.layer_types) if t == "full_attention")
        layer = Layer(cfg, full).eval()
        own = {k[len("mtp.layers.0."):]: v for k, v in sd.items() if k.startswith("mtp.layers.0.")}
        # Routed experts as saved (one by one) into transformers' fused in-memory form.
        n_exp = len({k.split(".")[2] for k in own if k.startswith("mlp.experts.")})
        if n_exp:
            e = range(n_exp)
            own["mlp.experts.gate_up_proj"] = torch.stack(
                [torch.cat([own.pop(f"mlp.experts.{i}.gate_proj.weight"), own.pop(f"mlp.experts.{i}.up_proj.weight")]) for i in e])
            own["mlp.experts.down_proj"] = torch.stack([own.pop(f"mlp.experts.{i}.down_proj.weight") for i in e])
        missing, unexpected = layer.load_state_dict(own, strict=False)
        assert not unexpected and not [m for m in missing if "rotary" not in m], (missing, unexpected)
        norms = {}
        for n in ["pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"]:
            norms[n] = Norm(cfg.hidden_size, eps=cfg.rms_norm_eps)
            norms[n].load_state_dict({"weight": sd[f"mtp.{n}.weight"]})
        fc = sd["mtp.fc.weight"]
        prompts = json.loads((d / "logits.json").read_text())["prompts"]
        out, blob = [], []
        offset = 0
        for p in prompts:
            ids = torch.tensor([p["ids"]])
            n = ids.shape[1]
            h = text(input_ids=ids).last_hidden_state  # final-normed
            e = norms["pre_fc_norm_embedding"](text.embed_tokens(ids[:, 1:]))
            u = torch.cat([e, norms["pre_fc_norm_hidden"](h[:, :-1])], dim=-1) @ fc.T
            pos = torch.arange(n - 1)[None]
            pe = text.rotary_emb(u, pos[None].expand(3, 1, -1))  # text positions: the same in every M-RoPE section
            mask = torch.full((n - 1, n - 1), float("-inf")).triu(1)[None, None]
            u = layer(u, position_embeddings=pe, attention_mask=mask, position_ids=pos)
            logits = vlm.lm_head(norms["norm"](u))[0]
            out.append({"ids": p["ids"], "offset": offset, "rows": n - 1})
            blob.append(logits.numpy().astype("<f4").ravel())
            offset += blob[-1].size
        np.concatenate(blob).tofile(d / "mtp_logits.f32")
        (d / "mtp_logits.json").write_text(json.dumps({
            "arch": arch, "n_vocab": int(cfg.vocab_size), "logits_file": "mtp_logits.f32", "model": "float-vlm",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
            "prompts": out}, indent=1) + "\n")
        print(arch, "rows", [o["rows"] for o in out])


if __name__ == "__main__":
    main()
