#!/usr/bin/env python3
"""Writes fixtures/gemma4/<form>/ (complete HF directories), logits.json + logits.f32 and
manifest.json for a tiny random Gemma 4 text model (issue 33), made from transformers' own
configs (no hub) and quantized by the real producers on the CPU.

Model (Gemma4TextConfig + Gemma4ForCausalLM, model_type gemma4_text): hidden 64, 6 layers of
layer_types sliding, sliding, full, sliding, sliding, full; sliding_window 8 (every prompt but
the first is longer); 4 query heads; sliding layers 2 KV heads of head_dim 16, RoPE "default"
theta 1e4 over the whole head; full layers global_head_dim 32 with num_global_key_value_heads 1
and attention_k_eq_v (no v_proj: the values are k_proj's output, v-normed), RoPE "proportional"
theta 1e6 with partial_rotary_factor 0.25 (4 of the 16 frequency pairs rotate, the rest have
frequency 0); q/k RMSNorm with weights, v RMSNorm without; attention scale 1; four norms per
block and a per-layer output scalar (layer_scalar, set to 1 + 0.3 N(0,1)); GeGLU MLP of 128
(gelu_pytorch_tanh); embedding scaled by sqrt(hidden); final_logit_softcapping 3 (low enough
that tanh bends the random model's logits); tied head; no per-layer embeddings
(hidden_size_per_layer_input 0), no KV sharing, no MoE; eps 1e-6; vocab 503 (tools/arch_tokenizers.py
"qwen3"); bf16; seed 20261204.

  form            producer
  float           transformers save_pretrained, bfloat16
  float-vlm       the same text weights as the releases lay them out: Gemma4ForConditionalGeneration
                  (model_type gemma4, text_config nested), the text model under model.language_model.*,
                  a one-layer vision tower (model.vision_tower.*, model.embed_vision.*); its text
                  logits equal float's (checked when written)
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration) + export_hf_checkpoint
  ct-nvfp4        llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4"), calibrated
A producer that fails is recorded in manifest.json ("error"), not hidden.

Prompts: 5, 17, 40 and 100 tokens (the last longer than the sliding layers' ring of window - 1 + 64
positions, so that the ring wraps while transformers' logits check it).
logits.json + logits.f32 as fixtures/hybrid: per prompt the ids, `offset`, `greedy` (16 tokens of
the float model), `top2_margin`, and logits [n_pos][n_vocab] float32 LE of each of `sets`: float
(transformers in float32, eager attention) and modelopt_nvfp4 (ModelOpt's fake-quantized model
in float32 with the export's shared amax).

Variants (--variant; each its own directory, the forms and files as above, float-vlm only for base):
  base  the model above (fixtures/gemma4)
  e2b   fixtures/gemma4-e2b, E2B-like: the same shapes with attention_k_eq_v off (a v_proj on the
        global layers), num_kv_shared_layers 2 (layer 4, sliding, reads layer 3's KV; layer 5,
        global, reads layer 2's: the last earlier layer of its type, as transformers picks it;
        the shared layers have no k_proj, v_proj or k/v norms), use_double_wide_mlp (the shared
        layers' MLP is 256 wide), per-layer embeddings of hidden_size_per_layer_input 16 over
        vocab_size_per_layer_input 503 (the table [503, 6 x 16], its projection and norm, and each
        layer's gate, projection and norm)
  unified  fixtures/gemma4-unified, Gemma 4 12B's layout (transformers' gemma4_unified:
        Gemma4UnifiedTextConfig / Gemma4UnifiedForCausalLM, model_type gemma4_unified_text; the
        decoder is Gemma 4's, without per-layer embeddings or experts): base's shapes with
        attention_k_eq_v off (a v_proj on the global layers, which keep num_key_value_heads 2 as
        the config gates the global KV heads on k_eq_v); float-vlm as the release lays it out,
        Gemma4UnifiedForConditionalGeneration with its encoder-free vision and audio embedders
        (model.embed_vision.*, model.embed_audio.*; no towers)
  moe   fixtures/gemma4-moe, 26B-A4B in small: base with enable_moe_block (every layer a dense
        MLP of 128 and 8 routed experts of 32, top-2, side by side, each with its norms; the
        router's scale and per-expert scale set to 1 + 0.3 N(0,1)); the experts stacked 3-D
        (experts.gate_up_proj [8, 64, 64], experts.down_proj [8, 64, 32]) as transformers saves them

Run (a venv with torch, transformers >= 5.17, nvidia-modelopt, llmcompressor, datasets):
  PYTHON tools/gen_gemma4_fixtures.py [--variant base|e2b|moe] [--out DIR]
"""
import argparse
import json
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
SEED = 20261204
SETS = ["float", "modelopt_nvfp4"]
LENGTHS = [5, 17, 40, 100]
TEXTS = ["The capital of France is Paris, and the river is the Seine.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"]
CHAT = [{"role": "user", "content": "The lighthouse keeper climbed the spiral stairs every evening. What did he carry?"}]
LAYER_TYPES = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
               "full_attention"]
