#!/usr/bin/env python3
"""Writes fixtures/muse_glimmer/<form>/ (complete HF directories), logits.json + logits.f32 and
manifest.json for a tiny random Muse Glimmer model (issue 33), made from transformers' own configs
(no hub) and quantized by the real producers on the CPU.

transformers 5.17 has Muse Glimmer only as the release lays it out: MuseGlimmerForConditionalGeneration
(model_type muse_glimmer), the text model under model.language_model.*, a vision tower
(model.vision_tower.*, model.vision_adapter.*, model.vision_projection.*) and an untied lm_head.
Text model (MuseGlimmerTextConfig): hidden 64, 6 layers of transformers' default layer_types for 6
(sliding, full, sliding, sliding, sliding, full: full on every 4th counted back from the last),
sliding_window 8, the full layers NoPE (layer_rope_theta 0 there, transformers' default) and the
sliding ones RoPE (NeoX, whole head, theta 1e4); 4 query heads, 2 KV heads of 16; q and k normed
without weights (eps rms_norm_eps), q times qk_scale_factor 3.87, scores scaled by 1/sqrt(16);
the attention output times sigmoid(gate_proj(x)) before o_proj; four zero-centred norms per block
((1 + w), the post-attention and post-FFN ones with post_norm_eps 1e-8), SiLU MLP of 128; the
embedding normed without a weight; the final norm w (not 1 + w); logits times output_multiplier 0.5,
then soft-capped at 3 (low enough that tanh bends the random model's logits); rms_norm_eps 1e-5;
vocab 503 (tools/arch_tokenizers.py "qwen3"); bf16; seed 20261205. Norm weights get 0.2 N(0,1).
The vision tower is one layer of 32.

  form            producer
  float           transformers save_pretrained, bfloat16 (the release layout)
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration) + export_hf_checkpoint
  ct-nvfp4        llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4"),
                  calibrated; the vision tower and lm_head left float
A producer that fails is recorded in manifest.json ("error"), not hidden.

Prompts: 5, 17, 40 and 100 tokens (the last longer than the sliding layers' ring of window - 1 + 64).
logits.json + logits.f32 as fixtures/gemma4: per prompt the ids, `offset`, `greedy` (16 tokens of
the float model), `top2_margin`, and logits [n_pos][n_vocab] float32 LE of each of `sets`: float
(transformers in float32, eager attention) and modelopt_nvfp4 (ModelOpt's fake-quantized model in
float32 with the export's shared amax; NaN where ModelOpt failed) and modelopt_export (transformers
in float32 on ModelOpt's own dequantization of the weights its export wrote: on this architecture
ModelOpt's fake-quantized model departs from its export, about 0.4 at each prompt's first
position, so the export is checked against this set).

Run (a venv with torch, transformers >= 5.17, nvidia-modelopt, llmcompressor, datasets):
  PYTHON tools/gen_muse_glimmer_fixtures.py [--out DIR]
"""
import argparse
import json
import math
import os
import pathlib
import shutil
import sys
import traceback

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402
import arch_tokenizers as T  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 20261205
SETS = ["float", "modelopt_nvfp4", "modelopt_export"]
LENGTHS = [5, 17, 40, 100]
TEXTS = ["The capital of France is Paris, and the river is the Seine.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"]
CHAT = [{"role": "user", "content": "The lighthouse keeper climbed the spiral stairs every evening. What did he carry?"}]
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, patch_size=14,
              pos_emb_height=4, pos_emb_width=4)
CT_IGNORE = ["lm_head", "re:.*vision.*"]


def make_config(vocab, tok_ids):
    from transformers import MuseGlimmerConfig, MuseGlimmerForConditionalGeneration as VLM
    tok_ids = {"bos_token_id": None, **tok_ids}  # (MuseGlimmerTextConfig's default 200000 is past this vocabulary)
    text = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, sliding_window=8, max_position_embeddings=256,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, final_logit_softcapping=3.0,
                output_multiplier=0.5, initializer_range=0.1, **tok_ids)
    return MuseGlimmerConfig(text_config=text, vision_config=VISION, out_hidden_size=128, projector_hidden_size=64,
                             architectures=[VLM.__name__])


