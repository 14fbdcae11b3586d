// The loader a family's file reads its tensors with (src/models/<family>.cpp): metadata under
// GGUF keys, every tensor checked for presence and shape, linear layers prepared for their
// kernels (NVFP4 as Linear, float as DenseLinear or PinnedDense), the shared pieces of loading a
// layer. Everything it reads is marked used: Model::load refuses a tensor nobody read.
#pragma once
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "nvfp4/arch.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/q8_0.h"
#include "nvfp4/quantize.h"
#include "ops/model_impl.h"

namespace nvfp4 {

struct Loader {
  const Checkpoint& ck;
  const LoadOptions& opt;
  const std::string& path;
  mutable std::set<std::string> used;  // every tensor the model reads: the rest is refused
  // The packed weight streams, on huge pages shared by the small layers (nvfp4/huge_pages.h).
  std::shared_ptr<HugeArena> arena = std::make_shared<HugeArena>();
  // Model::check: tensors checked (present, shaped, FP8 bytes finite) but not prepared; the
  // linear layers, dense matrices and heads come back empty (their names and sizes only).
  bool check_only = false;
  // The block of the model's layer 0 (an MTP module's layers follow the trunk's: blk.<n_layer>.. ).
  int64_t first_block = 0;
  // Experts go to an expert store (LoadOptions::experts_budget): their streams go to expert_arena,
  // one per layer, dropped when the store has written them (src/models/expert_plan.cpp), rather
  // than to the shared arena.
  bool experts_own = false;
  std::shared_ptr<HugeArena> expert_arena = std::make_shared<HugeArena>();
  // Packs the NVFP4 layers' tiles side by side (LoadOptions::threads > 1), else null.
  ThreadPool* pool = nullptr;

  // This loader reading with options `o` (kept alive by the caller): the same checkpoint, arenas
  // and settings, its own `used` (merge it back).
  Loader with_options(const LoadOptions& o) const {
    Loader r{ck, o, path, {}, arena};
    r.check_only = check_only;
    r.first_block = first_block;
    r.experts_own = experts_own;
    r.expert_arena = expert_arena;
    r.pool = pool;
    r.norm_offset = norm_offset;
    return r;
  }

  const gguf::Value& meta(const std::string& key) const {
    const gguf::Value* v = ck.meta(key);
    if (!v) throw Error(path, "", "missing metadata '" + key + "'", "present", "absent");
    return *v;
  }
  int64_t meta_int(const std::string& key) const {
    const int64_t v = meta(key).as_int(key);
    if (v <= 0 || v > (int64_t{1} << 31)) throw Error(path, "", "metadata '" + key + "'", "1 .. 2^31", std::to_string(v));
    return v;
  }
  double meta_float(const std::string& key, double def) const {
    const gguf::Value* v = ck.meta(key);
    if (!v) return def;
    const double d = v->as_float(key);
    if (!std::isfinite(d) || d <= 0) throw Error(path, "", "metadata '" + key + "'", "finite and > 0", std::to_string(d));
    return d;
  }

  // Whether an optional tensor (decided on layer 0, then required of every layer) is there;
  // a required one must be.
  bool wanted(const std::string& name, Need need) const {
    const bool present = ck.find(name) != nullptr;
    if (need == Need::required && !present) throw Error(path, name, "missing tensor", "present", "absent");
    if (need == Need::none && present)
      throw Error(path, name, "tensor the architecture does not use", "absent", "present");
    return present;
  }

  RopeConfig rope(const std::string& a, int64_t head_dim) const {
    RopeConfig r;
    r.theta = meta_float(a + "rope.freq_base", 10000.0);
    std::string type = "none";
    if (const gguf::Value* s = ck.meta(a + "rope.scaling.type")) type = s->as_string(a + "rope.scaling.type");
    if (type == "linear") {
      r.linear_factor = meta_float(a + "rope.scaling.factor", 1.0);
    } else if (type == "llama3") {  // from an HF config.json (GGUF files carry rope_freqs.weight)
      const auto need = [&](const std::string& k) {
        if (!ck.meta(a + k)) throw Error(path, "", "missing metadata '" + a + k + "' (llama3 rope scaling)", "present", "absent");
        return meta_float(a + k, 1.0);
      };
      r.freq_factors = rope_freq_factors_llama3(head_dim, r.theta, need("rope.scaling.factor"), need("rope.scaling.low_freq_factor"),
                                                need("rope.scaling.high_freq_factor"),
                                                need("rope.scaling.original_context_length"));
    } else if (type != "none") {
      throw Error(path, "", "RoPE scaling type (" + a + "rope.scaling.type)", "none, linear or llama3", type);
    }
    if (const TensorEntry* f = ck.find("rope_freqs.weight")) {
      if (!r.freq_factors.empty())
        throw Error(path, "rope_freqs.weight", "two rope scalings (metadata llama3 and a rope_freqs tensor)", "one", "both");
      r.freq_factors = vec("rope_freqs.weight", head_dim / 2);
      for (float v : r.freq_factors)
        if (!std::isfinite(v) || v <= 0) throw Error(path, f->name, "rope frequency factor", "finite and > 0", std::to_string(v));
    }
    return r;
  }

