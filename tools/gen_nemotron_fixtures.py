#!/usr/bin/env python3
"""Writes fixtures/nemotron_h/<arch>/<form>/ (complete HF directories), logits.json + logits.f32
and manifest.json for tiny random Nemotron-H / Nemotron 3 models (issue 34), made from
transformers' own NemotronHConfig (no hub) and quantized by the real producers on the CPU.

  arch               config (hidden 64; the layer pattern "M*E-ME": Mamba-2, attention, MoE, MLP,
                     Mamba-2, MoE, i.e. all four kinds; Mamba-2 8 heads of 8, state 16, 2 groups,
                     conv 4 with bias, chunk_size 8; attention 4 heads / 2 KV heads of 16, no RoPE;
                     MLP squared ReLU of 96; MoE 8 routed squared-ReLU experts of 32, top-2, a
                     shared expert of 48, routed_scaling_factor 2.5, norm_topk_prob; untied head;
                     layer_norm_epsilon 1e-5; time_step_limit [0.0, Infinity] as the releases write it)
  nemotron_h         grouped top-k: n_group 2, topk_group 1
  nemotron_h_latent  LatentMoE: moe_latent_size 32 (experts in 32 between fc1/fc2_latent_proj), n_group 1;
                     its float config.json in the releases' spelling (hybrid_override_pattern, a bare
                     Infinity), the other forms as transformers 5.17 writes them (layers_block_type,
                     {"__float__": "Infinity"})
  The shapes llama.cpp's nemotron_h / nemotron_h_moe hold (it tells a layer's kind from per-layer
  head_count_kv and feed_forward_length, and in nemotron_h_moe every FFN layer is MoE, so "-" and
  "E" cannot meet in one model); float form only, vocab 504 (503 tokens and one spare embedding
  row: llama.cpp's converter pads the token list to a multiple of 8 and keeps the tensors as they
  are), for tools/hybrid_llamacpp.py:
  nemotron_h_dense   "M*-M-" (Nemotron-H / Nemotron Nano v2: no experts)
  nemotron3_moe      "MEM*ME" (Nemotron 3 Nano: MoE, n_group 1)
  nemotron3_latent   "MEM*ME" with LatentMoE 32 (Nemotron 3 Super)

  form            producer
  float           transformers save_pretrained, bfloat16
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration) + export_hf_checkpoint
  ct-nvfp4        llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4"),
                  calibrated; the router (mixer.gate) and lm_head left out, as its recipes do
A producer that fails is recorded in manifest.json ("error"), not hidden.

Weights: torch.manual_seed(SEED + arch index), from_config with initializer_range 0.1; RMSNorm
weights 1 + 0.2 N(0,1); the router's e_score_correction_bias 0.05 N(0,1); dt_bias 0.5 + 0.2
N(0,1), so softplus(dt) stays far above time_step_min (transformers 5.17 clamps its prompt form to
[time_step_min, inf) and its decode form not at all; mamba_ssm and this engine clamp to
time_step_limit: on these weights all agree); D 1 + 0.3 N(0,1); everything rounded to bfloat16.

logits.json + logits.f32 as fixtures/hybrid: per prompt the ids, `offset`, `greedy` (16 tokens of
the float model), `top2_margin`, and logits [n_pos][n_vocab] float32 LE of each of `sets`: float
(transformers in float32, eager attention, its torch Mamba-2 chunked scan) and modelopt_w4a16
(ModelOpt's NVFP4 model with its input quantizers off: the dequantized weights in float32) and
modelopt_nvfp4 (its fake-quantized model: tools/producers.py).

Run (a venv with torch, transformers >= 5.17, nvidia-modelopt, llmcompressor, datasets):
  PYTHON tools/gen_nemotron_fixtures.py [--out fixtures/nemotron_h] [--arch nemotron_h,nemotron_h_latent]
"""
import argparse
import copy
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
from gen_hybrid_fixtures import LENGTHS, TEXTS, CHAT, top2_margin, tensor_table  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 20261234
ARCHS = ["nemotron_h", "nemotron_h_latent", "nemotron_h_dense", "nemotron3_moe", "nemotron3_latent"]
PATTERN = {"nemotron_h": "M*E-ME", "nemotron_h_latent": "M*E-ME", "nemotron_h_dense": "M*-M-", "nemotron3_moe": "MEM*ME",
           "nemotron3_latent": "MEM*ME"}
