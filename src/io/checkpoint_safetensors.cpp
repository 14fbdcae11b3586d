#include "nvfp4/mapped_file.h"
#include "io/checkpoint_safetensors.h"
#include "io/json_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <cstdio>
#include <deque>
#include <set>
#include <span>
#include <unordered_map>

#include "io/csf_scales.h"
#include "io/finite_check.h"
#include "io/fp8_scales.h"
#include "io/stacked_experts.h"
#include "io/hf_names.h"
#include "io/quant_config.h"
#include "io/hf_config.h"
#include "nvfp4/codec.h"
#include "nvfp4/dense.h"
#include "nvfp4/error.h"
#include "nvfp4/quantize.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/validate.h"

namespace nvfp4 {

namespace {

namespace fs = std::filesystem;
namespace st = safetensors;
using Json = nlohmann::json;

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// config.json is read as Python writes it (bare Infinity / NaN: io/json_config.h); the rest strictly.
std::optional<Json> read_json(const fs::path& p) {
  if (!fs::exists(p)) return std::nullopt;
  const std::string text = read_regular_file(p.string());  // a FIFO or device is refused, not waited on
  try {
    if (p.filename() == "config.json") return parse_config_json(text, p.string());
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(p.string(), "", "not valid JSON", "a JSON document", e.what());
  }
}

struct Ref {
  const st::TensorInfo* t = nullptr;
  std::string file;
};

// One scalar F32 ([] or [1]).
float scalar_f32(const Ref& r, const std::string& role) {
  if (r.t->dtype != st::Dtype::F32 || r.t->elements() != 1 || r.t->shape.size() > 1) {
    std::string shape = "[";
    for (auto d : r.t->shape) shape += std::to_string(d) + ",";
    throw Error(r.file, r.t->name, role + " must be one F32 value", "F32 [] or [1]",
                std::string(st::dtype_name(r.t->dtype)) + " " + shape + "]");
  }
  float v;
  std::memcpy(&v, r.t->data, 4);
  return v;
}

struct Source {
  // fp8: a scale per tensor or output row; mxfp8: E8M0 bytes [n_out][n_in/32] (scale.t's bytes);
  // fp8_block: float scales per 128 x 128 block, read into bscale.
  enum Kind { nvfp4, fp8, mxfp8, fp8_block, plain } kind = plain;
  Ref w, scale;                 // codes (or FP8 / float values) and block scales (or FP8 scale)
  Ref in_scale;                 // an FP8 layer's input_scale, as stored (t null: none)
  std::string module;           // HF module
  int64_t heads = 0;            // q/k row permutation (0: none)
  int64_t n_out = 0, n_in = 0;
  std::vector<float> pqs;       // AWQ pre_quant_scale
  std::vector<float> bscale;    // fp8_block: [ceil(n_out/128)][ceil(n_in/128)]
  std::vector<uint8_t> csf;     // nvfp4 with CSF-compressed block scales: the decoded bytes
};

class StCheckpoint final : public Checkpoint {
 public:
  StCheckpoint(const std::string& path, const OpenOptions& o) : mtp_(o.mtp), raw_names_(o.raw_names), index_tensors_(o.index_tensors) {
    info_.path = path;
    info_.container = "safetensors";
    load_files(path);
    recognise();
  }
  const CheckpointInfo& info() const override { return info_; }
  const gguf::Value* meta(const std::string& key) const override {
    for (const auto& [k, v] : meta_) if (k == key) return &v;
    return nullptr;
  }
  void forget_meta(const std::string& key) override {
    for (auto it = meta_.begin(); it != meta_.end(); ++it) {
      if (it->first == key) {
        meta_.erase(it);
        return;
      }
    }
  }
  std::vector<std::string> meta_keys() const override {
    std::vector<std::string> k;
    for (const auto& kv : meta_) k.push_back(kv.first);
    return k;
  }
  const std::vector<TensorEntry>& tensors() const override { return entries_; }

  RowMatrix nvfp4(const std::string& name) const override {
    const TensorEntry& e = tensor(name);
    const Source& s = src_.at(name);
    if (s.kind != Source::nvfp4) throw Error(info_.path, name, "tensor is not NVFP4", "NVFP4", e.storage_name);
    RowMatrix m;
    m.n_out = s.n_out;
    m.n_in = s.n_in;
    m.scale2 = e.scale2;
    m.codes.resize(static_cast<size_t>(s.n_out * s.n_in / 2));
    m.scales.resize(static_cast<size_t>(s.n_out * s.n_in / 16));
    const int64_t cb = s.n_in / 2, sb = s.n_in / 16;
    for (int64_t r = 0; r < s.n_out; ++r) {
      const int64_t from = s.heads ? hf::permuted_source_row(r, s.n_out, s.heads) : r;
      std::memcpy(m.codes.data() + r * cb, s.w.t->data + from * cb, static_cast<size_t>(cb));
      std::memcpy(m.scales.data() + r * sb, (s.csf.empty() ? s.scale.t->data : s.csf.data()) + from * sb, static_cast<size_t>(sb));
    }
    return m;
  }

