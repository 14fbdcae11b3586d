#include "io/checkpoint_gguf.h"
#include "io/finite_check.h"

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "io/hf_names.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/layout.h"
#include "nvfp4/quantize.h"
#include "nvfp4/validate.h"

namespace nvfp4 {

namespace {

constexpr int64_t kFtypeNvfp4 = 39;  // LLAMA_FTYPE_MOSTLY_NVFP4

// "blk.0.attn_q.weight" -> "blk.0.attn_q"; names without ".weight" stay as they are.
std::string base_name(const std::string& name) {
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

class GgufCheckpoint final : public Checkpoint {
 public:
  explicit GgufCheckpoint(const std::string& path) : file_(gguf::File::open(path)) {
    info_.path = path;
    info_.container = "gguf";
    info_.producer = "llama.cpp";
    validate_and_index();
    check_values();
    check_declared_sizes();
  }

  const CheckpointInfo& info() const override { return info_; }
  const gguf::Value* meta(const std::string& key) const override { return file_.find(key); }
  void forget_meta(const std::string& key) override { file_.erase(key); }
  std::vector<std::string> meta_keys() const override {
    std::vector<std::string> k;
    for (const auto& kv : file_.metadata()) k.push_back(kv.first);
    return k;
  }
  const std::vector<TensorEntry>& tensors() const override { return entries_; }

  RowMatrix nvfp4(const std::string& name) const override {
    const TensorEntry& e = tensor(name);
    if (e.storage != Storage::nvfp4) {
      throw Error(info_.path, name, "tensor is not NVFP4", "NVFP4", e.storage_name);
    }
    const gguf::TensorInfo& t = *infos_.at(name);
    GgmlView g{t.rows(), t.ne[0], t.data, e.scale2};
    return ggml_to_row(g, name);
  }

  std::vector<float> to_f32(const std::string& name) const override {
    const TensorEntry& e = tensor(name);
    const gguf::TensorInfo& t = *infos_.at(name);
    std::vector<float> out(static_cast<size_t>(t.elements()));
    if (e.storage == Storage::nvfp4) {
      RowMatrix m = nvfp4(name);
      dequantize(m.view(), out.data());
      return out;
    }
    const int64_t rb = ggml_row_bytes(t.type, t.ne[0]);
    try {
      for (int64_t r = 0; r < t.rows(); ++r) ggml_dequantize_row(t.type, t.data + r * rb, out.data() + r * t.ne[0], t.ne[0]);
    } catch (const Error& err) {
      throw Error(info_.path, name, err.rule(), err.expected(), err.found());
    }
    return out;
  }

  bool raw_float(const std::string& name, DType& dtype, const void*& data) const override {
    const gguf::TensorInfo& t = *infos_.at(tensor(name).name);
    switch (t.type) {
      case ggml::F32: dtype = DType::f32; break;
      case ggml::F16: dtype = DType::f16; break;
      case ggml::BF16: dtype = DType::bf16; break;
      default: return false;
    }
    data = t.data;
    return true;
  }

  bool raw_ggml(const std::string& name, uint32_t& type, const void*& data) const override {
    const gguf::TensorInfo& t = *infos_.at(tensor(name).name);
    type = t.type;
    data = t.data;
    return true;
  }

  // Every float value and block scale finite (io/finite_check.h).
  void check_values() const {
    for (const TensorEntry& e : entries_) {  // the file's order: the first damaged tensor is named
      const std::string& name = e.name;
      const gguf::TensorInfo& t = *infos_.at(name);
      if (t.type == ggml::F32 || t.type == ggml::F16 || t.type == ggml::BF16) {
        const DType dt = t.type == ggml::F32 ? DType::f32 : t.type == ggml::F16 ? DType::f16 : DType::bf16;
        check_finite_floats(dt, t.data, t.elements(), t.ne[0], info_.path, name);
      } else {
        check_finite_ggml_scales(t.type, t.data, t.elements(), t.ne[0], info_.path, name);
      }
    }
  }

  // A size the metadata declares agrees with the tensors: <arch>.vocab_size with the embedding's
  // rows. (The tokenizer against the embedding is checked where a model meets its tokenizer.)
  void check_declared_sizes() const {
    const TensorEntry* emb = find("token_embd.weight");
    if (!emb || emb->shape.size() != 2) return;  // the model load refuses a missing one
    const int64_t rows = emb->shape[0];
    const gguf::Value* arch = file_.find("general.architecture");
    if (arch && arch->type == gguf::ValueType::string) {
      const std::string key = arch->s + ".vocab_size";
      if (const gguf::Value* v = file_.find(key)) {
        if (!v->is_integer())
          throw Error(info_.path, key, "metadata of the wrong type", "an integer (the vocabulary size)",
                      "a value of GGUF type " + std::to_string(static_cast<int>(v->type)));
        if (v->as_int(key) != rows)
          throw Error(info_.path, key, "the declared vocabulary size contradicts the embedding token_embd.weight",
                      std::to_string(rows) + " (the rows of token_embd.weight)", std::to_string(v->as_int(key)));
      }
    }
  }

  void release(const std::string& name) const override {
    auto it = infos_.find(name);
    if (it != infos_.end()) file_.drop(it->second->data, static_cast<size_t>(it->second->nbytes));
  }
  void release_all() const override { file_.drop_all(); }
  std::shared_ptr<const void> mapping(const std::string&) const override { return file_.map(); }

 private:
  // A weight's companion scale: one F32 value, or (stacked experts) one per expert.
  std::vector<float> companion_scales(const std::string& weight, const std::string& suffix, int64_t n_expert) const {
    const std::string cname = base_name(weight) + suffix;
    const gguf::TensorInfo* s = file_.find_tensor(cname);
    if (!s) return {};
    if (s->type != ggml::F32 || (s->elements() != 1 && s->elements() != n_expert)) {
      const std::string want = n_expert > 1 ? "F32 [1] or [" + std::to_string(n_expert) + "] (one per expert)" : "F32 [1]";
      throw Error(info_.path, cname,
                  n_expert > 1 ? "NVFP4 companion scale of stacked experts must be one F32 value or one per expert"
                               : "NVFP4 companion scale must be one F32 value",
                  want,
                  ggml_type_name(s->type) + " with " + std::to_string(s->elements()) + " values");
    }
    std::vector<float> v(static_cast<size_t>(s->elements()));
    std::memcpy(v.data(), s->data, v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i)
      check_tensor_scale(v[i], info_.path, v.size() > 1 ? cname + " (expert " + std::to_string(i) + ")" : cname);
    return v;
  }

  TensorEntry entry_of(const gguf::TensorInfo& t, const std::string& name) const {
    TensorEntry e;
    e.name = name;
    e.shape.assign(t.ne.rbegin(), t.ne.rend());
    e.storage_name = ggml_type_name(t.type);
    const GgmlTypeInfo* ti = ggml_type_info(t.type);
    e.bits_per_weight = 8.0 * static_cast<double>(ti->block_bytes) / static_cast<double>(ti->block_values);
    switch (t.type) {
      case ggml::F32: e.storage = Storage::f32; break;
      case ggml::F16: e.storage = Storage::f16; break;
      case ggml::BF16: e.storage = Storage::bf16; break;
      case ggml::NVFP4: e.storage = Storage::nvfp4; break;
      default: e.storage = ti->dequantizable ? Storage::ggml_quant : Storage::other; break;
    }
    if (e.storage == Storage::other) {
      throw Error(info_.path, t.name, "tensor type not supported", "F32, F16, BF16, NVFP4 or Q4_0/Q4_1/Q8_0/Q4_K/Q6_K",
                  e.storage_name);
    }
    return e;
  }

  void validate_and_index() {
    // Companion tensors of NVFP4 weights are attributes of their weight, not tensors of their own.
    std::unordered_set<std::string> companions;
    int nvfp4_count = 0, with_input = 0;
    for (const auto& t : file_.tensors()) {
      if (t.type != ggml::NVFP4) continue;
      companions.insert(base_name(t.name) + ".scale");
      companions.insert(base_name(t.name) + ".input_scale");
    }
    // Stacked experts (llama.cpp's blk.N.ffn_*_exps, ne = [n_in, n_out, n_expert]) become one entry
    // per expert, blk.N.ffn_*_exps.E.weight, viewing its slice of the mapped data.
    size_t n_slices = 0;
    for (const auto& t : file_.tensors())
      if (t.ne.size() == 3 && ends_with_exps(t.name)) n_slices += static_cast<size_t>(t.ne[2]);
    slices_.reserve(n_slices);
    for (const auto& t : file_.tensors()) {
      if (companions.count(t.name) && t.type == ggml::F32) continue;
      const bool stacked = t.ne.size() == 3 && ends_with_exps(t.name);
      if (t.type == ggml::NVFP4 || stacked) {
        if (t.ne.size() != 2 && !stacked) {
          throw Error(info_.path, t.name, "NVFP4 tensor must be a matrix or a stack of experts (blk.N.ffn_*_exps)",
                      "2 dimensions, or 3 for blk.N.ffn_{gate,up,down}_exps", std::to_string(t.ne.size()));
        }
      }
      if (t.type == ggml::NVFP4) {
        check_n_in(t.ne[0], true, info_.path, t.name);
        // Scale bytes: the first 4 bytes of every 36-byte block.
        check_ggml_scale_bytes(t.data, t.nbytes / 36, info_.path, t.name);
        // The check touched every page of the tensor: let them go until the load copies it (else
        // the whole file stays resident beside the packed weights until each tensor's release).
        file_.drop(t.data, static_cast<size_t>(t.nbytes));
      }
      const int64_t n_expert = stacked ? t.ne[2] : 1;
      std::vector<float> s2, is;
      if (t.type == ggml::NVFP4) {
        s2 = companion_scales(t.name, ".scale", n_expert);
        is = companion_scales(t.name, ".input_scale", n_expert);
      }
      for (int64_t x = 0; x < n_expert; ++x) {
        const gguf::TensorInfo* info = &t;
        std::string name = t.name;
        if (stacked) {
          if (n_expert < 1 || t.nbytes % n_expert != 0)
            throw Error(info_.path, t.name, "stacked experts do not split evenly", "n_expert >= 1 dividing the bytes",
                        std::to_string(n_expert));
          gguf::TensorInfo sl = t;
          sl.ne = {t.ne[0], t.ne[1]};
          sl.nbytes = t.nbytes / n_expert;
          sl.data = t.data + x * sl.nbytes;
          name = hf::expert_name(t.name, x);
          sl.name = name;
          slices_.push_back(std::move(sl));
          info = &slices_.back();
        }
        TensorEntry e = entry_of(*info, name);
        if (e.storage == Storage::nvfp4) {
          const auto pick = [&](const std::vector<float>& v, float absent) {
            return v.empty() ? absent : v.size() == 1 ? v[0] : v[static_cast<size_t>(x)];
          };
          e.scale2 = pick(s2, 1.0f);
          e.input_scale = pick(is, 0.0f);
          if (e.input_scale != 0.0f) check_input_scale(e.input_scale, info_.path, base_name(t.name) + ".input_scale");
          ++nvfp4_count;
          if (e.input_scale > 0) ++with_input;
        }
        infos_[e.name] = info;
        entries_.push_back(std::move(e));
      }
    }
    const gguf::Value* ft = file_.find("general.file_type");
    if (ft && ft->is_integer()) {
      const int64_t ftype = ft->as_int("general.file_type");
      // NVFP4 tensors under another file type are accepted: llama.cpp's quantizer keeps its base
      // ftype when tensor-type overrides make some tensors NVFP4. The reverse claim is refused.
      if (nvfp4_count == 0 && ftype == kFtypeNvfp4) {
        throw Error(info_.path, "", "general.file_type says NVFP4 but no tensor is NVFP4",
                    "at least one NVFP4 (type 40) tensor", "none");
      }
    }
    info_.has_input_scales = nvfp4_count > 0 && with_input == nvfp4_count;
    if (nvfp4_count > 0) info_.algorithm = with_input == nvfp4_count ? "NVFP4" : "W4A16_NVFP4";
    else info_.algorithm = ft ? "ggml file type " + std::to_string(ft->as_int()) : "float";
  }

  static bool ends_with_exps(const std::string& name) {
    const std::string b = base_name(name);
    return b.size() > 5 && b.compare(b.size() - 5, 5, "_exps") == 0;
  }

  gguf::File file_;
  CheckpointInfo info_;
  std::vector<TensorEntry> entries_;
  std::vector<gguf::TensorInfo> slices_;  // one per expert of each stacked tensor (reserved: stable)
  std::unordered_map<std::string, const gguf::TensorInfo*> infos_;
};

}  // namespace

std::unique_ptr<Checkpoint> open_gguf_checkpoint(const std::string& path) {
  return std::make_unique<GgufCheckpoint>(path);
}

}  // namespace nvfp4