FLOAT_ONLY = {"nemotron_h_dense", "nemotron3_moe", "nemotron3_latent"}
VOCAB_ROWS = {a: 504 for a in FLOAT_ONLY}  # else the tokenizer's size


def sets_of(arch):
    return ["float"] if arch in FLOAT_ONLY else ["float", "modelopt_w4a16", "modelopt_nvfp4"]
CT_IGNORE = ["lm_head", "re:.*mixer.gate$"]


class _FloatOnly(Exception):
    """The arch has the float form only (FLOAT_ONLY)."""


def make_config(arch, vocab, tok_ids):
    from transformers import NemotronHConfig
    extra = dict(moe_latent_size=32, n_group=1, topk_group=1) if arch in ("nemotron_h_latent", "nemotron3_latent") else \
        dict(n_group=1, topk_group=1) if arch == "nemotron3_moe" else dict(n_group=2, topk_group=1)
    return NemotronHConfig(
        vocab_size=VOCAB_ROWS.get(arch, vocab), hidden_size=64, hybrid_override_pattern=PATTERN[arch], num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=96, mamba_num_heads=8, mamba_head_dim=8, ssm_state_size=16, n_groups=2, conv_kernel=4,
        chunk_size=8, use_conv_bias=True, time_step_limit=(0.0, float("inf")), time_step_min=0.001,
        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=48,
        n_shared_experts=1, routed_scaling_factor=2.5, norm_topk_prob=True, layer_norm_epsilon=1e-5,
        initializer_range=0.1, max_position_embeddings=256, tie_word_embeddings=False, use_mamba_kernels=False,
        rescale_prenorm_residual=False, architectures=["NemotronHForCausalLM"], **extra, **tok_ids)