  bool nvfp4_view(const std::string& name, RowView& view, std::vector<int64_t>& rows) const override {
    const TensorEntry& e = tensor(name);
    const Source& s = src_.at(name);
    if (s.kind != Source::nvfp4) return false;
    view = RowView{s.n_out, s.n_in, s.w.t->data, s.csf.empty() ? s.scale.t->data : s.csf.data(), e.scale2};
    rows.clear();
    if (s.heads) {  // as nvfp4() copies them
      rows.resize(static_cast<size_t>(s.n_out));
      for (int64_t r = 0; r < s.n_out; ++r) rows[static_cast<size_t>(r)] = hf::permuted_source_row(r, s.n_out, s.heads);
      view.rows = rows.data();
    }
    return true;
  }

  std::vector<float> pre_quant_scale(const std::string& name) const override { return src_.at(tensor(name).name).pqs; }

  std::vector<float> to_f32(const std::string& name) const override {
    const TensorEntry& e = tensor(name);
    const Source& s = src_.at(name);
    if (s.kind == Source::nvfp4) {
      const RowMatrix m = nvfp4(name);
      std::vector<float> out(static_cast<size_t>(m.n_out * m.n_in));
      dequantize(m.view(), out.data());
      return out;
    }
    std::vector<float> raw(static_cast<size_t>(s.w.t->elements()));
    if (s.kind == Source::mxfp8 || s.kind == Source::fp8_block) {
      // Each weight as the kernels widen it (kern::fp8s_at: e4m3 * scale, one float32 product).
      const DType dt = s.kind == Source::mxfp8 ? DType::mxfp8 : DType::fp8_b128;
      std::vector<uint8_t> w(static_cast<size_t>(s.n_out * s.n_in + scale_bytes(dt, s.n_out, s.n_in)));
      std::memcpy(w.data(), s.w.t->data, static_cast<size_t>(s.n_out * s.n_in));
      std::memcpy(w.data() + s.n_out * s.n_in, scale_data(s), static_cast<size_t>(scale_bytes(dt, s.n_out, s.n_in)));
      const DenseLinear d = DenseLinear::prepare_scaled(dt, w.data(), w.data() + s.n_out * s.n_in, s.n_out, s.n_in);
      for (int64_t r = 0; r < s.n_out; ++r) d.row(r, raw.data() + r * s.n_in);
    } else {
      st::to_float(*s.w.t, raw.data(), s.w.file);
    }
    if (s.kind == Source::fp8) {
      std::vector<float> sc(static_cast<size_t>(s.scale.t->elements()));
      st::to_float(*s.scale.t, sc.data(), s.scale.file);
      for (int64_t r = 0; r < s.n_out; ++r) {
        const float f = sc.size() == 1 ? sc[0] : sc[static_cast<size_t>(r)];
        for (int64_t i = 0; i < s.n_in; ++i) raw[static_cast<size_t>(r * s.n_in + i)] *= f;
      }
    }
    if (!s.heads) return raw;
    std::vector<float> out(raw.size());
    for (int64_t r = 0; r < s.n_out; ++r) {
      const int64_t from = hf::permuted_source_row(r, s.n_out, s.heads);
      std::memcpy(out.data() + r * s.n_in, raw.data() + from * s.n_in, static_cast<size_t>(s.n_in) * 4);
    }
    (void)e;
    return out;
  }

  void release(const std::string& name) const override {
    auto it = src_.find(name);
    if (it == src_.end()) return;
    for (const Ref* r : {&it->second.w, &it->second.scale})
      if (r->t)
        for (const auto& f : files_) f->drop(r->t->data, static_cast<size_t>(r->t->nbytes()));  // each ignores others' bytes
  }

  void release_all() const override {
    for (const auto& f : files_) f->drop_all();
  }

  bool raw_fp8(const std::string& name, const uint8_t*& codes, std::vector<float>& scale) const override {
    const Source& s = src_.at(tensor(name).name);
    if (s.kind != Source::fp8 || s.heads) return false;  // permuted rows: to_f32 reorders them
    codes = s.w.t->data;
    scale.resize(static_cast<size_t>(s.scale.t->elements()));
    st::to_float(*s.scale.t, scale.data(), s.scale.file);
    return true;
  }

  bool raw_fp8_scaled(const std::string& name, DType& dtype, const uint8_t*& codes, const void*& scales) const override {
    const Source& s = src_.at(tensor(name).name);
    if ((s.kind != Source::mxfp8 && s.kind != Source::fp8_block) || s.heads) return false;  // permuted rows: to_f32
    dtype = s.kind == Source::mxfp8 ? DType::mxfp8 : DType::fp8_b128;
    codes = s.w.t->data;
    scales = scale_data(s);
    return true;
  }

  bool stored_fp8(const std::string& name, StoredFp8& out) const override {
    const Source& s = src_.at(tensor(name).name);
    if (s.kind != Source::fp8 && s.kind != Source::mxfp8 && s.kind != Source::fp8_block) return false;
    out.form = s.kind == Source::mxfp8 ? DType::mxfp8 : s.kind == Source::fp8_block ? DType::fp8_b128 : DType::e4m3;
    const auto as_stored = [](const Ref& r) {
      StoredTensor t;
      if (!r.t) return t;
      t.dtype = st::dtype_name(r.t->dtype);
      t.shape = r.t->shape;
      t.data = r.t->data;
      t.nbytes = static_cast<size_t>(r.t->nbytes());
      return t;
    };
    out.weight = as_stored(s.w);
    out.scale = as_stored(s.scale);
    out.input_scale = as_stored(s.in_scale);
    return true;
  }

