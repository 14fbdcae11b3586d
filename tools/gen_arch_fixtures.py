#!/usr/bin/env python3
"""Writes fixtures/arch/<arch>/<form>/ (complete HF directories) and fixtures/arch/<arch>/logits.json
for four tiny random models made from transformers configs (no hub), each in five producer forms:

  arch     config (hidden 64, 2 layers, intermediate 128, 4 heads / 2 KV heads, head_dim 16)
  llama    LlamaConfig, rope_theta 500000, rope llama3 scaling (factor 8, low 1, high 4,
           original_max_position_embeddings 64), untied head
  mistral  MistralConfig, sliding_window null, untied head
  qwen2    Qwen2Config (q/k/v bias), tie_word_embeddings true
  qwen3    Qwen3Config, q_norm/k_norm, head_dim 32 (q_proj [128, 64], o_proj [64, 128]), untied

  form            producer
  float           transformers save_pretrained, bfloat16. The producers quantize the model loaded
                  in bfloat16 (as one does with a real bf16 checkpoint; calibration runs in bf16);
                  the reference logits run the same bf16 values in float32. (compressed-tensors
                  then computes its block scales with a bf16 intermediate, block amax / 6 *
                  global_scale rounded to bf16 before the E4M3 cast, so a few % of its scales
                  differ from ModelOpt's float32 ones: see ct_vs_modelopt.)
  modelopt-nvfp4  ModelOpt mtq.quantize(NVFP4_DEFAULT_CFG, max calibration) + export_hf_checkpoint
                  (W4A4: weights NVFP4 and per-layer input_scale)
  modelopt-w4a16  ModelOpt mtq.quantize(W4A16_NVFP4_CFG) + export_hf_checkpoint (weights only)
  ct-nvfp4        llm-compressor oneshot QuantizationModifier(targets="Linear", scheme="NVFP4",
                  ignore=["lm_head"]) calibrated on CALIB, save_pretrained(save_compressed=True)
  ct-nvfp4a16     the same with scheme "NVFP4A16" (no calibration)

ModelOpt on the CPU (details in tools/producers.py): quantizer insertion, max calibration, amax,
the quantize arithmetic and the whole export are ModelOpt's own code. Not ModelOpt's code: the
fake-quant forward of an NVFP4 quantizer after calibration, whose CUDA-only op
(tensor_quant._dynamic_block_quantize_impl) is replaced for CPU tensors by a call to ModelOpt's
NVFP4QTensor.quantize + dequantize with weights_scaling_factor_2 = amax / (6 * 448). The
fake-quant logits (b) and (c) below depend on that step; the checkpoints do not (export computes
its NVFP4 weights with NVFP4QTensor itself).

Weights: torch.manual_seed(SEED) then from_config with initializer_range 0.1 (so logits differ
visibly between tokens); RMSNorm weights (incl. q_norm/k_norm) set to 1 + 0.2 N(0,1) and biases
to 0.1 N(0,1) so that norms and biases are exercised; everything rounded to bfloat16.

Tokenizers (trained here with `tokenizers` on data/quality.txt + data/calibration.txt):
  llama    byte-level BPE, Llama 3 Split pattern, <|begin_of_text|> added as BOS,
           <|end_of_text|>, <|start_header_id|>, <|end_header_id|>, <|eot_id|> (eos)
  qwen2/3  byte-level BPE, Qwen2 Split pattern, no BOS, <|endoftext|> (pad), <|im_start|>,
           <|im_end|> (eos)
  mistral  SentencePiece-style BPE: <unk> <s> </s>, byte-fallback tokens <0x00>..<0xFF> at ids
           3..258, `\u2581` for spaces (Prepend + Replace normalizer), <s> added as BOS
and saved through PreTrainedTokenizerFast.save_pretrained with a family chat template in
tokenizer_config.json.

logits.json + logits.f32: per prompt (lengths 5, 17, 40; BOS first where the family adds it) the
token ids, `greedy` (16 tokens of the float model by argmax, no EOS stop) and `offset`; logits.f32
holds little-endian float32 logits, for each prompt in order and within it each of `sets` in order,
[n_pos][n_vocab] (so set k of a prompt starts at offset + k * n_pos * n_vocab floats):
  float           transformers' float model in float32, eager attention
  modelopt_w4a16  the ModelOpt fake-quantized W4A16 model (weights quantized, activations float),
                  cast to float32 after calibration, with ModelOpt's requantize_resmooth_fused_llm_layers
                  applied as its export does (q/k/v and gate/up share one amax), so it quantizes
                  exactly as the exported checkpoint says
  modelopt_nvfp4  the same for the NVFP4 (W4A4) model: activations fake-quantized too
  ct_nvfp4a16     ct-nvfp4a16 loaded back by transformers + compressed-tensors (dequantize=True),
                  float32, the weights dequantized by compressed-tensors' own unpack + dequantize
                  in float32 (its loader unpacks to bf16, which rounds them), its QDQ forward
  ct_nvfp4        the same for ct-nvfp4 (compressed-tensors' W4A4 activation QDQ in the forward)
Exact float32 (binary: 5 sets x 3 prompts would be ~1.5 MB per arch as JSON text).
`ct_vs_modelopt`: per CT form, how many NVFP4 code bytes, block-scale bytes, tensor and input
scales differ from the ModelOpt form of the same scheme; `max_abs_vs_float`: each set's largest
logit difference from `float`.

Run: /work/tools-venv/v/bin/python tools/gen_arch_fixtures.py [--out fixtures/arch] [--arch llama,...]
     (--plain-rope --out /tmp/x --arch llama: a llama without RoPE scaling, for
     NVFP4_ARCH_FIXTURES=/tmp/x build/nvfp4_tests --gtest_filter='Arch/ArchFixture.*/llama')
"""
import argparse
import json
import os
import pathlib
import shutil
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import producers as P  # noqa: E402
import arch_tokenizers as T  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 20261201
ARCHS = ["llama", "mistral", "qwen2", "qwen3"]
SETS = ["float", "modelopt_w4a16", "modelopt_nvfp4", "ct_nvfp4a16", "ct_nvfp4"]
LENGTHS = [5, 17, 40]
TEXTS = ["The capital of France is Paris, and the river is the Seine.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n"]
CHAT = [{"role": "user", "content": "The lighthouse keeper climbed the spiral stairs every evening. What did he carry?"}]