def make_float(tok, out):
    from transformers import MuseGlimmerForConditionalGeneration as VLM
    torch.manual_seed(SEED)
    cfg = make_config(len(tok), T.token_ids("qwen3", tok))
    cfg._attn_implementation = "eager"
    m = VLM(cfg).to(torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "language_model" in name and "norm" in name and name.endswith("weight"):
                p.add_(0.2 * torch.randn_like(p))
    P.save_bf16(m, tok, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "muse_glimmer"))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    from transformers import AutoTokenizer
    out = pathlib.Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = [(ROOT / "data" / f).read_text() for f in ["quality.txt", "calibration.txt"]]
    tok = T.make("qwen3", corpus)
    make_float(tok, out / "float")
    tok = AutoTokenizer.from_pretrained(str(out / "float"))
    model = P.load_float(out / "float")
    model16 = P.load_float(out / "float", torch.bfloat16)
    prompts = [tok(TEXTS[0])["input_ids"][:LENGTHS[0]], tok(TEXTS[1])["input_ids"][:LENGTHS[1]],
               tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"][-LENGTHS[2]:],
               tok(corpus[0])["input_ids"][:LENGTHS[3]]]
    for p, n in zip(prompts, LENGTHS):
        assert len(p) == n, (len(p), n)
    lines = [l for l in corpus[1].split("\n") if l.strip()]
    calib = [tok(l)["input_ids"][:64] for l in lines]

    rec = {"arch": "muse_glimmer", "seed": SEED, "float_dtype": "bfloat16", "n_vocab": len(tok), "versions": P.versions(),
           "sliding_window": 8, "logits_file": "logits.f32", "sets": SETS, "prompts": []}
    logits = {k: [] for k in SETS}
    offset = 0
    with torch.no_grad():
        for ids in prompts:
            lg = P.logits_of(model, ids)
            rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids), "top2_margin": P.top2_margin(lg)})
            offset += len(SETS) * len(ids) * len(tok)
            logits["float"].append(lg)
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"argmax takes only {distinct} values over {LENGTHS[2]} positions"
    rec["distinct_argmax_prompt3"] = distinct

    forms = {"float": {"tensors": P.tensor_table(out / "float")}}
    try:
        q = P.modelopt_quantize(model16, "nvfp4", calib)
        P.modelopt_export(q, out / "modelopt-nvfp4", tok)
        q32 = P.modelopt_fake_quant_f32(q)
        deq = P.modelopt_export_dequant_f32(out / "modelopt-nvfp4", out / "float")
        with torch.no_grad():
            logits["modelopt_nvfp4"] = [P.logits_of(q32, ids) for ids in prompts]
            logits["modelopt_export"] = [P.logits_of(deq, ids) for ids in prompts]
        forms["modelopt-nvfp4"] = {"tensors": P.tensor_table(out / "modelopt-nvfp4")}
    except Exception as e:
        forms["modelopt-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        logits["modelopt_nvfp4"] = [torch.full_like(l, float("nan")) for l in logits["float"]]
        logits["modelopt_export"] = [torch.full_like(l, float("nan")) for l in logits["float"]]
        shutil.rmtree(out / "modelopt-nvfp4", ignore_errors=True)
        print("modelopt-nvfp4 FAILED", forms["modelopt-nvfp4"]["error"][:400], flush=True)
    try:
        P.ct_quantize_save(out / "float", "NVFP4", calib, out / "ct-nvfp4", tok, torch.bfloat16, ignore=CT_IGNORE, pipeline="basic",
                           processor=tok)
        forms["ct-nvfp4"] = {"tensors": P.tensor_table(out / "ct-nvfp4")}
    except Exception as e:
        forms["ct-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        shutil.rmtree(out / "ct-nvfp4", ignore_errors=True)
        print("ct-nvfp4 FAILED", forms["ct-nvfp4"]["error"][:400], flush=True)
    diffs = {k: max(float((x - y).abs().max()) for x, y in zip(logits[k], logits["float"])) for k in SETS}
    rec["max_abs_vs_float"] = {k: (v if math.isfinite(v) else None) for k, v in diffs.items()}  # None: the producer failed
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in SETS:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    (out / "manifest.json").write_text(json.dumps({"arch": "muse_glimmer", "forms": forms}, indent=1) + "\n")
    print("distinct argmax", distinct, json.dumps(rec["max_abs_vs_float"]), "margins",
          [p["top2_margin"] for p in rec["prompts"]], flush=True)


if __name__ == "__main__":
    main()