  std::vector<NamedTensor> set_aside_tensors() const override {
    std::vector<NamedTensor> out;
    for (const std::string& name : aside_) {
      const Ref& r = refs_.at(name);
      out.push_back({name, {st::dtype_name(r.t->dtype), r.t->shape, r.t->data, static_cast<size_t>(r.t->nbytes())}});
    }
    return out;
  }

  bool raw_float(const std::string& name, DType& dtype, const void*& data) const override {
    const Source& s = src_.at(tensor(name).name);
    if (s.kind != Source::plain || s.heads) return false;
    switch (s.w.t->dtype) {
      case st::Dtype::F32: dtype = DType::f32; break;
      case st::Dtype::F16: dtype = DType::f16; break;
      case st::Dtype::BF16: dtype = DType::bf16; break;
      default: return false;
    }
    data = s.w.t->data;
    return true;
  }
  std::shared_ptr<const void> mapping(const std::string& name) const override {
    const Source& s = src_.at(tensor(name).name);
    for (const auto& f : files_)
      if (f->path() == s.w.file) return f->map();
    return nullptr;
  }

 private:
  void load_files(const std::string& path) {
    fs::path dir;
    std::vector<std::string> files;
    if (fs::is_directory(path)) {
      dir = path;
      if (auto idx = read_json(dir / "model.safetensors.index.json")) {
        const std::string ip = (dir / "model.safetensors.index.json").string();
        if (!idx->contains("weight_map") || !(*idx)["weight_map"].is_object()) {
          throw Error(ip, "", "index without weight_map", "\"weight_map\": {...}", "absent");
        }
        std::set<std::string> shards;
        for (auto it = (*idx)["weight_map"].begin(); it != (*idx)["weight_map"].end(); ++it) {
          if (!it.value().is_string()) throw Error(ip, it.key(), "weight_map entry is not a file name", "a string", it.value().dump());
          const std::string f = it.value().get<std::string>();
          if (f.find('/') != std::string::npos) throw Error(ip, it.key(), "weight_map names a file outside the directory", "a file name", f);
          shards.insert(f);
          index_[it.key()] = f;
        }
        for (const auto& s : shards) files.push_back((dir / s).string());
      } else if (fs::exists(dir / "model.safetensors")) {
        files.push_back((dir / "model.safetensors").string());
      } else {
        throw Error(path, "", "directory holds no checkpoint", "model.safetensors or model.safetensors.index.json", "neither");
      }
    } else {
      dir = fs::path(path).parent_path();
      if (dir.empty()) dir = ".";
      files.push_back(path);
    }
    dir_ = dir.string();
    for (const auto& f : files) {
      if (!fs::exists(f)) throw Error(f, "", "shard listed in the index is missing", "the file", "absent");
      files_.push_back(std::make_unique<st::File>(st::File::open(f)));
    }
    for (const auto& f : files_) {
      for (const auto& t : f->tensors()) {
        if (refs_.count(t.name)) throw Error(f->path(), t.name, "tensor present in two shards", "one shard", refs_[t.name].file + " and " + f->path());
        if (!index_.empty()) {
          auto it = index_.find(t.name);
          const std::string base = fs::path(f->path()).filename().string();
          if (it == index_.end() || it->second != base) {
            throw Error(f->path(), t.name, "tensor not where the index says", it == index_.end() ? "listed in the index" : it->second, base);
          }
        }
        refs_[t.name] = Ref{&t, f->path()};
        // Stacked float experts (Gemma 4's experts.gate_up_proj): read as one matrix per expert.
        std::vector<st::TensorInfo> views = split_stacked_experts(t, f->path());
        if (!views.empty()) refs_.erase(t.name), stacked_.insert(t.name);
        for (st::TensorInfo& v : views) {
          if (refs_.count(v.name)) throw Error(f->path(), v.name, "an expert both stacked and on its own", "one of them", "both");
          const std::string vname = v.name;  // (the assignment's right side runs first: v is moved)
          refs_[vname] = Ref{&split_.emplace_back(std::move(v)), f->path()};
        }
      }
    }
    for (const auto& [name, file] : index_) {
      if (!refs_.count(name) && !stacked_.count(name)) throw Error(dir_ + "/model.safetensors.index.json", name, "tensor listed in the index is missing", file, "absent");
    }
  }

  const Ref* find(const std::string& n) const {
    auto it = refs_.find(n);
    return it == refs_.end() ? nullptr : &it->second;
  }

