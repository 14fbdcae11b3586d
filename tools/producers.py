"""The real NVFP4 producers run on a CPU: NVIDIA ModelOpt (quantize + export_hf_checkpoint) and
llm-compressor (oneshot + save_compressed), shared by tools/gen_arch_fixtures.py and
tools/gen_smollm2_hf.py.

ModelOpt on a CPU. `mtq.quantize(model, cfg, forward_loop)` runs ModelOpt's own code throughout:
it inserts its TensorQuantizers into every nn.Linear, runs ModelOpt's max calibration (the
forward_loop with quantization disabled and statistics collection on: per-tensor amax of every
weight and, for NVFP4_DEFAULT_CFG, of every linear input) and loads the amax values. The one step
that cannot run on a CPU is the fake-quant forward of an NVFP4 quantizer afterwards:
`tensor_quant._dynamic_block_quantize_impl` asserts a CUDA amax (then calls a Triton or CUDA
kernel). `install_cpu_fake_quant()` replaces the module attribute
`modelopt.torch.quantization.tensor_quant.dynamic_block_quantize_op` (the name ModelOpt's
`_dynamic_block_quantize_forward` looks up at call time) by a function that, for CPU tensors in
the NVFP4 format only (E2M1 values, E4M3 scales, any block size), calls ModelOpt's own real
quantizer and dequantizer:
    q, s, s2 = NVFP4QTensor.quantize(x, block, weights_scaling_factor_2=amax / (6 * 448))
    y = q.dequantize(x.dtype, scale=s, double_scale=s2, block_sizes={-1: block})
i.e. the same per-tensor scale amax/(6*448), per-block E4M3 scale (block amax / 6 / s2, rounded
by a float8_e4m3fn cast) and E2M1 round-to-nearest-even that export_hf_checkpoint writes for a
weight. Anything else (another format, a CUDA tensor) goes to ModelOpt's original op. So: the
quantizer insertion, calibration, amax, the quantize arithmetic and the whole export
(`export_hf_checkpoint`: its requantize_resmooth_fused_llm_layers, which gives q/k/v and gate/up
one shared weight amax and input amax, packing, scales, input_scale, hf_quant_config.json,
config.json) are ModelOpt's code; only the dispatch of the fake-quant op to ModelOpt's
NVFP4QTensor instead of its CUDA/Triton kernel is ours. For the fake-quant logits the quantized
model is copied to float32 and ModelOpt's requantize_resmooth_fused_llm_layers is applied to the
copy (modelopt_fake_quant_f32), so it quantizes with the amax the export wrote; without it the
fake-quant model keeps per-layer amax and differs from its own export. The CUDA kernel computes the same formula in its own order; where it
would round a value differently (a product at a rounding boundary) our fake-quant logits follow
the exported checkpoint, which is what the C++ side runs.

llm-compressor runs unmodified on the CPU (its NVFP4 observers and compression are torch code).
"""
import copy
import json
import os
import pathlib
import shutil

import torch

E2M1_MAX, E4M3_MAX = 6.0, 448.0

_ORIG_OP = None


def install_cpu_fake_quant():
    global _ORIG_OP
    from modelopt.torch.quantization import tensor_quant
    from modelopt.torch.quantization.qtensor import NVFP4QTensor

    if _ORIG_OP is not None:
        return
    _ORIG_OP = tensor_quant.dynamic_block_quantize_op

    def op(inputs, block_size, amax, num_bits, exponent_bits, scale_num_bits, scale_exponent_bits):
        nvfp4 = (num_bits, exponent_bits, scale_num_bits, scale_exponent_bits) == (4, 2, 8, 4)
        if inputs.is_cuda or not nvfp4:
            return _ORIG_OP(inputs, block_size, amax, num_bits, exponent_bits, scale_num_bits, scale_exponent_bits)
        assert amax is not None, "NVFP4 fake quant before calibration"
        if amax.numel() != 1:
            amax = amax.amax()
        s2 = amax.float().reshape(()) / (E2M1_MAX * E4M3_MAX)
        x = inputs.float()
        q, s, s2 = NVFP4QTensor.quantize(x, block_size, weights_scaling_factor_2=s2)
        y = q.dequantize(torch.float32, scale=s, double_scale=s2, block_sizes={-1: block_size})
        return y.to(inputs.dtype)

    tensor_quant.dynamic_block_quantize_op = op


def forward_loop_of(batches):
    def loop(model):
        with torch.no_grad():
            for ids in batches:
                model(torch.tensor([ids], dtype=torch.long))
    return loop


