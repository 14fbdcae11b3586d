#!/usr/bin/env python3
"""Writes fixtures/taps/<name>.json + <name>.f32: transformers' hidden states between the layers
(`output_hidden_states=True`: index 0 the embedding as the first layer reads it, index i layer
i - 1's output) of three fixture models, for the engine's layer taps (forward(..., LayerTaps):
what DFlash / EAGLE-3 drafters read from the trunk's middle).

  muse_glimmer   fixtures/muse_glimmer/float      (the DFlash target family; sliding + NoPE layers)
  gemma4_e2b     fixtures/gemma4-e2b/float        (KV sharing: the engine steps it in waves)
  nemotron_h     fixtures/nemotron_h/nemotron_h/float   (Mamba-2, attention, MLP and MoE layers)

For the first two prompts of each fixture's logits.json: `ids`, `offset` (floats into the .f32)
and the hidden states [n_layer + 1][n_pos][n_embd] float32 LE, in float32 with eager attention.

Run (a venv with torch and transformers >= 5.17):
  PYTHON tools/gen_layer_taps.py
"""
import json
import pathlib

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = {"muse_glimmer": "fixtures/muse_glimmer", "gemma4_e2b": "fixtures/gemma4-e2b", "nemotron_h": "fixtures/nemotron_h/nemotron_h"}


@torch.no_grad()
def main():
    import transformers
    from transformers import AutoModelForCausalLM, MuseGlimmerForConditionalGeneration
    out_dir = ROOT / "fixtures" / "taps"
    out_dir.mkdir(exist_ok=True)
    for name, rel in MODELS.items():
        d = ROOT / rel
        cls = MuseGlimmerForConditionalGeneration if name == "muse_glimmer" else AutoModelForCausalLM
        m = cls.from_pretrained(str(d / "float"), dtype=torch.float32, attn_implementation="eager").eval()
        cfg = m.config.get_text_config()
        prompts = json.loads((d / "logits.json").read_text())["prompts"][:2]
        rows, blob, offset = [], [], 0
        for p in prompts:
            hs = m(input_ids=torch.tensor([p["ids"]]), output_hidden_states=True).hidden_states
            assert len(hs) == cfg.num_hidden_layers + 1, len(hs)
            a = torch.stack([h[0] for h in hs]).numpy().astype("<f4")
            rows.append({"ids": p["ids"], "offset": offset})
            blob.append(a.ravel())
            offset += a.size
        np.concatenate(blob).tofile(out_dir / f"{name}.f32")
        (out_dir / f"{name}.json").write_text(json.dumps({
            "model": rel + "/float", "n_layer": cfg.num_hidden_layers, "n_embd": cfg.hidden_size, "file": f"{name}.f32",
            "layout": "[n_layer + 1][n_pos][n_embd] float32 per prompt",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}, "prompts": rows}, indent=1) + "\n")
        print(name, [len(r["ids"]) for r in rows], offset * 4, "bytes")


if __name__ == "__main__":
    main()