  void recognise() {
    const auto config = read_json(fs::path(dir_) / "config.json");
    const auto hfq = read_json(fs::path(dir_) / "hf_quant_config.json");
    const QuantConfig qc = QuantConfig::parse(config ? &*config : nullptr, hfq ? &*hfq : nullptr, dir_);
    info_.producer = qc.producer;
    info_.algorithm = qc.algorithm;
    int64_t n_head = 0, n_head_kv = 0;
    bool permute = false;
    std::string arch_name;  // the table entry config.json names: its own HF spellings map first
    if (config) {
      meta_ = hf_config_meta(*config, (fs::path(dir_) / "config.json").string(), &meta_origin_);
      n_head = config->value("num_attention_heads", 0);
      n_head_kv = config->value("num_key_value_heads", n_head);
      // llama.cpp permutes q/k rows for its LLAMA arch (Llama, Mistral: adjacent-pair RoPE), not
      // for NeoX-RoPE families (Qwen2, Qwen3), which keep HF's order.
      const ArchInfo* a = hf_config_arch(*config);
      permute = a && a->permute_qk && n_head > 0;
      if (a) arch_name = std::string(a->name);
      arch_name_ = arch_name;
    }

    std::set<std::string> used;
    if (config) set_aside_parts(*config, used);
    int nvfp4_layers = 0, with_input = 0;
    // NVFP4 and FP8 layers first: they own their companion tensors.
    for (const auto& [name, ref] : refs_) {
      if (used.count(name)) continue;  // set aside
      std::string module;
      bool ct = false;
      if (ends_with(name, ".weight_packed")) {
        module = name.substr(0, name.size() - 14);
        ct = true;
      } else if (ends_with(name, ".weight") && (ref.t->dtype == st::Dtype::U8 || ref.t->dtype == st::Dtype::F8_E4M3)) {
        module = name.substr(0, name.size() - 7);
      } else {
        continue;
      }
      const LayerQuant lq = qc.layer(module);
      const Ref* sc = find(module + ".weight_scale");
      Source s;
      s.module = module;
      s.w = ref;
      const std::string canon = canon_name(module + ".weight");
      TensorEntry e;
      e.name = canon;
      if (ref.t->dtype == st::Dtype::F8_E4M3 && !ct) {  // FP8 layer
        if (!layer_quant_fp8(lq)) {
          throw Error(ref.file, name, "FP8 weight in a layer the configuration does not declare FP8", "FP8, MXFP8 or FP8_BLOCK declared", layer_quant_name(lq));
        }
        if (ref.t->shape.size() != 2) throw Error(ref.file, name, "FP8 weight must be a matrix", "2 dimensions", std::to_string(ref.t->shape.size()));
        s.n_out = ref.t->shape[0];
        s.n_in = ref.t->shape[1];
        // DeepSeek / GLM / Kimi name a block scale weight_scale_inv (a multiplier all the same).
        const Ref* inv = find(module + ".weight_scale_inv");
        if (!sc && inv && lq == LayerQuant::fp8_block) sc = inv;
        if (!sc) throw Error(ref.file, name, "FP8 weight without its scale", module + (lq == LayerQuant::fp8_block ? ".weight_scale or .weight_scale_inv" : ".weight_scale"), "absent");
        s.scale = *sc;
        e.storage = Storage::fp8;
        if (lq == LayerQuant::mxfp8 || lq == LayerQuant::fp8_block) {
          // The kernels widen every finite byte exactly; a NaN byte (0x7F, 0xFF) is refused here.
          for (int64_t k = 0; k < s.n_out * s.n_in; ++k)
            if ((ref.t->data[k] & 0x7F) == 0x7F)
              throw Error(ref.file, name, "FP8 E4M3 weight: finite values", "no NaN byte (0x7F, 0xFF)",
                          "a NaN at row " + std::to_string(k / s.n_in) + ", column " + std::to_string(k % s.n_in));
        }
        if (lq == LayerQuant::mxfp8) {
          check_mxfp8_scales(*sc->t, sc->file, ref.file, name, s.n_out, s.n_in);
          s.kind = Source::mxfp8;
          e.storage_name = "MXFP8";
          e.bits_per_weight = 8.25;
        } else if (lq == LayerQuant::fp8_block) {
          s.bscale = read_fp8_block_scales(*sc->t, sc->file, s.n_out, s.n_in);
          s.kind = Source::fp8_block;
          e.storage_name = "F8_E4M3 128x128";
          e.bits_per_weight = 8.0 + 32.0 * static_cast<double>(s.bscale.size()) / static_cast<double>(s.n_out * s.n_in);
        } else {
          s.kind = Source::fp8;
          const int64_t ne = sc->t->elements();
          if (!st::dtype_is_float(sc->t->dtype) || sc->t->dtype == st::Dtype::F8_E4M3 || (ne != 1 && ne != s.n_out)) {
            throw Error(sc->file, sc->t->name, "FP8 weight scale must be per tensor or per output channel", "F32/F16/BF16 with 1 or " + std::to_string(s.n_out) + " values",
                        std::string(st::dtype_name(sc->t->dtype)) + " with " + std::to_string(ne));
          }
          std::vector<float> v(static_cast<size_t>(ne));
          st::to_float(*sc->t, v.data(), sc->file);
          for (size_t i = 0; i < v.size(); ++i) check_tensor_scale(v[i], sc->file, sc->t->name);
          e.storage_name = "F8_E4M3";
          e.bits_per_weight = 8.0;
        }
        if (const Ref* is = find(module + ".input_scale")) s.in_scale = *is;
        used.insert({name, sc->t->name, module + ".input_scale"});
      } else {
        // NVFP4: codes U8 [n_out][n_in/2].
        if (lq != LayerQuant::nvfp4_w4a4 && lq != LayerQuant::nvfp4_w4a16 && lq != LayerQuant::nvfp4_awq) {
          throw Error(ref.file, name, "NVFP4 tensors present but the configuration does not say NVFP4 for this layer",
                      "NVFP4 declared (" + (qc.source.empty() ? std::string("no quantization config found") : qc.source) + ")",
                      layer_quant_name(lq));
        }
        if (ref.t->dtype != st::Dtype::U8) throw Error(ref.file, name, "NVFP4 codes must be U8", "U8", st::dtype_name(ref.t->dtype));
        if (ref.t->shape.size() != 2) {
          throw Error(ref.file, name, "NVFP4 weight must be a matrix (stacked experts are not supported yet)", "2 dimensions", std::to_string(ref.t->shape.size()));
        }
        s.kind = Source::nvfp4;
        s.n_out = ref.t->shape[0];
        s.n_in = ref.t->shape[1] * 2;
        check_n_in(s.n_in, false, ref.file, name);
        const Ref* csf_f = find(module + ".weight_scale.nvfp4_csf_fixed");
        const Ref* csf_e = find(module + ".weight_scale.nvfp4_csf_exceptions");
        if (!sc && (csf_f || csf_e)) {
          // CSF-compressed block scales (io/csf_scales.h): decoded here to the plain E4M3 bytes.
          if (!csf_f || !csf_e) {
            const Ref* one = csf_f ? csf_f : csf_e;
            throw Error(one->file, one->t->name, "CSF scale stream without its partner",
                        module + ".weight_scale.nvfp4_csf_fixed and .nvfp4_csf_exceptions", "only " + one->t->name);
          }
          s.csf = decode_csf_scales(*csf_f->t, csf_f->file, *csf_e->t, csf_e->file, s.n_out, s.n_in / 16);
          check_scale_bytes(s.csf.data(), static_cast<int64_t>(s.csf.size()), csf_f->file, module + ".weight_scale (decoded from CSF)");
          s.scale = *csf_f;  // its pages go with release()
          used.insert({csf_f->t->name, csf_e->t->name});
        } else {
          if (!sc) throw Error(ref.file, name, "NVFP4 weight without its block scale", module + ".weight_scale", "absent");
          if (sc->t->dtype != st::Dtype::F8_E4M3) throw Error(sc->file, sc->t->name, "NVFP4 block scale must be F8_E4M3", "F8_E4M3", st::dtype_name(sc->t->dtype));
          const std::vector<int64_t> want = {s.n_out, s.n_in / 16};
          if (sc->t->shape != want) {
            throw Error(sc->file, sc->t->name, "NVFP4 block scale has the wrong shape",
                        "[" + std::to_string(want[0]) + ", " + std::to_string(want[1]) + "]",
                        "[" + std::to_string(sc->t->shape.empty() ? 0 : sc->t->shape[0]) + ", " +
                            std::to_string(sc->t->shape.size() > 1 ? sc->t->shape[1] : 0) + "]");
          }
          check_scale_bytes(sc->t->data, sc->t->elements(), sc->file, sc->t->name);
          for (const auto& f : files_) f->drop(sc->t->data, static_cast<size_t>(sc->t->nbytes()));  // until the load reads it
          s.scale = *sc;
        }
        // Tensor scale: a multiplier (ModelOpt) or its reciprocal (compressed-tensors).
        const std::string s2n = ct ? module + ".weight_global_scale" : module + ".weight_scale_2";
        const Ref* s2 = find(s2n);
        if (!s2) throw Error(ref.file, name, "NVFP4 weight without its tensor scale", s2n, "absent");
        const float raw = scalar_f32(*s2, "NVFP4 tensor scale");
        check_tensor_scale(raw, s2->file, s2n);  // a compressed-tensors 0 (uncalibrated) is refused too
        e.scale2 = ct ? 1.0f / raw : raw;
        check_tensor_scale(e.scale2, s2->file, s2n);
        const std::string isn = ct ? module + ".input_global_scale" : module + ".input_scale";
        if (const Ref* is = find(isn)) {
          const float v = scalar_f32(*is, "NVFP4 input scale");
          check_tensor_scale(v, is->file, isn);
          e.input_scale = ct ? 1.0f / v : v;
          check_input_scale(e.input_scale, is->file, isn);
          if (lq != LayerQuant::nvfp4_w4a4 && lq != LayerQuant::nvfp4_awq) {  // ModelOpt's NVFP4_AWQ is W4A4
            throw Error(is->file, isn, "input scale present but the configuration does not declare W4A4 activations", "no input scale for " + std::string(layer_quant_name(lq)), "an input scale");
          }
          used.insert(isn);
          ++with_input;
        } else if (lq == LayerQuant::nvfp4_w4a4 && qc.producer == "modelopt") {
          throw Error(ref.file, name, "W4A4 declared (quant_algo NVFP4) but the layer has no input scale", isn, "absent");
        } else if (lq == LayerQuant::nvfp4_w4a4) {
          throw Error(ref.file, name, "W4A4 declared (FP4 input_activations) but the layer has no input scale", isn, "absent");
        }
        const std::string pq = module + ".pre_quant_scale";
        if (const Ref* p = find(pq)) {
          if (lq != LayerQuant::nvfp4_awq) throw Error(p->file, pq, "pre_quant_scale present but the layer is not NVFP4_AWQ", "NVFP4_AWQ", layer_quant_name(lq));
          if (!st::dtype_is_float(p->t->dtype) || p->t->elements() != s.n_in) {
            throw Error(p->file, pq, "pre_quant_scale must hold one float per input", std::to_string(s.n_in) + " values", std::to_string(p->t->elements()));
          }
          s.pqs.resize(static_cast<size_t>(s.n_in));
          st::to_float(*p->t, s.pqs.data(), p->file);
          for (float v : s.pqs) if (!std::isfinite(v)) throw Error(p->file, pq, "pre_quant_scale not finite", "finite", std::to_string(v));
          used.insert(pq);
        }  // an NVFP4_AWQ layer without one: export_hf_checkpoint folded its scale into the preceding norm
        if (ct) check_weight_shape(module, s, used);  // some compressed-tensors versions store it, some do not
        e.storage = Storage::nvfp4;
        e.storage_name = "NVFP4";
        e.bits_per_weight = 4.5;
        ++nvfp4_layers;
        used.insert({name, module + ".weight_scale", s2n});
      }
      const std::string base = module.substr(module.find_last_of('.') + 1);
      if (permute && (base == "q_proj" || base == "k_proj")) s.heads = base == "q_proj" ? n_head : n_head_kv;
      if (s.heads && s.n_out % (2 * s.heads) != 0) throw Error(ref.file, name, "rows do not split into heads", "n_out % (2 x heads) == 0", std::to_string(s.n_out));
      e.shape = {s.n_out, s.n_in};
      add(std::move(e), std::move(s));
    }
    if (qc.declares_nvfp4() && nvfp4_layers == 0) {
      throw Error(qc.source, "", "the configuration says NVFP4 but no NVFP4 tensor exists", "at least one NVFP4 layer", "none");
    }
    // Everything else must be a plain float tensor.
    for (const auto& [name, ref] : refs_) {
      if (used.count(name)) continue;
      const bool index = (ref.t->dtype == st::Dtype::I64 || ref.t->dtype == st::Dtype::I32) && ref.t->shape.size() == 1 &&
                         std::find(index_tensors_.begin(), index_tensors_.end(), name) != index_tensors_.end();
      if (!index && (!st::dtype_is_float(ref.t->dtype) || ref.t->dtype == st::Dtype::F8_E4M3 || ref.t->dtype == st::Dtype::F8_E5M2)) {
        throw Error(ref.file, name, "tensor of a form this project does not read",
                    "an NVFP4 or FP8 layer's part, or F32/F16/BF16/F64", st::dtype_name(ref.t->dtype));
      }
      if (ref.t->dtype == st::Dtype::F32 || ref.t->dtype == st::Dtype::F16 || ref.t->dtype == st::Dtype::BF16) {
        const DType dt = ref.t->dtype == st::Dtype::F32 ? DType::f32 : ref.t->dtype == st::Dtype::F16 ? DType::f16 : DType::bf16;
        check_finite_floats(dt, ref.t->data, ref.t->elements(), ref.t->shape.size() == 2 ? ref.t->shape[1] : 0, ref.file,
                            name);  // the file's own tensor name
      }
      Source s;
      s.w = ref;
      s.kind = Source::plain;
      TensorEntry e;
      e.name = canon_name(name);
      e.shape = ref.t->shape;
      e.storage = ref.t->dtype == st::Dtype::F32 ? Storage::f32 : ref.t->dtype == st::Dtype::F16 ? Storage::f16 : ref.t->dtype == st::Dtype::BF16 ? Storage::bf16 : Storage::other;
      e.storage_name = st::dtype_name(ref.t->dtype);
      e.bits_per_weight = st::dtype_bits(ref.t->dtype);
      // q/k weights and biases follow the row permutation (a bias as a column of one).
      const bool matrix = ends_with(name, ".weight") && ref.t->shape.size() == 2;
      const bool bias = ends_with(name, ".bias") && ref.t->shape.size() == 1;
      if (matrix || bias) {
        const std::string module = name.substr(0, name.find_last_of('.'));
        const std::string base = module.substr(module.find_last_of('.') + 1);
        s.n_out = ref.t->shape[0];
        s.n_in = matrix ? ref.t->shape[1] : 1;
        if (permute && (base == "q_proj" || base == "k_proj")) s.heads = base == "q_proj" ? n_head : n_head_kv;
        if (s.heads && s.n_out % (2 * s.heads) != 0)
          throw Error(ref.file, name, "rows do not split into heads", "n_out % (2 x heads) == 0", std::to_string(s.n_out));
      }
      add(std::move(e), std::move(s));
    }
    if (config) check_declared_sizes(*config);
    info_.has_input_scales = nvfp4_layers > 0 && with_input == nvfp4_layers;
    if (qc.producer == "float") info_.algorithm = "float";
  }