  const TensorEntry& shaped(const std::string& name, std::vector<int64_t> shape) const {
    const TensorEntry* e = ck.find(name);
    if (!e) throw Error(path, name, "missing tensor", "present", "absent");
    used.insert(name);
    if (e->shape != shape) {
      auto str = [](const std::vector<int64_t>& s) {
        std::string o = "[";
        for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
        return o + "]";
      };
      throw Error(path, name, "tensor shape", str(shape), str(e->shape));
    }
    return *e;
  }

  // Added to every RMSNorm weight read through norm(): 1 for a zero-centred family's HF file
  // ((1 + w), transformers' Qwen3_5RMSNorm), whose GGUF holds the weights with the 1 added.
  float norm_offset = 0.0f;
  std::vector<float> norm(const std::string& name, int64_t n) const {
    std::vector<float> v = vec(name, n);
    if (norm_offset != 0.0f)
      for (float& x : v) x += norm_offset;  // in float, as transformers' (1.0 + w.float())
    return v;
  }

  std::vector<float> vec(const std::string& name, int64_t n) const {
    shaped(name, {n});
    std::vector<float> v = ck.to_f32(name);
    ck.release(name);
    return v;
  }

  // expert: a routed expert's projection (experts_own).
  MatMul linear(const std::string& base, int64_t n_out, int64_t n_in, bool expert = false) const {
    MatMul m = linear_copy(base, n_out, n_in, expert);
    ck.release(base + ".weight");  // copied into the kernels' layout: the mapped bytes can go
    return m;
  }

