#include "io/checkpoint_gguf.h"

#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

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
  }

  const CheckpointInfo& info() const override { return info_; }
  const gguf::Value* meta(const std::string& key) const override { return file_.find(key); }
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

 private:
  float companion_scale(const std::string& weight, const std::string& suffix, float absent) const {
    const std::string cname = base_name(weight) + suffix;
    const gguf::TensorInfo* s = file_.find_tensor(cname);
    if (!s) return absent;
    if (s->type != ggml::F32 || s->elements() != 1) {
      throw Error(info_.path, cname, "NVFP4 companion scale must be one F32 value", "F32 [1]",
                  ggml_type_name(s->type) + " with " + std::to_string(s->elements()) + " values");
    }
    float v;
    std::memcpy(&v, s->data, 4);
    check_tensor_scale(v, info_.path, cname);
    return v;
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
    for (const auto& t : file_.tensors()) {
      if (companions.count(t.name) && t.type == ggml::F32) continue;
      TensorEntry e;
      e.name = t.name;
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
      if (e.storage == Storage::nvfp4) {
        if (t.ne.size() != 2 && t.ne.size() != 3) {
          throw Error(info_.path, t.name, "NVFP4 tensor must be a matrix or a stack of experts",
                      "2 or 3 dimensions", std::to_string(t.ne.size()));
        }
        check_n_in(t.ne[0], true, info_.path, t.name);
        // Scale bytes: the first 4 bytes of every 36-byte block.
        for (int64_t b = 0; b < t.nbytes / 36; ++b) check_scale_bytes(t.data + 36 * b, 4, info_.path, t.name);
        e.scale2 = companion_scale(t.name, ".scale", 1.0f);
        e.input_scale = companion_scale(t.name, ".input_scale", 0.0f);
        ++nvfp4_count;
        if (e.input_scale > 0) ++with_input;
      }
      if (e.storage == Storage::other) {
        throw Error(info_.path, t.name, "tensor type not supported", "F32, F16, BF16, NVFP4 or Q4_0/Q4_1/Q8_0/Q4_K/Q6_K",
                    e.storage_name);
      }
      entries_.push_back(std::move(e));
    }
    for (const auto& e : entries_) infos_[e.name] = file_.find_tensor(e.name);
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

  gguf::File file_;
  CheckpointInfo info_;
  std::vector<TensorEntry> entries_;
  std::unordered_map<std::string, const gguf::TensorInfo*> infos_;
};

}  // namespace

std::unique_ptr<Checkpoint> open_gguf_checkpoint(const std::string& path) {
  return std::make_unique<GgufCheckpoint>(path);
}

}  // namespace nvfp4
