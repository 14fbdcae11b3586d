#!/usr/bin/env python3
"""Writes fixtures/hybrid/<arch>/<form>/ (complete HF directories), logits.json + logits.f32 and
manifest.json for tiny random Gated DeltaNet hybrids (issue 32: Qwen3.5 / Qwen3.6 / Qwen3-Next),
made from transformers' own configs (no hub) and quantized by the real producers on the CPU.

  arch         config (hidden 64, 4 layers: linear_attention x3 then full_attention, as the
               releases' full_attention_interval 4; full attention 4 heads / 2 KV heads of 16 with
               its output gate, partial RoPE 0.25; Gated DeltaNet 2 key heads / 4 value heads of
               16, conv kernel 4; untied head; rms_norm_eps 1e-6)
  qwen3_5      Qwen3_5TextConfig + Qwen3_5ForCausalLM: dense SwiGLU MLP of 128
  qwen3_5_moe  Qwen3_5MoeTextConfig + Qwen3_5MoeForCausalLM: 8 routed experts of 32, top-2, and a
               sigmoid-gated shared expert of 64 in every layer
  qwen3_next   Qwen3NextConfig + Qwen3NextForCausalLM: the fused in_proj_qkvz / in_proj_ba form,
               8 routed experts of 32, top-2, shared expert of 64

  form            producer
  float           transformers save_pretrained, bfloat16
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration) + export_hf_checkpoint
  modelopt-w4a16  ModelOpt mtq.quantize(W4A16_NVFP4_CFG) + export_hf_checkpoint
  ct-nvfp4a16     llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4A16")
  ct-nvfp4        the same with scheme "NVFP4", calibrated
  float-vlm       (qwen3_5, qwen3_5_moe) the float model as the releases lay it out: transformers'
                  Qwen3_5(Moe)ForConditionalGeneration with the same text weights under
                  model.language_model.*, a one-block vision tower (model.visual.*), and one MTP
                  layer (mtp.fc, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden, mtp.norm,
                  mtp.layers.0.* shaped as the last full-attention layer; random bf16, as vLLM's
                  qwen3_5_mtp.py names them) with mtp_num_hidden_layers 1 in its text_config.
                  Its text logits are the float model's (checked when written).
A producer that fails on an architecture is recorded in manifest.json ("error"), not hidden.

Weights: torch.manual_seed(SEED + arch index), from_config with initializer_range 0.1; RMSNorm
weights as each family initialises them plus 0.2 N(0,1) (the zero-centred (1 + w) norms of
qwen3_5 start at 0, so they become 0.2 N(0,1): every norm weight is exercised), A_log and
dt_bias as initialised; everything rounded to bfloat16.

logits.json + logits.f32 as fixtures/moe: per prompt the ids, `offset`, `greedy` (16 tokens of
the float model), `top2_margin` (the float model's smallest gap between its two largest logits
over the prompt's positions: where greedy comparisons must stop at a near tie), and logits
[n_pos][n_vocab] float32 LE of each of `sets`: float (transformers in float32, eager attention,
its torch Gated DeltaNet), modelopt_w4a16 and modelopt_nvfp4 (ModelOpt's fake-quantized models in
float32 with the export's shared amax: tools/producers.py).

Run (a venv with torch, transformers >= 5.17, nvidia-modelopt, llmcompressor, datasets):
  PYTHON tools/gen_hybrid_fixtures.py [--out fixtures/hybrid] [--arch qwen3_5,qwen3_5_moe,qwen3_next]
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
SEED = 20261203
ARCHS = ["qwen3_5", "qwen3_5_moe", "qwen3_next"]
SETS = ["float", "modelopt_w4a16", "modelopt_nvfp4"]
LENGTHS = [5, 17, 40]
TEXTS = ["The capital of France is Paris, and the river is the Seine.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"]
CHAT = [{"role": "user", "content": "The lighthouse keeper climbed the spiral stairs every evening. What did he carry?"}]
LAYER_TYPES = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
# Routers, shared-expert gates and the Gated DeltaNet's small in_proj_a / in_proj_b (and
# qwen3_next's in_proj_ba) stay unquantized in llm-compressor's recipes for these families.
CT_IGNORE = ["lm_head", "re:.*mlp.gate$", "re:.*mlp.shared_expert_gate$", "re:.*in_proj_a$", "re:.*in_proj_b$",
             "re:.*in_proj_ba$"]


def make_config(arch, vocab, tok_ids):
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, initializer_range=0.1, rms_norm_eps=1e-6, max_position_embeddings=256,
                  tie_word_embeddings=False, layer_types=LAYER_TYPES, linear_conv_kernel_dim=4,
                  linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
                  **tok_ids)
    rope = {"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.25}
    if arch == "qwen3_5":
        from transformers import Qwen3_5TextConfig
        return Qwen3_5TextConfig(**common, intermediate_size=128, rope_parameters=rope,
                                 architectures=["Qwen3_5ForCausalLM"])
    moe = dict(intermediate_size=128, moe_intermediate_size=32, shared_expert_intermediate_size=64, num_experts=8,
               num_experts_per_tok=2, rope_parameters=rope)
    if arch == "qwen3_5_moe":
        from transformers import Qwen3_5MoeTextConfig
        return Qwen3_5MoeTextConfig(**common, **moe, architectures=["Qwen3_5MoeForCausalLM"])
    if arch == "qwen3_next":
        from transformers import Qwen3NextConfig
        return Qwen3NextConfig(**common, **moe, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                               architectures=["Qwen3NextForCausalLM"])
    raise ValueError(arch)


def make_float(arch, tok, out):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED + ARCHS.index(arch))
    cfg = make_config(arch, len(tok), T.token_ids("qwen3", tok))
    cfg._attn_implementation = "eager"
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.add_(0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    P.save_bf16(m, tok, out)



# (shared with the other fixture scripts; gen_nemotron_fixtures.py imports them from here)
top2_margin = P.top2_margin
tensor_table = P.tensor_table


VISION = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=64, out_hidden_size=64, patch_size=16,
              spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64)


@torch.no_grad()
def make_float_vlm(arch, float_dir, out, prompts):
    """The releases' layout (see the docstring), from the float text model in float_dir."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer
    if arch == "qwen3_5":
        from transformers import Qwen3_5Config as Cfg, Qwen3_5ForConditionalGeneration as VLM
    else:
        from transformers import Qwen3_5MoeConfig as Cfg, Qwen3_5MoeForConditionalGeneration as VLM
    text = P.load_float(float_dir)
    tc = text.config.to_dict()
    tc["mtp_num_hidden_layers"] = 1
    tc.pop("_name_or_path", None)  # the generating machine's path: not part of the fixture
    torch.manual_seed(SEED + 100 + ARCHS.index(arch))
    cfg = Cfg(text_config=tc, vision_config=VISION, tie_word_embeddings=False,
              architectures=[VLM.__name__])
    vlm = VLM(cfg).eval()
    sd = {k: v for k, v in text.state_dict().items()}
    mapped = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v for k, v in sd.items()}
    missing, unexpected = vlm.load_state_dict(mapped, strict=False)
    assert not unexpected, unexpected
    assert all(k.startswith("model.visual.") for k in missing), [k for k in missing if not k.startswith("model.visual.")]
    vlm = vlm.to(torch.bfloat16)
    vlm.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(float_dir)).save_pretrained(str(out), save_jinja_files=False)
    # The MTP layer: transformers does not model it, the releases ship it; added to the file.
    full = max(i for i, t in enumerate(LAYER_TYPES) if t == "full_attention")
    h = text.config.hidden_size
    mtp = {f"mtp.layers.0.{k[len(f'model.layers.{full}.'):]}": (v.float() + 0.02 * torch.randn_like(v.float())).to(torch.bfloat16)
           for k, v in sd.items() if k.startswith(f"model.layers.{full}.")}
    # Routed experts one by one, as the trunk's are saved (transformers holds them fused in memory).
    for k in [k for k in mtp if k.endswith("mlp.experts.gate_up_proj")]:
        pre, gu = k[: -len("gate_up_proj")], mtp.pop(k)
        down = mtp.pop(pre + "down_proj")
        f = gu.shape[1] // 2
        for e in range(gu.shape[0]):
            mtp[f"{pre}{e}.gate_proj.weight"] = gu[e, :f].clone()
            mtp[f"{pre}{e}.up_proj.weight"] = gu[e, f:].clone()
            mtp[f"{pre}{e}.down_proj.weight"] = down[e].clone()
    mtp["mtp.fc.weight"] = (0.1 * torch.randn(h, 2 * h)).to(torch.bfloat16)
    for n in ["pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"]:
        mtp[f"mtp.{n}.weight"] = (0.2 * torch.randn(h)).to(torch.bfloat16)
    files = sorted(pathlib.Path(out).glob("*.safetensors"))
    assert len(files) == 1, files
    st = load_file(str(files[0]))
    st.update({k: v.contiguous() for k, v in mtp.items()})
    save_file(st, str(files[0]), metadata={"format": "pt"})
    back = VLM.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager").eval()
    ref = P.load_float(float_dir)
    for ids in prompts:
        t = torch.tensor([ids])
        d = float((back(input_ids=t).logits[0] - ref(input_ids=t).logits[0]).abs().max())
        assert d == 0.0, (arch, "float-vlm text logits differ from the float model's by", d)


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

    rec = {"arch": arch, "seed": SEED, "float_dtype": "bfloat16", "n_vocab": len(tok), "versions": P.versions(),
           "logits_file": "logits.f32", "sets": SETS, "prompts": []}
    logits = {k: [] for k in SETS}
    offset = 0
    for ids in prompts:
        lg = P.logits_of(model, ids)
        rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids), "top2_margin": top2_margin(lg)})
        offset += len(SETS) * len(ids) * len(tok)
        logits["float"].append(lg)
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"{arch}: argmax takes only {distinct} values over {LENGTHS[2]} positions"
    rec["distinct_argmax_prompt3"] = distinct

    forms = {"float": {"tensors": tensor_table(out / "float")}}
    if arch in ("qwen3_5", "qwen3_5_moe"):
        make_float_vlm(arch, out / "float", out / "float-vlm", prompts)
        forms["float-vlm"] = {"tensors": tensor_table(out / "float-vlm")}
    for form, algo, key in [("modelopt-w4a16", "w4a16", "modelopt_w4a16"), ("modelopt-nvfp4", "nvfp4", "modelopt_nvfp4")]:
        try:
            q = P.modelopt_quantize(model16, algo, calib)
            P.modelopt_export(q, out / form, tok)
            q32 = P.modelopt_fake_quant_f32(q)
            logits[key] = [P.logits_of(q32, ids) for ids in prompts]
            forms[form] = {"tensors": tensor_table(out / form)}
            del q, q32
        except Exception as e:  # recorded, not hidden
            forms[form] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
            logits[key] = [torch.full_like(l, float("nan")) for l in logits["float"]]
            shutil.rmtree(out / form, ignore_errors=True)
            print(arch, form, "FAILED", forms[form]["error"][:400], flush=True)
    for form, scheme in [("ct-nvfp4a16", "NVFP4A16"), ("ct-nvfp4", "NVFP4")]:
        try:
            P.ct_quantize_save(out / "float", scheme, calib, out / form, tok, torch.bfloat16, ignore=CT_IGNORE)
            forms[form] = {"tensors": tensor_table(out / form)}
        except Exception as e:
            forms[form] = {"error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()[-3000:]}
            shutil.rmtree(out / form, ignore_errors=True)
            print(arch, form, "FAILED", forms[form]["error"][:400], flush=True)
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
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "hybrid"))
    ap.add_argument("--arch", default=",".join(ARCHS))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    for arch in a.arch.split(","):
        make_arch(arch, pathlib.Path(a.out))


if __name__ == "__main__":
    main()