  // A vision-language release of a family we run as text (Qwen3.5 / Qwen3.6) also holds a vision
  // tower and multi-token-prediction layers: they are listed (info().set_aside) and left out.
  void set_aside_parts(const nlohmann::json& config, std::set<std::string>& used) {
    const ArchInfo* a = hf_config_arch(config);
    if (!a || !(a->gated_delta || a->block == "gemma4" || a->block == "nemotron_h" || a->block == "muse_glimmer")) return;
    static constexpr std::pair<std::string_view, std::string_view> kParts[] = {
        {"model.visual.", "vision tower"}, {"mtp.", "multi-token-prediction (MTP) layers"}};
    // Gemma 4's multimodal release: its vision and audio towers and their embedders (the unified
    // release, gemma4_unified, has no towers: a patch embedder, model.vision_embedder.*, instead).
    static constexpr std::pair<std::string_view, std::string_view> kGemma4[] = {
        {"model.vision_tower.", "vision tower"}, {"model.embed_vision.", "vision embedder"},
        {"model.audio_tower.", "audio tower"}, {"model.embed_audio.", "audio embedder"},
        {"model.vision_embedder.", "vision patch embedder"}};
    // Muse Glimmer's release: its vision tower, adapter and projection.
    static constexpr std::pair<std::string_view, std::string_view> kMuse[] = {
        {"model.vision_tower.", "vision tower"}, {"model.vision_adapter.", "vision adapter"}, {"model.vision_projection.", "vision projection"}};
    using Part = std::pair<std::string_view, std::string_view>;
    const std::span<const Part> parts = a->block == "gemma4"         ? std::span<const Part>(kGemma4)
                                        : a->block == "muse_glimmer" ? std::span<const Part>(kMuse)
                                                                     : std::span<const Part>(kParts);
    for (const auto& [prefix, what] : parts) {
      if (mtp_ && prefix == "mtp.") {
        read_mtp();
        continue;
      }
      int64_t n = 0, bytes = 0;
      std::set<std::string> dtypes;
      for (const auto& [name, ref] : refs_)
        if (name.rfind(prefix, 0) == 0) {
          used.insert(name);
          aside_.push_back(name);
          ++n;
          bytes += ref.t->nbytes();
          dtypes.insert(st::dtype_name(ref.t->dtype));
        }
      if (n == 0) continue;
      std::string kinds;
      for (const auto& d : dtypes) kinds += (kinds.empty() ? "" : "/") + d;
      char mib[32];
      std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
      info_.set_aside.push_back(std::string(what) + ": " + std::to_string(n) + " tensors under " + std::string(prefix) + "* (" +
                                kinds + ", " + mib + (prefix == "mtp." ? " MiB; run as the draft by --spec mtp)" : " MiB; not run)"));
    }
  }

