#!/usr/bin/env python3
"""Writes fixtures/moe/<arch>/<form>/ (complete HF directories), fixtures/moe/<arch>/logits.json +
logits.f32 and fixtures/moe/<arch>/manifest.json for four tiny random mixture-of-experts models
made from transformers configs (no hub), each in the forms of the real producers; then (unless
--no-llamacpp) llama.cpp's own GGUF conversions and greedy tokens (tools/moe_llamacpp.py).

  arch       config (hidden 64, 2 layers, 4 heads / 2 KV heads, head_dim 16, 8 experts, top-2,
             expert intermediate 32, every layer MoE, untied head)
  qwen3_moe  Qwen3MoeConfig, norm_topk_prob true, q_norm/k_norm per head (16)
  mixtral    MixtralConfig (intermediate_size 32 is the expert width), sliding_window null
  olmoe      OlmoeConfig, norm_topk_prob false, q_norm/k_norm over the whole q / k width (64 each:
             4 KV heads and rms_norm_eps 1e-5 as OLMoE-1B-7B, for llama.cpp; see make_config)
  qwen2_moe  Qwen2MoeConfig, q/k/v bias, shared expert (intermediate 64) + shared_expert_gate
             [1, 64], norm_topk_prob false, decoder_sparse_step 1, mlp_only_layers []
  qwen3_moe_i64  qwen3_moe with expert intermediate 64: llama.cpp's NVFP4 repack needs every
             weight's input width to be a multiple of 64 (its super-block), which down_proj's 32
             is not, so only this one gets a llama.cpp NVFP4 GGUF (forms float and modelopt-* only)

  form            producer
  float           transformers save_pretrained, bfloat16
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration on CALIB) + export_hf_checkpoint
  modelopt-w4a16  ModelOpt mtq.quantize(W4A16_NVFP4_CFG) + export_hf_checkpoint
  ct-nvfp4a16     llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4A16",
                  ignore=IGNORE) (it linearizes the fused experts itself), save_compressed
  ct-nvfp4        the same with scheme "NVFP4" calibrated on CALIB (llm-compressor's default
                  moe_calibrate_all_experts: every expert sees every calibration token)

Weights: torch.manual_seed(SEED + arch index), from_config with initializer_range 0.1 (routers
and experts too: their _init_weights draw N(0, 0.1)); RMSNorm weights 1 + 0.2 N(0,1), biases
0.1 N(0,1); everything rounded to bfloat16. ModelOpt's CPU fake quant: tools/producers.py.

logits.json + logits.f32 as fixtures/arch (tools/gen_arch_fixtures.py): per prompt the ids,
`offset`, `greedy` (16 tokens of the float model) and logits [n_pos][n_vocab] float32 LE of each
of `sets`: float (transformers' float model in float32, eager), modelopt_w4a16 and modelopt_nvfp4
(ModelOpt's fake-quantized models in float32 with the export's shared amax). `routing`: per
prompt, per layer, per position the float model's top-k expert ids and weights.

Run: /work/tools-venv/v/bin/python tools/gen_moe_fixtures.py [--out fixtures/moe] [--arch a,b] [--no-llamacpp]
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402
import arch_tokenizers as T  # noqa: E402
import moe_manifest as M  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 20261211
ARCHS = ["qwen3_moe", "mixtral", "olmoe", "qwen2_moe", "qwen3_moe_i64"]
TOKENIZER = {"qwen3_moe": "qwen3", "qwen2_moe": "qwen2", "olmoe": "qwen2", "mixtral": "llama", "qwen3_moe_i64": "qwen3"}
SETS = ["float", "modelopt_w4a16", "modelopt_nvfp4"]
LENGTHS = [5, 12, 24]
TEXTS = ["The capital of France is Paris, and the river is the Seine.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"]
CHAT = [{"role": "user", "content": "The lighthouse keeper climbed the spiral stairs every evening. What did he carry?"}]
# The routers (and Qwen2-MoE's shared_expert_gate, an nn.Linear [1, hidden]) stay unquantized, as
# llm-compressor's MoE examples write it; in transformers 5 the routers are not nn.Linear anyway.
CT_IGNORE = ["lm_head", "re:.*mlp.gate$", "re:.*mlp.shared_expert_gate$"]


def make_config(arch, vocab, tok_ids):
    from transformers import MixtralConfig, OlmoeConfig, Qwen2MoeConfig, Qwen3MoeConfig
    common = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  initializer_range=0.1, rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=False,
                  num_experts_per_tok=2, **tok_ids)
    rope = {"rope_type": "default", "rope_theta": 1000000.0}
    if arch in ("qwen3_moe", "qwen3_moe_i64"):
        moe_i = 64 if arch == "qwen3_moe_i64" else 32
        return Qwen3MoeConfig(**common, head_dim=16, intermediate_size=128, moe_intermediate_size=moe_i, num_experts=8,
                              norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False,
                              architectures=["Qwen3MoeForCausalLM"], rope_parameters=rope)
    if arch == "mixtral":
        return MixtralConfig(**common, head_dim=16, intermediate_size=32, num_local_experts=8, sliding_window=None,
                             architectures=["MixtralForCausalLM"], rope_parameters=rope)
    if arch == "olmoe":
        # As OLMoE-1B-7B: no GQA (llama.cpp's olmoe wants attn_k_norm of n_embd: with 2 KV heads it
        # refuses the file, "tensor 'blk.0.attn_k_norm.weight' has wrong shape; expected 64, got 32")
        # and rms_norm_eps 1e-5 (llama.cpp's converter writes 1e-5 for olmoe whatever the config says).
        return OlmoeConfig(**{**common, "rms_norm_eps": 1e-5, "num_key_value_heads": 4}, intermediate_size=32, num_experts=8, norm_topk_prob=False, clip_qkv=None,
                           architectures=["OlmoeForCausalLM"], rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    if arch == "qwen2_moe":
        return Qwen2MoeConfig(**common, intermediate_size=128, moe_intermediate_size=32, shared_expert_intermediate_size=64,
                              num_experts=8, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
                              use_sliding_window=False, architectures=["Qwen2MoeForCausalLM"], rope_parameters=rope)
    raise ValueError(arch)


def make_float(arch, tok, out):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED + ARCHS.index(arch))
    cfg = make_config(arch, len(tok), T.token_ids(TOKENIZER[arch], tok))
    cfg._attn_implementation = "eager"
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    P.save_bf16(m, tok, out)


def routers(model):
    return [(n, mod) for n, mod in model.named_modules() if n.endswith("mlp.gate") and hasattr(mod, "top_k")]


class RouteRecorder:
    """Forward hooks on the routers: top-k ids/weights of each call and per-expert token counts."""

    def __init__(self, model):
        self.calls, self.counts, self.hooks = {}, {}, []
        for name, mod in routers(model):
            self.counts[name] = [0] * mod.num_experts
            self.calls[name] = []
            self.hooks.append(mod.register_forward_hook(self._hook(name)))

    def _hook(self, name):
        def f(mod, args, out):
            _, w, idx = out
            self.calls[name].append((idx.tolist(), w.float().tolist()))
            for e in idx.reshape(-1).tolist():
                self.counts[name][e] += 1
        return f

    def close(self):
        for h in self.hooks:
            h.remove()



def make_arch(arch, out_root, llamacpp):
    from transformers import AutoTokenizer
    out = out_root / arch
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = [(ROOT / "data" / f).read_text() for f in ["quality.txt", "calibration.txt"]]
    tok = T.make(TOKENIZER[arch], corpus)
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
           "router": M.ROUTER_DOC[arch], "logits_file": "logits.f32", "sets": SETS, "prompts": []}
    logits = {k: [] for k in SETS}
    offset = 0
    for ids in prompts:
        rr = RouteRecorder(model)
        lg = P.logits_of(model, ids)
        rr.close()
        routing = {n: {"experts": c[0][0], "weights": c[0][1]} for n, c in rr.calls.items()}
        rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids), "routing": routing})
        offset += len(SETS) * len(ids) * len(tok)
        logits["float"].append(lg)
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"{arch}: argmax takes only {distinct} values over {LENGTHS[2]} positions"
    rec["distinct_argmax_prompt3"] = distinct

    # Calibration coverage: tokens the float bf16 model routes to each expert over CALIB.
    rr = RouteRecorder(model16)
    P.forward_loop_of(calib)(model16)
    rr.close()
    rec["calibration"] = {"lines": len(calib), "tokens": sum(len(c) for c in calib), "tokens_per_expert": rr.counts}
    assert all(min(c) > 0 for c in rr.counts.values()), (arch, rr.counts)

    quant_state = {}
    for form, algo, key in [("modelopt-w4a16", "w4a16", "modelopt_w4a16"), ("modelopt-nvfp4", "nvfp4", "modelopt_nvfp4")]:
        q = P.modelopt_quantize(model16, algo, calib)
        quant_state[form] = M.modelopt_amax_report(q)
        P.modelopt_export(q, out / form, tok)
        q32 = P.modelopt_fake_quant_f32(q)
        logits[key] = [P.logits_of(q32, ids) for ids in prompts]
        del q, q32
    for form, scheme in [("ct-nvfp4a16", "NVFP4A16"), ("ct-nvfp4", "NVFP4")] if arch != "qwen3_moe_i64" else []:
        try:
            P.ct_quantize_save(out / "float", scheme, calib, out / form, tok, torch.bfloat16, ignore=CT_IGNORE)
        except Exception as e:  # recorded, not hidden: the README says what failed
            quant_state[form] = {"error": f"{type(e).__name__}: {e}"[:2000]}
            shutil.rmtree(out / form, ignore_errors=True)
            print(arch, form, "FAILED", quant_state[form]["error"][:400], flush=True)
    rec["max_abs_vs_float"] = {k: max(float((a - b).abs().max()) for a, b in zip(logits[k], logits["float"])) for k in SETS}
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in SETS:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    manifest = M.manifest(out, quant_state)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(arch, "distinct argmax", distinct, json.dumps(rec["max_abs_vs_float"]), "calib", rr.counts, flush=True)
    if llamacpp:
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "moe_llamacpp.py"), str(out)])
        if r.returncode != 0:
            print(arch, "moe_llamacpp.py exited", r.returncode, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "moe"))
    ap.add_argument("--arch", default=",".join(ARCHS))
    ap.add_argument("--no-llamacpp", action="store_true")
    ap.add_argument("--manifest-only", action="store_true", help="rewrite manifest.json from the directories on disk")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)
    out = pathlib.Path(a.out)
    for arch in a.arch.split(","):
        if a.manifest_only:
            old = json.loads((out / arch / "manifest.json").read_text())
            qs = {k: v["calibration_state"] for k, v in old["forms"].items() if "calibration_state" in v}
            (out / arch / "manifest.json").write_text(json.dumps(M.manifest(out / arch, qs), indent=1) + "\n")
            continue
        make_arch(arch, out, not a.no_llamacpp)


if __name__ == "__main__":
    main()
