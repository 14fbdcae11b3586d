// The converter. Each output tensor is a recipe (name, ggml shape, type, bytes, producer): the
// writer runs the producers one at a time while writing (peak memory: one tensor), and --verify
// runs them again and compares with what the re-read file holds, byte for byte.
#include "nvfp4/convert.h"

#include "convert/convert_modelopt.h"
#include "io/hf_names.h"
#include "io/hybrid_layout.h"
#include "io/gemma4_layout.h"
#include "io/muse_layout.h"
#include "io/nemotron_layout.h"
#include "convert/gguf_meta_from_checkpoint.h"
#include "convert/weight_quantizer.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "nvfp4/checkpoint.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"
#include "nvfp4/layout.h"
#include "nvfp4/q8_0.h"
#include "nvfp4/quantize.h"

namespace nvfp4 {

namespace {

constexpr uint32_t kFtypeNvfp4 = 39;  // LLAMA_FTYPE_MOSTLY_NVFP4

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

bool matches_any(const std::vector<std::string>& pats, const std::string& name) {
  for (const auto& p : pats) if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

std::string base_name(const std::string& name) {
  return ends_with(name, ".weight") ? name.substr(0, name.size() - 7) : name;
}

struct Recipe {
  std::string name;
  std::vector<int64_t> ne;  // ggml order
  uint32_t type;
  uint64_t nbytes;
  std::function<void(uint8_t*)> produce;
};

// Quantizes W (float32, [n_out][n_in]) by the chosen method (weight_quantizer.h) into ggml NVFP4
// blocks; returns the tensor scale.
float quantize_to_blocks(const std::vector<float>& w, int64_t n_out, int64_t n_in, const std::string& name,
                         const WeightQuantizer& wq, uint8_t* dst) {
  // NaN/Inf refused with the tensor's name and flat index before anything else.
  for (int64_t i = 0; i < n_out * n_in; ++i) {
    if (!std::isfinite(w[static_cast<size_t>(i)])) {
      throw Error("", name, "cannot quantize a tensor holding NaN or Inf", "finite values",
                  std::to_string(w[static_cast<size_t>(i)]) + " at flat index " + std::to_string(i));
    }
  }
  const RowMatrix m = wq.quantize(name, w, n_out, n_in);
  const int64_t row_bytes = n_in / kGgmlBlock * kGgmlBlockBytes;
  for (int64_t r = 0; r < n_out; ++r) {
    row_to_ggml_row(m.codes.data() + r * (n_in / 2), m.scales.data() + r * (n_in / kGroup), n_in, dst + r * row_bytes);
  }
  return m.scale2;
}

bool is_head(const std::string& name) { return name == "output.weight" || name == "token_embd.weight"; }

// The relative RMS error Q8_0 adds to w ([n_out][n_in], n_in % 32 == 0): sqrt(sum (q - w)^2 / sum w^2).
std::string q8_0_error_text(const std::vector<float>& w, int64_t n_out, int64_t n_in) {
  std::vector<uint8_t> b(static_cast<size_t>(n_in / kQ8_0Block) * sizeof(BlockQ8_0));
  double err = 0, ref = 0;
  for (int64_t r = 0; r < n_out; ++r) {
    const float* x = w.data() + r * n_in;
    quantize_row_q8_0(x, n_in, b.data());
    for (int64_t j = 0; j < n_in / kQ8_0Block; ++j) {
      BlockQ8_0 q;
      std::memcpy(&q, b.data() + j * sizeof(BlockQ8_0), sizeof q);
      const float d = half_to_float(q.d);
      for (int i = 0; i < kQ8_0Block; ++i) {
        const double v = x[j * kQ8_0Block + i], e = static_cast<double>(q.qs[i]) * d - v;
        err += e * e;
        ref += v * v;
      }
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", ref > 0 ? std::sqrt(err / ref) : 0.0);
  return buf;
}

// --head q8: Q8_0 blocks, copied when the input already holds Q8_0, else quantized from float32.
Recipe q8_0_recipe(const Checkpoint& ck, const TensorEntry& e, const std::string& name, const std::vector<int64_t>& ne,
                   int64_t n_out, int64_t n_in) {
  if (n_in % kQ8_0Block != 0) {
    throw Error(ck.info().path, name, "--head q8 stores Q8_0 blocks of 32", "n_in % 32 == 0", "n_in = " + std::to_string(n_in));
  }
  const uint64_t nb = static_cast<uint64_t>(n_out * (n_in / kQ8_0Block)) * sizeof(BlockQ8_0);
  uint32_t type = 0;
  const void* raw = nullptr;
  if (e.storage == Storage::ggml_quant && ck.raw_ggml(name, type, raw) && type == ggml::Q8_0) {
    return {name, ne, ggml::Q8_0, nb, [raw, nb](uint8_t* dst) { std::memcpy(dst, raw, nb); }};
  }
  const Checkpoint* c = &ck;
  return {name, ne, ggml::Q8_0, nb, [c, name, n_out, n_in](uint8_t* dst) {
            const std::vector<float> w = c->to_f32(name);
            for (size_t i = 0; i < w.size(); ++i) {
              if (!std::isfinite(w[i])) {
                throw Error("", name, "cannot quantize a tensor holding NaN or Inf", "finite values",
                            std::to_string(w[i]) + " at flat index " + std::to_string(i));
              }
            }
            const int64_t row_bytes = n_in / kQ8_0Block * static_cast<int64_t>(sizeof(BlockQ8_0));
            for (int64_t r = 0; r < n_out; ++r) quantize_row_q8_0(w.data() + r * n_in, n_in, dst + r * row_bytes);
          }};
}

uint32_t keep_ggml_type(const std::string& t) {
  if (t == "f16") return ggml::F16;
  if (t == "f32") return ggml::F32;
  if (t == "bf16") return ggml::BF16;
  throw Error("", "--keep-type", "unknown --keep-type", "f16, f32 or bf16", t);
}

void from_f32(const std::vector<float>& v, uint32_t type, uint8_t* dst) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == ggml::F32) {
      std::memcpy(dst + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = type == ggml::F16 ? float_to_half(v[i]) : float_to_bf16(v[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
  }
}

std::vector<int64_t> ggml_ne(const std::vector<int64_t>& shape) { return {shape.rbegin(), shape.rend()}; }

// llama.cpp's MoE layout: the per-expert tensors of the checkpoint (blk.N.ffn_*_exps.E.weight and
// their .E.scale / .E.input_scale) written as one stacked tensor each, ne = [.., n_expert]
// (companions: [n_expert]), at the place of expert 0's. Every expert 0..E-1 must be there with
// one shape and type.
std::vector<Recipe> stack_experts(std::vector<Recipe> in, const std::string& file) {
  struct Group {
    std::string name;
    std::vector<const Recipe*> experts;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> by_name;
  std::vector<std::pair<int64_t, const Recipe*>> order;  // (group index or -1, recipe)
  for (const Recipe& r : in) {
    std::string stacked;
    int64_t e = 0;
    if (!hf::split_expert_name(r.name, stacked, e)) {
      order.emplace_back(-1, &r);
      continue;
    }
    auto it = by_name.find(stacked);
    if (it == by_name.end()) {
      it = by_name.emplace(stacked, groups.size()).first;
      groups.push_back({stacked, {}});
      order.emplace_back(static_cast<int64_t>(it->second), nullptr);
    }
    auto& ex = groups[it->second].experts;
    if (static_cast<size_t>(e) >= ex.size()) ex.resize(static_cast<size_t>(e) + 1, nullptr);
    if (ex[static_cast<size_t>(e)]) throw Error(file, r.name, "expert given twice", "once", "twice");
    ex[static_cast<size_t>(e)] = &r;
  }
  std::vector<Recipe> out;
  for (const auto& [g, r] : order) {
    if (g < 0) {
      out.push_back(*r);
      continue;
    }
    const Group& grp = groups[static_cast<size_t>(g)];
    const Recipe* first = grp.experts[0];
    for (size_t e = 0; e < grp.experts.size(); ++e) {
      const Recipe* x = grp.experts[e];
      if (!x) throw Error(file, hf::expert_name(grp.name, static_cast<int64_t>(e)), "missing expert (llama.cpp stacks every expert of a layer)", "present", "absent");
      if (!first) first = x;
      if (x->type != first->type || x->ne != first->ne)
        throw Error(file, x->name, "experts of one stacked tensor differ in type or shape",
                    ggml_type_name(first->type), ggml_type_name(x->type));
    }
    Recipe st;
    st.name = grp.name;
    st.ne = first->ne == std::vector<int64_t>{1} ? std::vector<int64_t>{} : first->ne;
    st.ne.push_back(static_cast<int64_t>(grp.experts.size()));
    st.type = first->type;
    st.nbytes = first->nbytes * grp.experts.size();
    std::vector<std::function<void(uint8_t*)>> parts;
    for (const Recipe* x : grp.experts) parts.push_back(x->produce);
    const uint64_t each = first->nbytes;
    st.produce = [parts, each](uint8_t* dst) {
      for (size_t e = 0; e < parts.size(); ++e) parts[e](dst + e * each);
    };
    out.push_back(std::move(st));
  }
  return out;
}

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

std::vector<Recipe> plan(const Checkpoint& ck, const ConvertOptions& opt, std::shared_ptr<const WeightQuantizer> wq,
                         ConvertReport& rep) {
  const uint32_t keep_type = keep_ggml_type(opt.keep_type);
  const std::string& file = ck.info().path;
  std::vector<Recipe> out;
  const Checkpoint* c = &ck;
  const bool hf_input = ck.info().container != "gguf";
  int64_t kv_scales = 0;  // FP8 KV cache scales left out (see below)
  for (const TensorEntry& e : ck.tensors()) {
    const std::string name = e.name;
    // An FP8 KV cache's k/v scales (ModelOpt k_proj.k_scale, compressed-tensors self_attn.k_scale):
    // GGUF has no place for them (llama.cpp has no FP8 cache and refuses tensors it does not know).
    if (name.size() > 8 && (name.ends_with(".k_scale") || name.ends_with(".v_scale")) && elements_of(e.shape) == 1) {
      ++kv_scales;
      continue;
    }
    const auto ne = ggml_ne(e.shape);
    const int64_t n_in = e.shape.empty() ? 1 : e.shape.back();
    int64_t elements = 1;
    for (int64_t d : e.shape) elements *= d;
    const int64_t n_out = n_in ? elements / n_in : 0;
    if (e.storage == Storage::nvfp4) {
      if (!ck.pre_quant_scale(name).empty()) {  // an NVFP4_AWQ layer whose scale is not folded into a norm
        throw Error(file, name, "GGUF has no place for NVFP4_AWQ's pre_quant_scale (it is not folded into a norm in this checkpoint)",
                    "a layer without pre_quant_scale", "a pre_quant_scale");
      }
      if (n_in % kGgmlBlock != 0) {
        throw Error(file, name, "NVFP4 row does not fit ggml's 64-value blocks", "n_in % 64 == 0", "n_in = " + std::to_string(n_in));
      }
      if (matches_any(opt.keep, name)) rep.notes.push_back(name + ": already NVFP4, repacked (--keep does not dequantize)");
      out.push_back({name, ne, ggml::NVFP4, static_cast<uint64_t>(n_out * (n_in / kGgmlBlock) * kGgmlBlockBytes),
                     [c, name](uint8_t* dst) {
                       RowMatrix m = c->nvfp4(name);
                       GgmlMatrix g = row_to_ggml(m.view(), name);
                       std::memcpy(dst, g.blocks.data(), g.blocks.size());
                     }});
      const float s2 = e.scale2, is = e.input_scale;
      out.push_back({base_name(name) + ".scale", {1}, ggml::F32, 4, [s2](uint8_t* dst) { std::memcpy(dst, &s2, 4); }});
      if (is > 0) out.push_back({base_name(name) + ".input_scale", {1}, ggml::F32, 4, [is](uint8_t* dst) { std::memcpy(dst, &is, 4); }});
      ++rep.repacked;
      continue;
    }
    // An FP8 layer (E4M3, any scale form) to GGUF: Q8_0 (GGUF has no FP8 type; llama.cpp reads
    // Q8_0, and we run it integer-exact), the error it adds in the log; --quantize names it to make
    // it NVFP4 instead, --keep to keep it float.
    if (e.storage == Storage::fp8 && e.shape.size() == 2 && n_in % kQ8_0Block == 0 && !matches_any(opt.quantize, name) &&
        !matches_any(opt.keep, name)) {
      rep.notes.push_back(name + ": FP8 -> Q8_0 (GGUF has no FP8 type), relative RMS error " +
                          q8_0_error_text(ck.to_f32(name), n_out, n_in));
      out.push_back(q8_0_recipe(ck, e, name, ne, n_out, n_in));
      ++rep.fp8_to_q8;
      continue;
    }
    const bool head = is_head(name) && e.shape.size() == 2;
    const bool auto_q8 = opt.head == "auto" && n_in % kQ8_0Block == 0 && !matches_any(opt.keep, name);
    if (head && (opt.head == "q8" || auto_q8)) {
      out.push_back(q8_0_recipe(ck, e, name, ne, n_out, n_in));
      rep.notes.push_back(name + ": Q8_0 (--head " + opt.head + std::string(e.storage_name == "Q8_0" ? ", copied" : ", quantized") + ")");
      ++rep.kept;
      continue;
    }
    bool q = default_quantizes(name, e.shape.size()) || (head && opt.head == "nvfp4");
    if (matches_any(opt.quantize, name)) {
      if (e.shape.size() != 2) throw Error(file, name, "--quantize names a tensor that is not a matrix", "2 dimensions", std::to_string(e.shape.size()));
      q = true;
    }
    if (matches_any(opt.keep, name)) q = false;
    if (q && n_in % kGgmlBlock != 0) {
      if (matches_any(opt.quantize, name)) {
        throw Error(file, name, "cannot store this tensor as ggml NVFP4 blocks", "n_in % 64 == 0", "n_in = " + std::to_string(n_in));
      }
      rep.notes.push_back(name + ": kept, n_in = " + std::to_string(n_in) + " is not a multiple of 64");
      q = false;
    }
    if (q) {
      const uint64_t nb = static_cast<uint64_t>(n_out * (n_in / kGgmlBlock) * kGgmlBlockBytes);
      auto s2 = std::make_shared<float>(0.0f);
      out.push_back({name, ne, ggml::NVFP4, nb, [c, name, n_out, n_in, wq, s2](uint8_t* dst) {
                       const std::vector<float> w = c->to_f32(name);
                       *s2 = quantize_to_blocks(w, n_out, n_in, name, *wq, dst);
                     }});
      // The tensor scale is known once the weight has been produced (written just before).
      out.push_back({base_name(name) + ".scale", {1}, ggml::F32, 4, [s2](uint8_t* dst) { std::memcpy(dst, s2.get(), 4); }});
      ++rep.quantized;
      continue;
    }
    if (wq->folds(name)) {  // awq: the norm weight times its group's 1 / s, F32
      out.push_back({name, ne, ggml::F32, static_cast<uint64_t>(elements) * 4,
                     [c, name, wq](uint8_t* dst) { from_f32(wq->fold_norm(name, c->to_f32(name)), ggml::F32, dst); }});
      ++rep.kept;
      continue;
    }
    DType dt;
    const void* raw = nullptr;
    // HF input: 1-D tensors (norms, biases) and MoE routers (ffn_gate_inp, ffn_gate_inp_shexp) as
    // F32, as llama.cpp's converter writes them (its CPU kernels do not multiply by F16/BF16
    // vectors, and its router softmax reads F32 logits).
    const bool router = name.find("ffn_gate_inp") != std::string::npos;
    if ((hf_input || router) && (e.shape.size() <= 1 || router) && ck.raw_float(name, dt, raw) && dt != DType::f32) {
      out.push_back({name, ne, ggml::F32, static_cast<uint64_t>(elements) * 4,
                     [c, name](uint8_t* dst) { from_f32(c->to_f32(name), ggml::F32, dst); }});
      ++rep.kept;  // widened exactly
      continue;
    }
    if (ck.raw_float(name, dt, raw)) {
      const uint32_t type = dt == DType::f32 ? ggml::F32 : dt == DType::f16 ? ggml::F16 : ggml::BF16;
      const uint64_t nb = static_cast<uint64_t>(elements) * (type == ggml::F32 ? 4 : 2);
      out.push_back({name, ne, type, nb, [raw, nb](uint8_t* dst) { std::memcpy(dst, raw, nb); }});
      ++rep.kept;
      continue;
    }
    // Float rows reordered on the way (HF q/k, llama.cpp's permutation): their own type, exactly.
    if (e.storage == Storage::f32 || e.storage == Storage::f16 || e.storage == Storage::bf16) {
      const uint32_t type = e.storage == Storage::f32 ? ggml::F32 : e.storage == Storage::f16 ? ggml::F16 : ggml::BF16;
      out.push_back({name, ne, type, static_cast<uint64_t>(elements) * (type == ggml::F32 ? 4 : 2),
                     [c, name, type](uint8_t* dst) { from_f32(c->to_f32(name), type, dst); }});
      ++rep.kept;
      continue;
    }
    // Kept but stored in another form (ggml blocks, FP8): 1-D to F32, matrices to keep_type.
    const uint32_t type = e.shape.size() >= 2 ? keep_type : ggml::F32;
    const uint64_t nb = static_cast<uint64_t>(elements) * (type == ggml::F32 ? 4 : 2);
    out.push_back({name, ne, type, nb, [c, name, type](uint8_t* dst) { from_f32(c->to_f32(name), type, dst); }});
    ++rep.retyped;
  }
  if (kv_scales > 0)
    rep.notes.push_back(std::to_string(kv_scales) + " FP8 KV cache scales (k_scale / v_scale) not written: GGUF has no place for them "
                        "(llama.cpp has no FP8 cache); `--kv fp8` on the GGUF stores at scale 1.0");
  return out;
}

void verify_output(const std::string& out, const std::vector<Recipe>& recipes) {
  Checkpoint::open(out);  // every loading rule again
  const auto f = gguf::File::open(out);
  if (f.tensors().size() != recipes.size()) {
    throw Error(out, "", "verify: tensor count differs", std::to_string(recipes.size()), std::to_string(f.tensors().size()));
  }
  std::vector<uint8_t> buf;
  for (const Recipe& r : recipes) {
    const gguf::TensorInfo& t = f.tensor(r.name);
    if (t.type != r.type || t.ne != r.ne || static_cast<uint64_t>(t.nbytes) != r.nbytes) {
      throw Error(out, r.name, "verify: type or shape differs", ggml_type_name(r.type), ggml_type_name(t.type));
    }
    buf.assign(r.nbytes, 0);
    r.produce(buf.data());
    if (r.nbytes && std::memcmp(buf.data(), t.data, r.nbytes) != 0) {
      size_t i = 0;
      while (buf[i] == t.data[i]) ++i;
      throw Error(out, r.name, "verify: bytes differ", "byte " + std::to_string(i) + " = " + std::to_string(buf[i]),
                  std::to_string(t.data[i]));
    }
  }
}

// Generated tensors (llama.cpp's rope_freqs.weight, Muse Glimmer's q/k norms) first, as llama.cpp's
// converter writes them.
void add_generated(std::vector<std::pair<std::string, std::vector<float>>> tensors, std::vector<Recipe>& recipes, ConvertReport& rep) {
  std::vector<Recipe> gen;
  for (auto& [name, v] : tensors) {
    auto data = std::make_shared<std::vector<float>>(std::move(v));
    gen.push_back({name, {static_cast<int64_t>(data->size())}, ggml::F32, data->size() * 4,
                   [data](uint8_t* dst) { std::memcpy(dst, data->data(), data->size() * 4); }});
    ++rep.kept;
  }
  recipes.insert(recipes.begin(), gen.begin(), gen.end());
}

// Gemma 4 in llama.cpp's gemma4 layout (null for another family): its float experts' gate and up
// stacked, as llama.cpp's converter writes them, unless they are NVFP4 (as given, or quantized by
// these options), which llama.cpp reads only apart.
std::unique_ptr<Checkpoint> gemma4_llamacpp_view(const Checkpoint& ck, const ConvertOptions& opt) {
  for (const TensorEntry& e : ck.tensors())
    if (e.storage == Storage::nvfp4 && e.name.find("ffn_gate_exps.") != std::string::npos) return gemma4_to_llamacpp(ck, false);
  std::unique_ptr<Checkpoint> v = gemma4_to_llamacpp(ck, true);
  if (!v) return v;
  for (const TensorEntry& e : v->tensors()) {
    if (e.name.find("ffn_gate_up_exps.") == std::string::npos) continue;
    const bool quantized = (default_quantizes(e.name, 2) || matches_any(opt.quantize, e.name)) && !matches_any(opt.keep, e.name) &&
                           e.shape.size() == 2 && e.shape.back() % kGgmlBlock == 0;
    if (quantized) return gemma4_to_llamacpp(ck, false);
  }
  return v;
}

}  // namespace

bool default_quantizes(const std::string& name, size_t n_dims) {
  if (n_dims != 2 || !ends_with(name, ".weight")) return false;
  if (name.rfind("token_embd", 0) == 0 || name == "output.weight") return false;
  if (name.find("norm") != std::string::npos) return false;
  if (name.find("ffn_gate_inp") != std::string::npos) return false;  // MoE router
  // Gated DeltaNet's b and a projections (a few rows each, kept float by ModelOpt and
  // llm-compressor, as the routers) and its conv weights.
  for (const char* keep : {"ssm_alpha", "ssm_beta", "ssm_ba", "ssm_conv1d"})
    if (name.find(keep) != std::string::npos) return false;
  return true;
}

ConvertReport convert(const std::string& in, const std::string& out, const ConvertOptions& opt) {
  if (ends_with(out, ".safetensors")) {
    throw Error(out, "", "unsupported output container", "a .gguf file or a directory (ModelOpt layout with config.json)", out);
  }
  ConvertReport rep;
  const auto ck = Checkpoint::open(in);  // validated in full before anything is written
  if (opt.head != "auto" && opt.head != "f16" && opt.head != "q8" && opt.head != "nvfp4")
    throw Error("", "--head", "unknown --head", "auto, f16, q8 or nvfp4", opt.head);
  if (!ends_with(out, ".gguf") && opt.head != "f16" && opt.head != "auto") {
    throw Error(out, "", "--head q8 / nvfp4 needs a GGUF output", "OUT ending in .gguf", "a directory (ModelOpt layout)");
  }
  if (!ends_with(out, ".gguf")) {
    const gguf::Value* a = ck->meta("general.architecture");
    if (ck->info().container == "gguf" && a && a->type == gguf::ValueType::string && is_hybrid_gguf_arch(a->s))
      throw Error(in, "general.architecture",
                  "a Gated DeltaNet hybrid's GGUF written as an HF directory: its norms hold the 1 of (1 + w) that HF's "
                  "zero-centred weights leave out (not converted back)",
                  "an HF directory as input, or a .gguf output", a->s);
    return convert_to_modelopt_dir(*ck, out, opt);
  }
  // The Gated DeltaNet hybrids in llama.cpp's layout (names, value-head order, -exp(A_log), norms
  // with their 1): io/hybrid_layout.h. Everything below reads `src`.
  // Nemotron-H in llama.cpp's layout (nemotron_h / nemotron_h_moe: io/nemotron_layout.h).
  // Gemma 4 in llama.cpp's gemma4 layout (io/gemma4_layout.h), with its rope_freqs.weight.
  std::unique_ptr<Checkpoint> llamacpp = hybrid_to_llamacpp(*ck);
  const bool nemotron = !llamacpp && (llamacpp = nemotron_to_llamacpp(*ck)) != nullptr;
  const bool gemma4 = !llamacpp && (llamacpp = gemma4_llamacpp_view(*ck, opt)) != nullptr;
  // Muse Glimmer in llama.cpp's muse-glimmer layout (io/muse_layout.h), with its q/k norms.
  const bool muse = !llamacpp && (llamacpp = muse_to_llamacpp(*ck)) != nullptr;
  const bool keys_from_view = nemotron || gemma4 || muse;
  const Checkpoint& src = llamacpp ? *llamacpp : *ck;
  // Tensors the layout implies that the checkpoint does not hold.
  std::vector<std::pair<std::string, std::vector<float>>> generated;
  if (gemma4) generated.emplace_back("rope_freqs.weight", gemma4_rope_freqs(*ck));
  if (muse)
    for (auto& t : muse_qk_norms(*ck)) generated.push_back(std::move(t));

  // The tensors plan() quantizes from float (awq's groups must all be among them).
  const auto eligible = [&src, &opt](const std::string& name) {
    const TensorEntry* e = src.find(name);
    if (!e || e->storage == Storage::nvfp4 || e->shape.size() != 2) return false;
    const bool head = is_head(name) && opt.head == "nvfp4";
    const bool q = (default_quantizes(name, 2) || head || matches_any(opt.quantize, name)) && !matches_any(opt.keep, name);
    return q && e->shape.back() % kGgmlBlock == 0;
  };
  const auto wq = std::make_shared<const WeightQuantizer>(src, opt, false, eligible);
  for (const auto& n : wq->notes()) rep.notes.push_back(n);
  std::vector<Recipe> recipes = stack_experts(plan(src, opt, wq, rep), src.info().path);
  // A release's set-aside parts have no form in this GGUF writer (llama.cpp's nextn blocks are
  // not written): said, not dropped silently. A directory output keeps them.
  for (const std::string& line : ck->info().set_aside) rep.notes.push_back("left out of the GGUF: " + line + " (a directory output keeps them)");
  // Gemma 4: float down experts quantized here would need the router's per-expert scale (then in
  // blk.N.ffn_down_exps.scale) folded into their tensor scale, which is only done for NVFP4 input.
  if (gemma4)
    for (const Recipe& r : recipes)
      if (r.type == ggml::NVFP4 && r.name.find("ffn_down_exps.") != std::string::npos && src.find(base_name(r.name) + ".scale"))
        throw Error(in, r.name,
                    "GGUF output in llama.cpp's gemma4 layout: blk.N.ffn_down_exps.scale holds the router's per-expert scale for float "
                    "down experts, the name NVFP4 experts' tensor scales take (folded only for experts NVFP4 in the input)",
                    "float down experts (--keep 'blk.*.ffn_down_exps.*'), or NVFP4 ones in the input", "quantized here");

  gguf::Writer w;
  if (ck->info().container == "gguf") {
    const auto file = gguf::File::open(in);
    const gguf::Value* fa = file.find("general.architecture");
    const std::string file_arch = fa && fa->type == gguf::ValueType::string ? fa->s : "";
    // Nemotron-H, Gemma 4 and Muse Glimmer: the model's keys are the layout's (the file may be in
    // our earlier layout, or name another arch); the rest (tokenizer, general.*) as the file has them.
    for (const auto& [k, v] : file.metadata())
      if (!keys_from_view || (k != "general.architecture" && k.rfind(file_arch + ".", 0) != 0)) w.set(k, v);
    if (llamacpp)  // the keys the layout adds (rope.dimension_sections, the exact A_log, ...)
      for (const std::string& k : llamacpp->meta_keys())
        if (!w.find(k)) w.set(k, *llamacpp->meta(k));
    add_generated(std::move(generated), recipes, rep);
  } else {
    GgufFromHf extra = gguf_meta_from_checkpoint(src, w, opt.tokenizer);
    for (auto& n : extra.notes) rep.notes.push_back(std::move(n));
    for (auto& t : generated) extra.f32_tensors.push_back(std::move(t));
    add_generated(std::move(extra.f32_tensors), recipes, rep);
  }
  if (rep.quantized + rep.repacked > 0) {
    w.set_u32("general.file_type", kFtypeNvfp4);
    if (!w.find("general.quantization_version")) w.set_u32("general.quantization_version", 2);
  }
  ConvertProgress prog;
  prog.total = recipes.size();
  for (const Recipe& r : recipes) prog.bytes_total += r.nbytes;
  for (const Recipe& r : recipes) {
    w.add_tensor(r.name, r.ne, r.type, r.nbytes, [&, r](uint8_t* dst) {
      prog.name = r.name;
      if (opt.progress) opt.progress(prog);
      r.produce(dst);
      ++prog.index;
      prog.bytes += r.nbytes;
    });
  }
  if (opt.progress) {
    w.progress = [&](size_t done, size_t total) {
      if (done == total) {
        prog.name.clear();
        opt.progress(prog);
      }
    };
  }
  // --verify checks the temporary file before it is renamed: a file that fails is never OUT.
  w.write(out, [&](const std::string& tmp) {
    if (opt.verify) verify_output(tmp, recipes);
  });
  rep.verified = opt.verify;
  return rep;
}

}  // namespace nvfp4