CT_IGNORE = ["lm_head"]


VARIANTS = {
    "base": dict(),
    "e2b": dict(attention_k_eq_v=False, num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_size_per_layer_input=16),
    "moe": dict(enable_moe_block=True, num_experts=8, top_k_experts=2, moe_intermediate_size=32),
    "unified": dict(attention_k_eq_v=False),
}


def make_config(vocab, tok_ids, variant="base"):
    from transformers import Gemma4TextConfig
    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
    if variant == "unified":
        from transformers import Gemma4UnifiedTextConfig
        return Gemma4UnifiedTextConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
                                       num_global_key_value_heads=1, sliding_window=8, layer_types=LAYER_TYPES,
                                       rope_parameters=rope, final_logit_softcapping=3.0, initializer_range=0.1,
                                       rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=True,
                                       architectures=["Gemma4UnifiedForCausalLM"], **VARIANTS[variant], **tok_ids)
    kw = dict(attention_k_eq_v=True, hidden_size_per_layer_input=0, num_kv_shared_layers=0, enable_moe_block=False)
    kw.update(VARIANTS[variant])
    if kw["hidden_size_per_layer_input"]:
        kw["vocab_size_per_layer_input"] = vocab
    return Gemma4TextConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
                            num_global_key_value_heads=1, sliding_window=8,
                            layer_types=LAYER_TYPES, rope_parameters=rope, final_logit_softcapping=3.0,
                            initializer_range=0.1, rms_norm_eps=1e-6, max_position_embeddings=256,
                            tie_word_embeddings=True, architectures=["Gemma4ForCausalLM"], **kw, **tok_ids)


def make_float(tok, out, variant="base"):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED)
    cfg = make_config(len(tok), T.token_ids("qwen3", tok), variant)
    cfg._attn_implementation = "eager"
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.add_(0.2 * torch.randn_like(p))
            elif variant != "base" and (name.endswith("router.scale") or name.endswith("per_expert_scale")):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
        for name, b in m.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(1.0 + 0.3 * torch.randn_like(b))
    P.save_bf16(m, tok, out)


VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
              head_dim=16, patch_size=16, pooling_kernel_size=2, position_embedding_size=64)


UNIFIED_VISION = dict(patch_size=4, pooling_kernel_size=2, mm_embed_dim=24, mm_posemb_size=16, output_proj_dims=24)
UNIFIED_AUDIO = dict(audio_embed_dim=20)