  // --spec mtp: mtp.* as block n_layer (and on: Nemotron-H's module has several layers) under
  // llama.cpp's names (Checkpoint::OpenOptions).
  void read_mtp() {
    std::string arch;
    int64_t n_layer = -1;
    for (const auto& [k, v] : meta_)
      if (k == "general.architecture") arch = v.as_string(k);
    for (const auto& [k, v] : meta_)
      if (!arch.empty() && k == arch + ".block_count") n_layer = v.as_int(k);
    std::set<int64_t> layers;
    for (const auto& [name, ref] : refs_) {
      if (name.rfind("mtp.layers.", 0) != 0) continue;
      const size_t dot = name.find('.', 11);
      if (dot == std::string::npos) continue;
      try {
        layers.insert(std::stoll(name.substr(11, dot - 11)));
      } catch (const std::exception&) {
      }
    }
    if (n_layer < 0 || layers.empty()) return;  // nothing to read: --spec mtp says so by name
    mtp_layer_ = n_layer;
    gguf::Value v;
    v.type = gguf::ValueType::u32;
    v.u = layers.size();
    meta_.emplace_back(arch + ".nextn_predict_layers", v);
  }

  // The canonical name of a file's tensor: HF names mapped to GGUF's; with --spec mtp, mtp.* as
  // block mtp_layer_.
  std::string canon_name(const std::string& name) const {
    if (raw_names_) return name;
    if (mtp_layer_ < 0 || name.rfind("mtp.", 0) != 0) return hf::to_gguf_name(name, arch_name_);
    const std::string nx = "blk." + std::to_string(mtp_layer_) + ".nextn.";
    static constexpr std::pair<std::string_view, std::string_view> kOwn[] = {{"mtp.fc.", "eh_proj."},
                                                                             {"mtp.pre_fc_norm_embedding.", "enorm."},
                                                                             {"mtp.pre_fc_norm_hidden.", "hnorm."},
                                                                             {"mtp.norm.", "shared_head_norm."}};
    for (const auto& [hf, gg] : kOwn)
      if (name.rfind(hf, 0) == 0) return nx + std::string(gg) + name.substr(hf.size());
    // Nemotron-H's module: its first layer holds enorm / hnorm / eh_proj, its last
    // final_layernorm (vLLM's nemotron_h_mtp.py), each at that layer's block.
    static constexpr std::pair<std::string_view, std::string_view> kInLayer[] = {
        {"eh_proj.", "eh_proj."}, {"enorm.", "enorm."}, {"hnorm.", "hnorm."}, {"final_layernorm.", "shared_head_norm."}};
    if (name.rfind("mtp.layers.", 0) == 0) {
      const size_t dot = name.find('.', 11);
      if (dot != std::string::npos) {
        try {
          const int64_t j = std::stoll(name.substr(11, dot - 11));
          const std::string block = std::to_string(mtp_layer_ + j), rest = name.substr(dot + 1);
          for (const auto& [hf, gg] : kInLayer)
            if (rest.rfind(hf, 0) == 0) return "blk." + block + ".nextn." + std::string(gg) + rest.substr(hf.size());
          return hf::to_gguf_name("model.layers." + block + name.substr(dot), arch_name_);
        } catch (const std::exception&) {
        }
      }
    }
    return name;  // unknown: the model refuses it by name
  }

