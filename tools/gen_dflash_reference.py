#!/usr/bin/env python3
"""Writes fixtures/muse_glimmer/assistant (a tiny random Muse Glimmer DFlash assistant,
transformers' MuseGlimmerAssistantModel for the float fixture fixtures/muse_glimmer/float) and
fixtures/muse_glimmer/dflash_reference.json + dflash_reference.f32: the drafts and draft logits
transformers' own DFlashTokenCandidateGenerator (generation/candidate_generator.py) proposes over
two draft steps of greedy speculative decoding, the reference for the engine's DFlash drafter
(issue 35: Muse Glimmer's draft is this block drafter, not an MTP layer).

What DFlash does (transformers 5.17): the assistant reads the target's hidden states at
`target_layer_ids` (hidden_states indices: the engine's LayerTaps) for every token the target has
accepted, projects their concatenation (encoder.fc, encoder.output_norm_enc) and appends each
layer's keys / values of it to its cache; a draft step runs [anchor, mask x (block_size - 1)]
(the target's raw embeddings, at the positions after the accepted ones) through its layers with
bidirectional attention over the cache and the block (sliding layers: |q - k| <= window), then
the target's lm_head as a plain linear on rows 1 ..: block_size - 1 drafts at once.

The assistant: hidden 64 (the target's), MLP 96, 2 layers (sliding, window 8), 4 heads / 2 KV
heads of 16, block_size 4, mask_token_id 501, target_layer_ids [1, 3, 5], rope_theta 10000;
torch.manual_seed(20261206), weights N(0, 0.1^2), RMSNorm weights 1 + 0.2 N(0, 1), saved as
bfloat16 and read back (the reference runs the rounded weights in float32).

The steps, for the first two prompts of fixtures/muse_glimmer/logits.json: the target (float32,
eager) runs the prompt; its greedy token is the anchor; step 1's drafts come from the prompt's
hidden states; the target then verifies [anchor, drafts] (greedy: the longest agreeing prefix
accepted, then its own token), and step 2 drafts from the verified tokens' hidden states. JSON
per prompt: ids, anchor, step1 {drafts, offset}, accepted, bonus, step2 {drafts, offset}; the .f32
holds each step's draft logits [block_size - 1][n_vocab] float32 LE.

Run (a venv with torch and transformers >= 5.17):
  PYTHON tools/gen_dflash_reference.py
"""
import json
import pathlib
import shutil

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
D = ROOT / "fixtures" / "muse_glimmer"
SEED = 20261206


def make_assistant(target_cfg):
    from transformers.models.muse_glimmer_assistant import MuseGlimmerAssistantConfig, MuseGlimmerAssistantModel
    tc = target_cfg
    cfg = MuseGlimmerAssistantConfig(
        hidden_size=tc.hidden_size, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, sliding_window=8, block_size=4, mask_token_id=501, target_layer_ids=[1, 3, 5], rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=502, pad_token_id=500, vocab_size=tc.vocab_size)
    torch.manual_seed(SEED)
    m = MuseGlimmerAssistantModel(cfg)
    with torch.no_grad():
        for k, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
    out = D / "assistant"
    if out.exists():
        shutil.rmtree(out)
    m.to(torch.bfloat16).save_pretrained(str(out))
    for f in out.iterdir():
        f.chmod(0o644)
    return MuseGlimmerAssistantModel.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager").eval()


@torch.no_grad()
def main():
    import transformers
    from transformers import GenerationConfig, MuseGlimmerForConditionalGeneration
    from transformers.generation.candidate_generator import DFlashTokenCandidateGenerator

    target = MuseGlimmerForConditionalGeneration.from_pretrained(str(D / "float"), dtype=torch.float32,
                                                                 attn_implementation="eager").eval()
    assistant = make_assistant(target.config.get_text_config())
    B = assistant.config.block_size
    prompts = json.loads((D / "logits.json").read_text())["prompts"][:2]
    rows, blob, offset = [], [], 0

    def record(logits):
        nonlocal offset
        a = logits[0].float().numpy().astype("<f4")
        blob.append(a.ravel())
        at = offset
        offset += a.size
        return at

    for p in prompts:
        gen = DFlashTokenCandidateGenerator(assistant_model=assistant, main_model_input_embeddings=target.get_input_embeddings(),
                                            main_model_output_embeddings=target.get_output_embeddings(),
                                            generation_config=GenerationConfig(max_length=256, do_sample=False), logits_processor=None)
        gen.eos_token_id = None
        ids = torch.tensor([p["ids"]])
        n = ids.shape[1]
        out = target(input_ids=ids, output_hidden_states=True)
        anchor = int(out.logits[0, -1].argmax())
        seq = torch.cat([ids, torch.tensor([[anchor]])], dim=1)
        kw = {"position_ids": torch.arange(seq.shape[1])[None], "attention_mask": torch.ones(1, seq.shape[1], dtype=torch.long)}
        cand, logits = gen.get_candidates(seq, kw, out, is_first_iteration=False, n_last_matches=0)
        d1 = cand[0, seq.shape[1]:].tolist()
        assert len(d1) == B - 1, d1
        o1 = record(logits)
        # The target verifies [anchor, drafts]: its greedy picks after each.
        full = cand
        vout = target(input_ids=full, output_hidden_states=True)
        picks = vout.logits[0, n:].argmax(-1).tolist()  # after anchor, after each draft
        a = 0
        while a < len(d1) and d1[a] == picks[a]:
            a += 1
        bonus = picks[a]
        seq2 = torch.cat([full[:, :n + 1 + a], torch.tensor([[bonus]])], dim=1)
        vhs = type("O", (), {"hidden_states": tuple(h[:, n:] for h in vout.hidden_states)})()
        kw2 = {"position_ids": torch.arange(seq2.shape[1])[None], "attention_mask": torch.ones(1, seq2.shape[1], dtype=torch.long)}
        cand2, logits2 = gen.get_candidates(seq2, kw2, vhs, is_first_iteration=False, n_last_matches=a)
        d2 = cand2[0, seq2.shape[1]:].tolist()
        o2 = record(logits2)
        rows.append({"ids": p["ids"], "anchor": anchor, "step1": {"drafts": d1, "offset": o1}, "accepted": a, "bonus": bonus,
                     "step2": {"drafts": d2, "offset": o2}})
        print(n, "tokens: anchor", anchor, "drafts", d1, "accepted", a, "bonus", bonus, "drafts", d2)
    np.concatenate(blob).tofile(D / "dflash_reference.f32")
    (D / "dflash_reference.json").write_text(json.dumps({
        "target": "float", "assistant": "assistant", "block_size": B, "n_vocab": int(target.config.get_text_config().vocab_size),
        "logits_file": "dflash_reference.f32", "seed": SEED,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__}, "prompts": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