@torch.no_grad()
def make_float_vlm(float_dir, out, prompts, variant="base"):
    from transformers import AutoTokenizer, Gemma4Config, Gemma4ForConditionalGeneration as VLM
    text = P.load_float(float_dir)
    tc = text.config.to_dict()
    tc.pop("_name_or_path", None)
    torch.manual_seed(SEED + 100)
    if variant == "unified":
        from transformers import Gemma4UnifiedConfig, Gemma4UnifiedForConditionalGeneration as VLM
        cfg = Gemma4UnifiedConfig(text_config=tc, vision_config=UNIFIED_VISION, audio_config=UNIFIED_AUDIO,
                                  tie_word_embeddings=True, architectures=[VLM.__name__])
    else:
        cfg = Gemma4Config(text_config=tc, vision_config=VISION, audio_config=None, tie_word_embeddings=True,
                           architectures=[VLM.__name__])
    vlm = VLM(cfg).eval()
    sd = dict(text.state_dict())
    mapped = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v for k, v in sd.items()}
    missing, unexpected = vlm.load_state_dict(mapped, strict=False)
    assert not [k for k in unexpected if k != "lm_head.weight"], unexpected
    assert all(k.startswith(("model.vision_tower.", "model.embed_vision.", "model.embed_audio.")) or k == "lm_head.weight"
               for k in missing), missing
    vlm = vlm.to(torch.bfloat16)
    vlm.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(float_dir)).save_pretrained(str(out), save_jinja_files=False)
    back = VLM.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager").eval()
    ref = P.load_float(float_dir)
    for ids in prompts:
        t = torch.tensor([ids])
        d = float((back(input_ids=t).logits[0] - ref(input_ids=t).logits[0]).abs().max())
        assert d == 0.0, ("float-vlm text logits differ from the float model's by", d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", default="base", choices=sorted(VARIANTS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    variant = a.variant
    if a.out is None:
        a.out = str(ROOT / "fixtures" / ("gemma4" if variant == "base" else "gemma4-" + variant))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    from transformers import AutoTokenizer
    out = pathlib.Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = [(ROOT / "data" / f).read_text() for f in ["quality.txt", "calibration.txt"]]
    tok = T.make("qwen3", corpus)
    make_float(tok, out / "float", variant)
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

    # unified and e2b: also the export's own weights run by transformers (modelopt_export), as for Muse
    # Glimmer: ModelOpt's fake-quantized model departs from its export where the global layers have a v_proj.
    sets = SETS + (["modelopt_export"] if variant in ("unified", "e2b") else [])
    rec = {"arch": "gemma4", "variant": variant, "seed": SEED, "float_dtype": "bfloat16", "n_vocab": len(tok), "versions": P.versions(),
           "sliding_window": 8, "logits_file": "logits.f32", "sets": sets, "prompts": []}
    logits = {k: [] for k in sets}
    offset = 0
    for ids in prompts:
        lg = P.logits_of(model, ids)
        rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids), "top2_margin": P.top2_margin(lg)})
        offset += len(sets) * len(ids) * len(tok)
        logits["float"].append(lg)
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"argmax takes only {distinct} values over {LENGTHS[2]} positions"
    rec["distinct_argmax_prompt3"] = distinct

    forms = {"float": {"tensors": P.tensor_table(out / "float")}}
    try:
        if variant not in ("base", "unified"):
            raise RuntimeError("float-vlm is written for the base and unified variants only")
        make_float_vlm(out / "float", out / "float-vlm", prompts, variant)
        forms["float-vlm"] = {"tensors": P.tensor_table(out / "float-vlm")}
    except Exception as e:
        forms["float-vlm"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        shutil.rmtree(out / "float-vlm", ignore_errors=True)
        print("float-vlm FAILED", forms["float-vlm"]["error"][:400], flush=True)
    try:
        q = P.modelopt_quantize(model16, "nvfp4", calib)
        P.modelopt_export(q, out / "modelopt-nvfp4", tok)
        q32 = P.modelopt_fake_quant_f32(q)
        logits["modelopt_nvfp4"] = [P.logits_of(q32, ids) for ids in prompts]
        if "modelopt_export" in sets:
            deq = P.modelopt_export_dequant_f32(out / "modelopt-nvfp4", out / "float")
            logits["modelopt_export"] = [P.logits_of(deq, ids) for ids in prompts]
        forms["modelopt-nvfp4"] = {"tensors": P.tensor_table(out / "modelopt-nvfp4")}
    except Exception as e:
        forms["modelopt-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        logits["modelopt_nvfp4"] = [torch.full_like(l, float("nan")) for l in logits["float"]]
        if "modelopt_export" in sets:
            logits["modelopt_export"] = [torch.full_like(l, float("nan")) for l in logits["float"]]
        shutil.rmtree(out / "modelopt-nvfp4", ignore_errors=True)
        print("modelopt-nvfp4 FAILED", forms["modelopt-nvfp4"]["error"][:400], flush=True)
    try:
        # KV sharing: the sequential pipeline runs each layer alone, and a shared layer then finds no
        # shared_kv_states (KeyError); the basic pipeline calibrates on whole forwards.
        P.ct_quantize_save(out / "float", "NVFP4", calib, out / "ct-nvfp4", tok, torch.bfloat16, ignore=CT_IGNORE,
                           pipeline="basic" if variant == "e2b" else None)
        forms["ct-nvfp4"] = {"tensors": P.tensor_table(out / "ct-nvfp4")}
    except Exception as e:
        forms["ct-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        shutil.rmtree(out / "ct-nvfp4", ignore_errors=True)
        print("ct-nvfp4 FAILED", forms["ct-nvfp4"]["error"][:400], flush=True)
    rec["max_abs_vs_float"] = {k: max(float((x - y).abs().max()) for x, y in zip(logits[k], logits["float"])) for k in sets}
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in sets:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    if variant not in ("base", "unified"):
        forms.pop("float-vlm", None)
    (out / "manifest.json").write_text(json.dumps({"arch": "gemma4", "variant": variant, "forms": forms}, indent=1) + "\n")
    print("distinct argmax", distinct, json.dumps(rec["max_abs_vs_float"]), "margins",
          [p["top2_margin"] for p in rec["prompts"]], flush=True)


if __name__ == "__main__":
    main()
