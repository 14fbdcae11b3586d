#!/usr/bin/env python3
"""Writes fixtures/nemotron_h/nemotron3_latent/float-mtp (a Nemotron 3 Super-shaped release with its
multi-token-prediction (MTP) layers, issue 35) and mtp_logits.json + mtp_logits.f32 beside it: the
logits of the MTP module computed in float32 with transformers' own NemotronH pieces, since
transformers does not model the module (NemotronHForCausalLM ignores mtp.* on load).

The module as vLLM's nemotron_h_mtp.py (NemotronHMultiTokenPredictor) and NVIDIA's releases
define it: `num_nextn_predict_layers` 1 step of the layers `mtp_hybrid_override_pattern` names
("*E": an attention layer, then a MoE layer, each a NemotronHBlock: norm, mixer, residual add);
the first layer also holds enorm, hnorm and eh_proj, the last final_layernorm; the head is the
trunk's lm_head:

  h      = the trunk's final-normed hidden states (NemotronHModel's last_hidden_state, norm_f)
  u      = eh_proj(concat(enorm(embeddings(ids[t + 1])), hnorm(h[t])))       (embedding first)
  u      = NemotronHBlock(full_attention)(u), causal over the MTP positions 0 .. n - 2, no RoPE
  u      = NemotronHBlock(moe)(u)
  logits = lm_head(final_layernorm(u))

Position t of the output predicts the token at t + 2.

The weights: the float fixture's (fixtures/nemotron_h/nemotron3_latent/float) with mtp.layers.0.*
its attention layer (3) and mtp.layers.1.* its last MoE layer (5), each plus 0.02 N(0,1), as
tensors named like the releases' (mtp.layers.<i>.norm / mixer.* / enorm / hnorm / eh_proj /
final_layernorm); enorm, hnorm and final_layernorm 1 + 0.2 N(0,1), eh_proj 0.1 N(0,1); all
bfloat16; torch.manual_seed(20261206). config.json: the float one with num_nextn_predict_layers 1
and mtp_hybrid_override_pattern "*E" (the releases' spelling; transformers 5 reads it as
mtp_layers_block_type). The prompts are those of logits.json.

Run (a venv with torch and transformers >= 5.17):
  PYTHON tools/gen_nemotron_mtp.py
"""
import copy
import json
import pathlib
import shutil

import numpy as np
import torch
from safetensors.torch import load_file, save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARCH = ROOT / "fixtures" / "nemotron_h" / "nemotron3_latent"
SEED = 20261206
PATTERN = "*E"
SOURCE_LAYERS = {"*": 3, "E": 5}  # the float model's layer each MTP layer starts from


def write_release(out):
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(ARCH / "float", out)
    cfg_text = (out / "config.json").read_text()
    cfg = json.loads(cfg_text)  # Python's json keeps the bare Infinity both ways
    cfg.pop("mtp_layers_block_type", None)
    cfg["num_nextn_predict_layers"] = 1
    cfg["mtp_hybrid_override_pattern"] = PATTERN
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    st = load_file(str(out / "model.safetensors"))
    torch.manual_seed(SEED)
    h = cfg["hidden_size"]
    mtp = {}
    for i, kind in enumerate(PATTERN):
        src = f"backbone.layers.{SOURCE_LAYERS[kind]}."
        for k, v in st.items():
            if k.startswith(src):
                mtp[f"mtp.layers.{i}.{k[len(src):]}"] = (v.float() + 0.02 * torch.randn_like(v.float())).to(torch.bfloat16)
    for n in ["enorm", "hnorm"]:
        mtp[f"mtp.layers.0.{n}.weight"] = (1 + 0.2 * torch.randn(h)).to(torch.bfloat16)
    mtp["mtp.layers.0.eh_proj.weight"] = (0.1 * torch.randn(h, 2 * h)).to(torch.bfloat16)
    mtp[f"mtp.layers.{len(PATTERN) - 1}.final_layernorm.weight"] = (1 + 0.2 * torch.randn(h)).to(torch.bfloat16)
    st.update({k: v.contiguous() for k, v in mtp.items()})
    save_file(st, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "model.safetensors").chmod(0o644)
    return {k: v.float() for k, v in mtp.items()}


@torch.no_grad()
def main():
    import transformers
    from transformers import NemotronHForCausalLM
    from transformers.models.nemotron_h import modeling_nemotron_h as M

    out = ARCH / "float-mtp"
    sd = write_release(out)
    model = NemotronHForCausalLM.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager").eval()
    cfg = model.config
    assert cfg.num_nextn_predict_layers == 1 and cfg.mtp_layers_block_type == ["full_attention", "moe"], cfg.mtp_layers_block_type
    bcfg = copy.deepcopy(cfg)
    bcfg.layers_block_type = list(cfg.mtp_layers_block_type)
    bcfg._attn_implementation = "eager"
    blocks = []
    for i in range(len(PATTERN)):
        b = M.NemotronHBlock(bcfg, i).eval()
        own = {k[len(f"mtp.layers.{i}."):]: v for k, v in sd.items() if k.startswith(f"mtp.layers.{i}.")}
        for k in ["enorm.weight", "hnorm.weight", "eh_proj.weight", "final_layernorm.weight"]:
            own.pop(k, None)
        # Routed experts as saved (one by one) into transformers' fused in-memory form.
        n_exp = len({k.split(".")[2] for k in own if k.startswith("mixer.experts.")})
        if n_exp:
            for p in ["up_proj", "down_proj"]:
                own[f"mixer.experts.{p}"] = torch.stack([own.pop(f"mixer.experts.{e}.{p}.weight") for e in range(n_exp)])
        b.load_state_dict(own, strict=True)
        blocks.append(b)
    norms = {}
    for n, key in [("enorm", "mtp.layers.0.enorm.weight"), ("hnorm", "mtp.layers.0.hnorm.weight"),
                   ("final", f"mtp.layers.{len(PATTERN) - 1}.final_layernorm.weight")]:
        norms[n] = M.NemotronHRMSNorm(cfg.hidden_size, eps=cfg.layer_norm_epsilon)
        norms[n].load_state_dict({"weight": sd[key]})
    eh = sd["mtp.layers.0.eh_proj.weight"]
    prompts = json.loads((ARCH / "logits.json").read_text())["prompts"]
    rows_out, blob, offset = [], [], 0
    for p in prompts:
        ids = torch.tensor([p["ids"]])
        n = ids.shape[1]
        h = model.model(input_ids=ids).last_hidden_state  # final-normed (norm_f)
        e = norms["enorm"](model.model.embeddings(ids[:, 1:]))
        u = torch.cat([e, norms["hnorm"](h[:, :-1])], dim=-1) @ eh.T
        mask = torch.full((n - 1, n - 1), float("-inf")).triu(1)[None, None]
        for i, b in enumerate(blocks):
            u = b(u, attention_mask=mask if PATTERN[i] == "*" else None)
        logits = model.lm_head(norms["final"](u))[0]
        rows_out.append({"ids": p["ids"], "offset": offset, "rows": n - 1})
        blob.append(logits.numpy().astype("<f4").ravel())
        offset += blob[-1].size
    np.concatenate(blob).tofile(ARCH / "mtp_logits.f32")
    (ARCH / "mtp_logits.json").write_text(json.dumps({
        "arch": "nemotron3_latent", "n_vocab": int(cfg.vocab_size), "logits_file": "mtp_logits.f32", "model": "float-mtp",
        "pattern": PATTERN, "seed": SEED,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "prompts": rows_out}, indent=1) + "\n")
    print("rows", [o["rows"] for o in rows_out])


if __name__ == "__main__":
    main()