def make_config(arch, vocab, tok_ids, plain_rope=False):
    from transformers import LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config
    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, initializer_range=0.1, rms_norm_eps=1e-6,
                  max_position_embeddings=256, **tok_ids)
    if arch == "llama" and plain_rope:
        return LlamaConfig(**common, tie_word_embeddings=False, architectures=["LlamaForCausalLM"],
                           rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    if arch == "llama":
        return LlamaConfig(**common, tie_word_embeddings=False, architectures=["LlamaForCausalLM"],
                           rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 64})
    if arch == "mistral":
        return MistralConfig(**common, sliding_window=None, tie_word_embeddings=False,
                             architectures=["MistralForCausalLM"], rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    if arch == "qwen2":
        return Qwen2Config(**common, tie_word_embeddings=True, use_sliding_window=False,
                           architectures=["Qwen2ForCausalLM"], rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    if arch == "qwen3":
        return Qwen3Config(**common, head_dim=32, tie_word_embeddings=False, use_sliding_window=False,
                           architectures=["Qwen3ForCausalLM"], rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    raise ValueError(arch)


def make_float(arch, tok, out, plain_rope=False):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(SEED + ARCHS.index(arch))
    cfg = make_config(arch, len(tok), T.token_ids(arch, tok), plain_rope)
    cfg._attn_implementation = "eager"
    m = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    P.save_bf16(m, tok, out)



def st_tensors(d):
    from safetensors import safe_open
    out = {}
    for f in sorted(pathlib.Path(d).glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                out[k] = s.get_tensor(k)
    return out


def compare_ct_modelopt(ct_dir, mo_dir):
    """Bytes of NVFP4 codes / block scales and tensor scales that differ between the two producers."""
    ct, mo = st_tensors(ct_dir), st_tensors(mo_dir)
    r = {"layers": 0, "code_bytes": 0, "code_bytes_differ": 0, "scale_bytes": 0, "scale_bytes_differ": 0,
         "tensor_scales_differ": 0, "input_scales": 0, "input_scales_differ": 0, "max_input_scale_rel_diff": 0.0}
    for k in ct:
        if not k.endswith(".weight_packed"):
            continue
        mod = k[: -len(".weight_packed")]
        r["layers"] += 1
        a, b = ct[k], mo[mod + ".weight"]
        r["code_bytes"] += a.numel()
        r["code_bytes_differ"] += int((a != b).sum())
        sa, sb = ct[mod + ".weight_scale"].view(torch.uint8), mo[mod + ".weight_scale"].view(torch.uint8)
        r["scale_bytes"] += sa.numel()
        r["scale_bytes_differ"] += int((sa != sb).sum())
        s2_ct = 1.0 / ct[mod + ".weight_global_scale"].float().reshape(())
        r["tensor_scales_differ"] += int(float(s2_ct) != float(mo[mod + ".weight_scale_2"].float()))
        if mod + ".input_global_scale" in ct and mod + ".input_scale" in mo:
            r["input_scales"] += 1
            i_ct = 1.0 / float(ct[mod + ".input_global_scale"].float().reshape(()))
            i_mo = float(mo[mod + ".input_scale"].float())
            r["input_scales_differ"] += int(i_ct != i_mo)
            r["max_input_scale_rel_diff"] = max(r["max_input_scale_rel_diff"], abs(i_ct - i_mo) / i_mo)
    return r


def make_arch(arch, out_root, plain_rope=False):
    from transformers import AutoTokenizer
    out = out_root / arch
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    corpus = [(ROOT / "data" / f).read_text() for f in ["quality.txt", "calibration.txt"]]
    tok = T.make(arch, corpus)
    make_float(arch, tok, out / "float", plain_rope)
    tok = AutoTokenizer.from_pretrained(str(out / "float"))
    model = P.load_float(out / "float")             # float32 (the bf16 values, exactly)
    model16 = P.load_float(out / "float", torch.bfloat16)  # what the producers quantize

    prompts = [tok(TEXTS[0])["input_ids"][:LENGTHS[0]], tok(TEXTS[1])["input_ids"][:LENGTHS[1]],
               tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"][:LENGTHS[2]]]
    for p, n in zip(prompts, LENGTHS):
        assert len(p) == n, (arch, len(p), n)
    lines = [l for l in corpus[1].split("\n") if l.strip()]
    calib = [tok(l)["input_ids"][:64] for l in lines[:8]]

    rec = {"arch": arch, "seed": SEED, "float_dtype": "bfloat16", "n_vocab": len(tok), "versions": P.versions(),
           "logits_file": "logits.f32", "sets": SETS, "prompts": []}
    logits = {k: [] for k in SETS}
    offset = 0
    for ids in prompts:
        rec["prompts"].append({"ids": ids, "offset": offset, "greedy": P.greedy(model, ids)})
        offset += len(SETS) * len(ids) * len(tok)
        logits["float"].append(P.logits_of(model, ids))
    distinct = len(set(logits["float"][2].argmax(-1).tolist()))
    assert distinct >= 4, f"{arch}: argmax takes only {distinct} values over 40 positions"
    rec["distinct_argmax_prompt3"] = distinct

    for form, algo, key in [("modelopt-w4a16", "w4a16", "modelopt_w4a16"), ("modelopt-nvfp4", "nvfp4", "modelopt_nvfp4")]:
        q = P.modelopt_quantize(model16, algo, calib)
        P.modelopt_export(q, out / form, tok)
        q32 = P.modelopt_fake_quant_f32(q)
        logits[key] = [P.logits_of(q32, ids) for ids in prompts]
        del q, q32
    for form, scheme, key in [("ct-nvfp4a16", "NVFP4A16", "ct_nvfp4a16"), ("ct-nvfp4", "NVFP4", "ct_nvfp4")]:
        P.ct_quantize_save(out / "float", scheme, calib, out / form, tok, torch.bfloat16)
        m = P.load_ct_decompressed(out / form)
        logits[key] = [P.logits_of(m, ids) for ids in prompts]
        del m
    rec["ct_vs_modelopt"] = {"ct-nvfp4a16 vs modelopt-w4a16": compare_ct_modelopt(out / "ct-nvfp4a16", out / "modelopt-w4a16"),
                             "ct-nvfp4 vs modelopt-nvfp4": compare_ct_modelopt(out / "ct-nvfp4", out / "modelopt-nvfp4")}
    rec["max_abs_vs_float"] = {k: max(float((a - b).abs().max()) for a, b in zip(logits[k], logits["float"])) for k in SETS}
    with open(out / "logits.f32", "wb") as f:
        for i in range(len(prompts)):
            for k in SETS:
                f.write(logits[k][i].contiguous().numpy().astype("<f4").tobytes())
    (out / "logits.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(arch, "distinct argmax", distinct, json.dumps(rec["max_abs_vs_float"]), json.dumps(rec["ct_vs_modelopt"]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "arch"))
    ap.add_argument("--arch", default=",".join(ARCHS))
    ap.add_argument("--plain-rope", action="store_true",
                    help="llama without the llama3 RoPE scaling (a tree for a runtime that lacks it; not committed)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = pathlib.Path(a.out)
    for arch in a.arch.split(","):
        make_arch(arch, out, a.plain_rope)


if __name__ == "__main__":
    main()