  // A scaled FP8 layer's scales in DenseLinear::prepare_scaled's layout.
  static const void* scale_data(const Source& s) {
    return s.kind == Source::mxfp8 ? static_cast<const void*>(s.scale.t->data) : static_cast<const void*>(s.bscale.data());
  }

  // compressed-tensors' optional X.weight_shape: the unpacked [n_out, n_in], as I64 or I32.
  void check_weight_shape(const std::string& module, const Source& s, std::set<std::string>& used) const {
    const std::string n = module + ".weight_shape";
    const Ref* r = find(n);
    if (!r) return;
    const bool i64 = r->t->dtype == st::Dtype::I64, i32 = r->t->dtype == st::Dtype::I32;
    std::vector<int64_t> v;
    if ((i64 || i32) && r->t->elements() == 2) {
      for (int k = 0; k < 2; ++k) {
        if (i64) {
          int64_t x;
          std::memcpy(&x, r->t->data + 8 * k, 8);
          v.push_back(x);
        } else {
          int32_t x;
          std::memcpy(&x, r->t->data + 4 * k, 4);
          v.push_back(x);
        }
      }
    }
    const std::vector<int64_t> want = {s.n_out, s.n_in};
    if (v != want) {
      std::string found = std::string(st::dtype_name(r->t->dtype)) + " with " + std::to_string(r->t->elements()) + " values";
      if (v.size() == 2) found = "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
      throw Error(r->file, n, "compressed-tensors weight_shape does not match the packed weight",
                  "I64/I32 [" + std::to_string(want[0]) + ", " + std::to_string(want[1]) + "]", found);
    }
    used.insert(n);
  }