  MatMul linear_copy(const std::string& base, int64_t n_out, int64_t n_in, bool expert = false) const {
    const std::string name = base + ".weight";
    const std::shared_ptr<HugeArena> where = expert && experts_own ? expert_arena : arena;
    const TensorEntry& e = shaped(name, {n_out, n_in});
    MatMul m;
    m.name = base;
    m.n_out = n_out;
    m.n_in = n_in;
    if (check_only && e.storage == Storage::nvfp4) {
      m.nvfp4 = true;
      return m;
    }
    if (e.storage == Storage::nvfp4) {
      m.pre_scale = ck.pre_quant_scale(name);  // NVFP4_AWQ (the reader checked its length)
      m.nvfp4 = true;
      m.bytes = static_cast<size_t>(n_out * n_in / 2 + n_out * (n_in / kGroup) + 4);
      uint32_t gtype = 0;
      const void* gdata = nullptr;
      if (ck.raw_ggml(name, gtype, gdata) && gtype == ggml::NVFP4) {  // GGUF: packed from its blocks
        m.lin = Linear::prepare(GgmlView{n_out, n_in, static_cast<const uint8_t*>(gdata), e.scale2}, e.input_scale, base,
                                where, pool);
      } else {  // the row layout: where the file maps it (safetensors), else a copy
        RowView v;
        std::vector<int64_t> rows;
        RowMatrix copy;
        if (!ck.nvfp4_view(name, v, rows)) {
          copy = ck.nvfp4(name);
          v = copy.view();
        }
        m.lin = Linear::prepare(v, e.input_scale, base, where, pool);
      }
      return m;
    }
    const bool integer = opt.mode == Mode::a16q8 || opt.mode == Mode::w4a4;
    // A GGUF Q8_0 layer (an FP8 layer `convert` wrote to GGUF, or llama.cpp's Q8_0) in the
    // integer-exact modes: its blocks as stored, the Q8_0 head's integer-exact kernel.
    uint32_t gtype = 0;
    const void* gdata = nullptr;
    if (!opt.quantize && !opt.pinned_float && integer && n_in % kQ8_0Block == 0 && ck.raw_ggml(name, gtype, gdata) &&
        gtype == ggml::Q8_0) {
      if (check_only) return m;
      m.q8 = Head::q8_0(static_cast<const uint8_t*>(gdata), n_out, n_in, true);
      m.use_q8 = true;
      m.bytes = m.q8.bytes();
      return m;
    }
    // An FP8 layer served as it is: its E4M3 bytes (a quarter of the widened F32), the scale on the
    // output. NaN bytes (0x7F, 0xFF) are refused: the kernels widen every other byte exactly.
    const uint8_t* codes = nullptr;
    std::vector<float> scale;
    if (e.storage == Storage::fp8 && !opt.quantize && !opt.pinned_float && ck.raw_fp8(name, codes, scale)) {
      for (int64_t k = 0; k < n_out * n_in; ++k)
        if ((codes[k] & 0x7F) == 0x7F)
          throw Error(path, name, "FP8 E4M3 weight: finite values", "no NaN byte (0x7F, 0xFF)",
                      "a NaN at row " + std::to_string(k / n_in) + ", column " + std::to_string(k % n_in));
      if (check_only) return m;
      // The integer-exact modes take the integer-exact form (the same bits on every ISA:
      // include/nvfp4/fp8_linear.h); a16 and the float references the float one.
      if (integer && Fp8Linear::fits(n_in))
        m.fp8 = Fp8Linear::prepare(codes, n_out, n_in);
      else
        m.dense = DenseLinear::prepare(DType::e4m3, codes, n_out, n_in);
      m.out_scale = std::move(scale);
      Checkpoint::StoredFp8 sf;
      m.fp8_input_scale = ck.stored_fp8(name, sf) && sf.input_scale.data != nullptr;
      m.bytes = static_cast<size_t>(n_out * n_in) + m.out_scale.size() * 4;
      return m;
    }
    // MXFP8 and FP8 with 128 x 128 block scales, the same way: E4M3 bytes and their scales as
    // stored, each weight widened exactly and scaled as the kernel reads it (kern::fp8s_at).
    DType sdt = DType::f32;
    const void* sscales = nullptr;
    if (e.storage == Storage::fp8 && !opt.quantize && !opt.pinned_float && ck.raw_fp8_scaled(name, sdt, codes, sscales)) {
      for (int64_t k = 0; k < n_out * n_in; ++k)
        if ((codes[k] & 0x7F) == 0x7F)
          throw Error(path, name, "FP8 E4M3 weight: finite values", "no NaN byte (0x7F, 0xFF)",
                      "a NaN at row " + std::to_string(k / n_in) + ", column " + std::to_string(k % n_in));
      if (check_only) return m;
      // MXFP8 and 128 x 128 blocks in the integer-exact modes: integer-exact too (each 32-block's
      // exact sum times a factor per row and 32-block: kernels/fp8_q8.h).
      if (integer && sdt == DType::mxfp8 && n_in % kMxBlock == 0)
        m.fp8 = Fp8Linear::prepare_mx(codes, static_cast<const uint8_t*>(sscales), n_out, n_in);
      else if (integer && sdt == DType::fp8_b128 && n_in % kMxBlock == 0)
        m.fp8 = Fp8Linear::prepare_b128(codes, static_cast<const float*>(sscales), n_out, n_in);
      else
        m.dense = DenseLinear::prepare_scaled(sdt, codes, sscales, n_out, n_in);
      m.bytes = static_cast<size_t>(n_out * n_in + scale_bytes(sdt, n_out, n_in));
      return m;
    }
    if (check_only) return m;
    // A float layer (F16, BF16 or F32 as stored) in the integer-exact modes: read as stored, in the
    // pinned order (the same bits on every ISA, as the head), not widened to F32.
    DType fdt = DType::f32;
    const void* fdata = nullptr;
    const bool pin = !opt.quantize && integer;
    if (pin && ck.raw_float(name, fdt, fdata)) {
      m.use_pinned = true;
      m.pinned = PinnedDense::prepare(fdt, fdata, n_out, n_in);
      m.bytes = m.pinned.bytes();
      return m;
    }
    std::vector<float> w = ck.to_f32(name);
    if (opt.quantize) {
      const RowMatrix q = quantize(w.data(), n_out, n_in, name);
      auto it = opt.input_scales.find(base);
      m.nvfp4 = true;
      m.lin = Linear::prepare(q.view(), it == opt.input_scales.end() ? 0.0f : it->second, base, where);
      m.bytes = q.codes.size() + q.scales.size() + 4;
      return m;
    }
    m.bytes = w.size() * 4;
    if (opt.pinned_float || pin) {  // (pin: rows the reader reorders, so not readable as stored)
      m.use_pinned = true;
      m.pinned = PinnedDense::from_f32(std::move(w), n_out, n_in);
      return m;
    }
    m.dense = DenseLinear::prepare(DType::f32, w.data(), n_out, n_in);
    return m;
  }