def make_float(arch, tok, out):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED + ARCHS.index(arch))
    cfg = make_config(arch, len(tok), T.token_ids("qwen3", tok))
    cfg._attn_implementation = "eager"
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("norm.weight") or name.endswith("norm_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("dt_bias"):
                p.copy_(0.5 + 0.2 * torch.randn_like(p))
            elif name.endswith(".D"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
            elif name.endswith("conv1d.bias"):
                p.copy_(0.1 * torch.randn_like(p))
        for name, b in m.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.05 * torch.randn_like(b))
    P.save_bf16(m, tok, out)
    if arch == "nemotron_h_latent" or arch in FLOAT_ONLY:  # (llama.cpp's converter reads the letters)
        releases_spelling(out / "config.json", dense=arch == "nemotron_h_dense")


MOE_KEYS = ["n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "moe_shared_expert_intermediate_size",
            "n_shared_experts", "routed_scaling_factor", "norm_topk_prob", "n_group", "topk_group", "moe_latent_size",
            "moe_shared_expert_overlap"]


def releases_spelling(path, dense=False):
    """config.json as the Nemotron releases write it (Python's json): hybrid_override_pattern and
    num_hidden_layers for transformers 5's layers_block_type, and a bare Infinity for its
    {"__float__": "Infinity"}. transformers reads both spellings back. dense: without the MoE keys
    transformers writes for every NemotronHConfig, as the dense releases (Nemotron Nano v2) have
    none (llama.cpp's converter takes num_experts_per_tok for an MoE model)."""
    c = json.loads(path.read_text())
    for k in MOE_KEYS if dense else []:
        c.pop(k, None)
    kinds = {"linear_attention": "M", "full_attention": "*", "mlp": "-", "moe": "E"}
    c["hybrid_override_pattern"] = "".join(kinds[t] for t in c.pop("layers_block_type"))
    c["num_hidden_layers"] = len(c["hybrid_override_pattern"])
    c["time_step_limit"] = [0.0, float("inf")]
    text = json.dumps(c, indent=2, sort_keys=True)
    assert "Infinity" in text
    path.write_text(text + "\n")


def w4a16_of(qmodel):
    """The NVFP4 model with its input quantizers off: the dequantized weights in float32."""
    m = P.modelopt_fake_quant_f32(qmodel)
    for name, mod in m.named_modules():
        if name.endswith("input_quantizer") and hasattr(mod, "disable"):
            mod.disable()
    return m


def make_arch(arch, out_root):
    from transformers import AutoTokenizer
    out = out_root / arch
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = [(ROOT / "data" / f).read_text() for f in ["quality.txt", "calibration.txt"]]
    tok = T.make("qwen3", corpus)
    make_float(arch, tok, out / "float")
    tok = AutoTokenizer.from_pretrained(str(out / "float"))
    model = P.load_float(out / "float")
    model16 = P.load_float(out / "float", torch.bfloat16)

    prompts = [tok(TEXTS[0])["input_ids"][:LENGTHS[0]], tok(TEXTS[1])["input_ids"][:LENGTHS[1]],
               tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"][-LENGTHS[2]:]]
    for p, n in zip(prompts, LENGTHS):
        assert len(p) == n, (arch, len(p), n)
    lines = [l for l in corpus[1].split("\n") if l.strip()]
    calib = [tok(l)["input_ids"][:64] for l in lines]

    SETS = sets_of(arch)
    n_vocab = VOCAB_ROWS.get(arch, len(tok))
    rec = {"arch": arch, "seed": SEED, "float_dtype": "bfloat16", "n_vocab": n_vocab, "n_tokens": len(tok), "versions": P.versions(),
           "logits_file": "logits.f32", "sets": SETS, "pattern": PATTERN[arch], "prompts": []}
    logits = {k: [] for k in SETS}
    offset = 0
    for ids in prompts:
        lg = P.logits_of(model, ids)
        rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids), "top2_margin": top2_margin(lg)})
        offset += len(SETS) * len(ids) * n_vocab
        logits["float"].append(lg)
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"{arch}: argmax takes only {distinct} values over {LENGTHS[2]} positions"
    rec["distinct_argmax_prompt3"] = distinct

    forms = {"float": {"tensors": tensor_table(out / "float")}}
    try:
        if arch in FLOAT_ONLY:
            raise _FloatOnly()
        q = P.modelopt_quantize(model16, "nvfp4", calib)
        P.modelopt_export(q, out / "modelopt-nvfp4", tok)
        logits["modelopt_nvfp4"] = [P.logits_of(P.modelopt_fake_quant_f32(q), ids) for ids in prompts]
        logits["modelopt_w4a16"] = [P.logits_of(w4a16_of(q), ids) for ids in prompts]
        forms["modelopt-nvfp4"] = {"tensors": tensor_table(out / "modelopt-nvfp4")}
    except _FloatOnly:
        pass
    except Exception as e:  # recorded, not hidden
        forms["modelopt-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        for k in ("modelopt_nvfp4", "modelopt_w4a16"):
            logits[k] = [torch.full_like(l, float("nan")) for l in logits["float"]]
        shutil.rmtree(out / "modelopt-nvfp4", ignore_errors=True)
        print(arch, "modelopt-nvfp4 FAILED", forms["modelopt-nvfp4"]["error"][:400], flush=True)
    try:
        if arch in FLOAT_ONLY:
            raise _FloatOnly()
        P.ct_quantize_save(out / "float", "NVFP4", calib, out / "ct-nvfp4", tok, torch.bfloat16, ignore=CT_IGNORE)
        forms["ct-nvfp4"] = {"tensors": tensor_table(out / "ct-nvfp4")}
    except _FloatOnly:
        pass
    except Exception as e:
        forms["ct-nvfp4"] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
        shutil.rmtree(out / "ct-nvfp4", ignore_errors=True)
        print(arch, "ct-nvfp4 FAILED", forms["ct-nvfp4"]["error"][:400], flush=True)
    rec["max_abs_vs_float"] = {k: max(float((a - b).abs().max()) for a, b in zip(logits[k], logits["float"])) for k in SETS}
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in SETS:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    (out / "manifest.json").write_text(json.dumps({"arch": arch, "forms": forms}, indent=1) + "\n")
    print(arch, "distinct argmax", distinct, json.dumps(rec["max_abs_vs_float"]),
          "margins", [p["top2_margin"] for p in rec["prompts"]], flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "nemotron_h"))
    ap.add_argument("--arch", default=",".join(ARCHS))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    for arch in a.arch.split(","):
        make_arch(arch, pathlib.Path(a.out))


if __name__ == "__main__":
    main()