  // config.json's vocab_size agrees with the embedding's and the output head's rows (both named as
  // the checkpoint names them).
  void check_declared_sizes(const nlohmann::json& config) const {
    const auto it = config.find("vocab_size");
    if (it == config.end() || it->is_null()) return;
    const std::string cfg = (fs::path(dir_) / "config.json").string();
    if (!it->is_number_integer())
      throw Error(cfg, "vocab_size", "config.json field of the wrong type", "an integer", it->dump());
    const int64_t declared = it->get<int64_t>();
    for (const char* canonical : {"token_embd.weight", "output.weight"}) {
      const auto s = src_.find(canonical);
      if (s == src_.end() || !s->second.w.t || s->second.w.t->shape.empty()) continue;
      const int64_t rows = s->second.kind == Source::plain ? s->second.w.t->shape[0] : s->second.n_out;
      if (rows != declared)
        throw Error(cfg, "vocab_size", "the declared vocabulary size contradicts the tensor " + s->second.w.t->name +
                                           " (in " + s->second.w.file + ")",
                    std::to_string(rows) + " (the rows of " + s->second.w.t->name + ")", std::to_string(declared));
    }
  }

  std::string own_name(const std::string& name, std::string& file) const override {
    if (const auto it = src_.find(name); it != src_.end() && it->second.w.t) {
      file = it->second.w.file;
      std::string own = it->second.w.t->name;
      std::string stacked;
      int64_t e = 0;
      if (it->second.w.t->shape.size() == 3 && hf::split_expert_name(name, stacked, e)) own += " (expert " + std::to_string(e) + ")";
      return own;
    }
    if (const auto it = meta_origin_.find(name); it != meta_origin_.end()) {
      file = (fs::path(dir_) / "config.json").string();
      return it->second;
    }
    // A tensor the directory lacks: as its exporter would have named it.
    if (name.rfind("blk.", 0) == 0 || name == "token_embd.weight" || name == "output.weight" || name == "output_norm.weight")
      if (std::string hf = hf::to_hf_name(name, arch_name_); hf != name) {
        const std::string layers = "model.layers.";
        int64_t block = -1;
        if (mtp_layer_ >= 0 && hf.rfind(layers, 0) == 0) {  // an MTP layer's: mtp.layers.<block - n_layer>.*
          const size_t dot = hf.find('.', layers.size());
          try {
            block = std::stoll(hf.substr(layers.size(), dot - layers.size()));
          } catch (const std::exception&) {
          }
          if (block >= mtp_layer_ && dot != std::string::npos) return "mtp.layers." + std::to_string(block - mtp_layer_) + hf.substr(dot);
        }
        return hf;
      }
    return "";
  }

  void add(TensorEntry e, Source s) {
    if (src_.count(e.name)) throw Error(info_.path, e.name, "two tensors map to the same canonical name", "unique names", e.name);
    src_[e.name] = std::move(s);
    entries_.push_back(std::move(e));
  }

  CheckpointInfo info_;
  std::vector<std::string> aside_;  // the set-aside parts' tensors (set_aside_tensors), file names
  bool mtp_ = false;
  bool raw_names_ = false;                  // OpenOptions::raw_names
  std::vector<std::string> index_tensors_;  // OpenOptions::index_tensors
  int64_t mtp_layer_ = -1;  // the block mtp.* is read as (--spec mtp); -1: set aside
  std::string arch_name_;   // the table entry config.json names (its own HF spellings map first)
  std::string dir_;
  std::vector<std::unique_ptr<st::File>> files_;
  std::deque<st::TensorInfo> split_;  // views of stacked experts (stacked_experts.h): stable addresses
  std::set<std::string> stacked_;     // the stacked tensors they replace
  std::map<std::string, std::string> index_;
  std::map<std::string, Ref> refs_;
  std::vector<std::pair<std::string, gguf::Value>> meta_;
  std::map<std::string, std::string> meta_origin_;  // GGUF key -> the config.json key it came from
  std::vector<TensorEntry> entries_;
  std::unordered_map<std::string, Source> src_;
};

}  // namespace

std::unique_ptr<Checkpoint> open_safetensors_checkpoint(const std::string& path, const Checkpoint::OpenOptions& o) {
  return std::make_unique<StCheckpoint>(path, o);
}

}  // namespace nvfp4