  // The embedding or the head: Q8_0 (convert --head q8) and NVFP4 (--head nvfp4) as stored when the
  // checkpoint is served as it is; otherwise the float path of dense().
  Head head_tensor(const std::string& name, int64_t n_out, int64_t n_in, bool forward, bool rows) const {
    const TensorEntry& e = shaped(name, {n_out, n_in});
    if (check_only) return Head();
    uint32_t type = 0;
    const void* data = nullptr;
    if (!opt.quantize && ck.raw_ggml(name, type, data) && type == ggml::Q8_0) {
      const bool integer = opt.mode == Mode::a16q8 || opt.mode == Mode::w4a4;
      Head h = Head::q8_0(static_cast<const uint8_t*>(data), n_out, n_in, integer);
      ck.release(name);
      return h;
    }
    if (e.storage == Storage::nvfp4) {
      Head h = Head::nvfp4(ck.nvfp4(name), e.input_scale, name.substr(0, name.size() - 7), forward, rows);
      ck.release(name);
      return h;
    }
    return Head::dense(dense(name, n_out, n_in));
  }

  PinnedDense dense(const std::string& name, int64_t n_out, int64_t n_in) const {
    PinnedDense d = dense_copy(name, n_out, n_in);
    ck.release(name);
    return d;
  }

  PinnedDense dense_copy(const std::string& name, int64_t n_out, int64_t n_in) const {
    shaped(name, {n_out, n_in});
    if (check_only) return PinnedDense();
    DType dt;
    const void* data = nullptr;
    if (ck.raw_float(name, dt, data)) return PinnedDense::prepare(dt, data, n_out, n_in);
    std::vector<float> w = ck.to_f32(name);
    if (opt.quantize) {  // as `nvfp4 convert` keeps ggml-quantized embeddings: F16
      std::vector<uint16_t> h(w.size());
      for (size_t i = 0; i < w.size(); ++i) h[i] = float_to_half(w[i]);
      return PinnedDense::prepare(DType::f16, h.data(), n_out, n_in);
    }
    return PinnedDense::from_f32(std::move(w), n_out, n_in);
  }
};

// Expert counts and sizes under llama.cpp's keys (hf_config.cpp writes the same for HF).
void load_moe_config(const Loader& L, const std::string& a, ModelConfig& c);
// Layer b's FFN ("blk.3."): the dense SwiGLU's gate/up/down, or the router, the experts and a
// shared expert with its gate.
void load_ffn(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);
// Layer b's attention: q (2 * q_dim rows with an output gate), k, v, o, their biases and q/k norms.
void load_attention(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);
// A layer of the Llama-like families (norms, experts or dense FFN, attention).
void load_default_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w);

// Each attention layer's FP8 KV cache scales into m.kv_scales (2 per layer: k, v) for layers
// [0, c.n_layer) of blocks first_block..: ModelOpt's blk.N.attn_k.k_scale / blk.N.attn_v.v_scale
// (HF self_attn.k_proj.k_scale / v_proj.v_scale) or compressed-tensors' self_attn.k_scale /
// v_scale, one float each, finite and > 0. Every layer with its own KV cache has both or none
// has any (else nvfp4::Error naming the missing tensor); none: 1.0 each.
void load_kv_scales(const Loader& L, const ModelConfig& c, int64_t first_block, Model::Impl& m);

struct Family;
// The trunk's MTP module (src/models/mtp_load.cpp) into `mtp`: from L.opt.mtp_source when set,
// else from L's checkpoint (whose tensors it marks used).
void load_mtp(const Loader& L, const Family& family, const Model::Impl& trunk, Model::Impl& mtp);

}  // namespace nvfp4