def modelopt_quantize(model, form, calib):
    """A deep copy of `model` quantized by ModelOpt (form 'nvfp4' = NVFP4_DEFAULT_CFG, W4A4 with
    input scales; 'w4a16' = W4A16_NVFP4_CFG, weight only), calibrated on `calib` (lists of ids)."""
    import modelopt.torch.quantization as mtq

    install_cpu_fake_quant()
    cfg = {"nvfp4": mtq.NVFP4_DEFAULT_CFG, "w4a16": mtq.W4A16_NVFP4_CFG}[form]
    m = copy.deepcopy(model)
    mtq.quantize(m, cfg, forward_loop_of(calib))
    return m


def modelopt_export(qmodel, out_dir, tokenizer, dtype=None):
    from modelopt.torch.export import export_hf_checkpoint

    out_dir = pathlib.Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    export_hf_checkpoint(copy.deepcopy(qmodel), dtype=dtype, export_dir=str(out_dir))
    tokenizer.save_pretrained(str(out_dir), save_jinja_files=False)
    if not (out_dir / "generation_config.json").exists() and qmodel.generation_config is not None:
        qmodel.generation_config.save_pretrained(str(out_dir))


def load_float(float_dir, dtype=torch.float32):
    """The float model of float_dir: its causal LM, or the image-text-to-text model of a family
    transformers has only as a VLM (muse_glimmer)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES as causal
    kind = AutoModelForCausalLM if AutoConfig.from_pretrained(str(float_dir)).model_type in causal else AutoModelForImageTextToText
    return kind.from_pretrained(str(float_dir), dtype=dtype, attn_implementation="eager").eval()


def ct_quantize_save(float_dir, scheme, calib, out_dir, tokenizer, dtype=torch.float32, ignore=("lm_head",), pipeline=None, processor=None):
    """llm-compressor oneshot with QuantizationModifier(targets="Linear", scheme=scheme,
    ignore=ignore) on the model loaded from float_dir (oneshot reads the config on disk),
    saved with save_compressed=True. NVFP4 calibrates on `calib`; NVFP4A16 needs no data.
    pipeline: oneshot's calibration pipeline (None: its default, "sequential" for these).
    processor: passed to oneshot (a VLM's, whose AutoProcessor oneshot cannot build: its tokenizer)."""
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier

    out_dir = pathlib.Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    m = load_float(float_dir, dtype)
    recipe = QuantizationModifier(targets="Linear", scheme=scheme, ignore=list(ignore))
    kw = {}
    if scheme == "NVFP4":
        ds = Dataset.from_dict({"input_ids": [list(c) for c in calib], "attention_mask": [[1] * len(c) for c in calib]})
        kw = dict(dataset=ds, num_calibration_samples=len(calib), max_seq_length=max(len(c) for c in calib),
                  shuffle_calibration_samples=False)
    if pipeline:
        kw["pipeline"] = pipeline
    if processor is not None:
        kw["processor"] = processor
    oneshot(model=m, recipe=recipe, **kw)
    m.save_pretrained(str(out_dir), save_compressed=True)
    tokenizer.save_pretrained(str(out_dir), save_jinja_files=False)
    return m


def load_ct_decompressed(ct_dir):
    """A compressed-tensors checkpoint loaded back by transformers with compressed-tensors'
    decompression (dequantize=True) and cast to float32; its decompression unpacks in bfloat16
    (unpack_fp4_from_uint8's default dtype), which rounds the NVFP4 values, so every quantized
    weight is then replaced by compressed-tensors' own unpack + dequantize of the stored
    weight_packed / weight_scale / weight_global_scale with dtype float32 (exact). The forward is
    compressed-tensors' QDQ forward (W4A4: its activation fake quant with input_global_scale)."""
    from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
    from compressed_tensors.quantization.lifecycle.forward import dequantize
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, CompressedTensorsConfig
    m = AutoModelForCausalLM.from_pretrained(str(ct_dir), dtype=torch.float32, attn_implementation="eager",
                                             quantization_config=CompressedTensorsConfig(dequantize=True))
    m = m.eval().float()
    st = {}
    for f in sorted(pathlib.Path(ct_dir).glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            st.update({k: h.get_tensor(k) for k in h.keys()})
    n = 0
    for name, mod in m.named_modules():
        if name + ".weight_packed" not in st:
            continue
        packed = st[name + ".weight_packed"]
        rows, half = packed.shape
        codes = unpack_fp4_from_uint8(packed, rows, half * 2, dtype=torch.float32)
        w = dequantize(x_q=codes, scale=st[name + ".weight_scale"].to(torch.float32), args=mod.quantization_scheme.weights,
                       global_scale=st[name + ".weight_global_scale"].to(torch.float32), dtype=torch.float32)
        with torch.no_grad():
            mod.weight.data = w.reshape(mod.weight.shape).contiguous()
        n += 1
    assert n > 0, ct_dir
    return m


def modelopt_export_dequant_f32(export_dir, float_dir):
    """The float model of float_dir in float32 with every NVFP4 weight replaced by ModelOpt's own
    dequantization (NVFP4QTensor.dequantize with weight_scale and weight_scale_2) of what its export
    (export_dir) wrote: the exported checkpoint's weights exactly, run by transformers without
    activation quantization. (Where ModelOpt's fake-quantized model departs from its own export,
    as it does on Muse Glimmer, this is the export's reference.)"""
    from modelopt.torch.quantization.qtensor import NVFP4QTensor
    from safetensors import safe_open
    m = load_float(float_dir)
    sd = m.state_dict()
    n = 0
    for f in sorted(pathlib.Path(export_dir).glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            keys = set(h.keys())
            for k in keys:
                base = k[: -len(".weight")]
                if not k.endswith(".weight") or base + ".weight_scale_2" not in keys or k not in sd:
                    continue
                packed = h.get_tensor(k)
                shape = torch.Size([packed.shape[0], packed.shape[1] * 2])
                w = NVFP4QTensor(shape, torch.float32, packed).dequantize(
                    torch.float32, scale=h.get_tensor(base + ".weight_scale"), double_scale=h.get_tensor(base + ".weight_scale_2").float(),
                    block_sizes={-1: 16})
                with torch.no_grad():
                    sd[k].copy_(w.reshape(shape))
                n += 1
    assert n > 0, export_dir
    return m


def modelopt_fake_quant_f32(qmodel):
    """A float32 copy of a ModelOpt-quantized model that quantizes as its export does: ModelOpt's
    own requantize_resmooth_fused_llm_layers (the export's first step: one weight amax and one
    input amax shared by the linears that read the same input, q/k/v and gate/up) applied to it."""
    from modelopt.torch.export.unified_export_hf import requantize_resmooth_fused_llm_layers
    m = copy.deepcopy(qmodel).float()
    with torch.no_grad():
        requantize_resmooth_fused_llm_layers(m)
    return m


def as_f32(model):
    """The model (ModelOpt quantizers and their amax included) in float32: a copy unless it is."""
    return model if next(model.parameters()).dtype == torch.float32 else copy.deepcopy(model).float()


@torch.no_grad()
def logits_of(model, ids):
    return model(torch.tensor([ids], dtype=torch.long)).logits[0].float()


@torch.no_grad()
def greedy(model, ids, n=16):
    """n greedy tokens of `model` after `ids`, each from a full forward of the sequence so far."""
    seq = list(ids)
    for _ in range(n):
        seq.append(int(logits_of(model, seq)[-1].argmax()))
    return seq[len(ids):]


def save_bf16(model, tokenizer, out):
    """A float fixture as the tools write it: rounded to bfloat16, greedy generation config,
    save_pretrained with its tokenizer (no separate jinja file)."""
    model = model.to(torch.bfloat16)
    model.generation_config.do_sample = False
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out), save_jinja_files=False)


def top2_margin(lg):
    """The smallest gap between the top two logits over the positions of lg [n_pos][n_vocab]."""
    t = torch.topk(lg, 2, dim=-1).values
    return float((t[:, 0] - t[:, 1]).min())


def tensor_table(d):
    """name -> [dtype, shape] of every tensor a directory's safetensors hold."""
    from safetensors import safe_open
    out = {}
    for f in sorted(pathlib.Path(d).glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                sl = s.get_slice(k)
                out[k] = [sl.get_dtype(), list(sl.get_shape())]
    return out


def versions():
    import importlib.metadata as md
    out = {}
    for p in ["torch", "transformers", "tokenizers", "nvidia-modelopt", "llmcompressor", "compressed-tensors",
              "safetensors", "datasets", "accelerate", "gguf", "numpy"]:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def publish(src, dst):
    """Makes dst (under /work/shared-out) a symlink to src, replacing what was there."""
    dst = pathlib.Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_symlink() or dst.is_file():
        dst.unlink()
    elif dst.exists():
        shutil.rmtree(dst)
    os.symlink(os.path.abspath(src), dst)


def dump_json(obj, path):
    pathlib.Path(path).write_text(json.dumps(obj, separators=(",", ":")) + "\n")
