// Writes a checkpoint as an HF-style directory in ModelOpt's export layout: model.safetensors with
// X.weight U8 [n_out][n_in/2], X.weight_scale F8_E4M3 [n_out][n_in/16], X.weight_scale_2 F32 [],
// X.input_scale F32 [] (W4A4 layers), X.pre_quant_scale (AWQ), float tensors as they are; FP8
// layers (per tensor or channel, MXFP8, 128 x 128 blocks) byte for byte as the input stores them
// (X.weight F8_E4M3, X.weight_scale, X.input_scale), unless --quantize names them;
// config.json with quantization_config (quant_method modelopt) and hf_quant_config.json.
// Canonical GGUF names go back to HF names and q/k rows back to HF order (the inverse of
// llama.cpp's permutation, for the llama/mistral architectures). The directory is built under a
// temporary name beside OUT and renamed into place once complete (and verified, with --verify).
#include <fnmatch.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "io/json_config.h"
#include "convert/convert_modelopt.h"
#include "nvfp4/mapped_file.h"
#include "text/hf_tokenizer_writer.h"
#include "io/hf_names.h"
#include "nvfp4/arch.h"
#include "convert/weight_quantizer.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/quantize.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/temp_cleanup.h"

namespace nvfp4 {

namespace {

namespace fs = std::filesystem;
namespace st = safetensors;
using Json = nlohmann::json;

bool matches_any(const std::vector<std::string>& pats, const std::string& name) {
  for (const auto& p : pats) if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

struct Owned {
  std::string name;
  st::Dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

int64_t meta_int(const Checkpoint& ck, const std::string& key) {
  const gguf::Value* v = ck.meta(key);
  return v && v->is_integer() ? v->as_int(key) : 0;
}

// Rows of a [n_out][row_bytes] buffer from GGUF order back to HF order.
std::vector<uint8_t> unpermute(const uint8_t* src, int64_t n_out, int64_t row_bytes, int64_t heads) {
  std::vector<uint8_t> out(static_cast<size_t>(n_out * row_bytes));
  for (int64_t r = 0; r < n_out; ++r) {
    const int64_t to = heads ? hf::permuted_source_row(r, n_out, heads) : r;
    std::memcpy(out.data() + to * row_bytes, src + r * row_bytes, static_cast<size_t>(row_bytes));
  }
  return out;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> scalar(float f) { return bytes_of(std::vector<float>{f}); }

Json config_from_meta(const Checkpoint& ck) {
  const gguf::Value* a = ck.meta("general.architecture");
  const std::string arch = a && a->type == gguf::ValueType::string ? a->s : "";
  if (arch != "llama" || ck.meta("llama.expert_count")) {
    throw Error(ck.info().path, "", "cannot describe this architecture in an HF config.json",
                "general.architecture = llama without experts", arch + (ck.meta("llama.expert_count") ? " with experts" : ""));
  }
  Json c = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}};
  auto put = [&](const char* hfkey, const std::string& key) {
    if (const gguf::Value* v = ck.meta(key)) {
      if (v->is_integer()) c[hfkey] = v->as_int(key);
      else if (v->type == gguf::ValueType::f32 || v->type == gguf::ValueType::f64) c[hfkey] = v->f;
    }
  };
  put("hidden_size", "llama.embedding_length");
  put("intermediate_size", "llama.feed_forward_length");
  put("num_attention_heads", "llama.attention.head_count");
  put("num_key_value_heads", "llama.attention.head_count_kv");
  put("num_hidden_layers", "llama.block_count");
  put("max_position_embeddings", "llama.context_length");
  put("rms_norm_eps", "llama.attention.layer_norm_rms_epsilon");
  put("rope_theta", "llama.rope.freq_base");
  // HF's vocab_size is the embedding's rows (a tokenizer may hold fewer tokens, never more).
  if (const TensorEntry* emb = ck.find("token_embd.weight"); emb && !emb->shape.empty()) c["vocab_size"] = emb->shape[0];
  else if (const gguf::Value* t = ck.meta("tokenizer.ggml.tokens")) c["vocab_size"] = t->arr.size();
  else put("vocab_size", "llama.vocab_size");
  c["tie_word_embeddings"] = ck.find("output.weight") == nullptr;
  return c;
}

}  // namespace

ConvertReport convert_to_modelopt_dir(const Checkpoint& ck, const std::string& out_arg, const ConvertOptions& opt) {
  std::string out = out_arg;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out))) {
    throw Error(out, "", "output directory exists and is not empty", "a new or empty directory", "existing content");
  }
  const std::string& file = ck.info().path;
  const gguf::Value* a = ck.meta("general.architecture");
  const std::string arch = a && a->type == gguf::ValueType::string ? a->s : "";
  const bool permute = arch == "llama" || arch == "mistral";
  const int64_t n_head = meta_int(ck, arch + ".attention.head_count");
  const int64_t n_kv = meta_int(ck, arch + ".attention.head_count_kv") ? meta_int(ck, arch + ".attention.head_count_kv") : n_head;
  const st::Dtype keep = opt.keep_type == "f32" ? st::Dtype::F32 : opt.keep_type == "bf16" ? st::Dtype::BF16 : st::Dtype::F16;

  ConvertReport rep;
  const auto eligible = [&ck, &opt](const std::string& name) {
    const TensorEntry* e = ck.find(name);
    if (!e || e->storage == Storage::nvfp4 || e->shape.size() != 2) return false;
    bool q = default_quantizes(name, 2);
    if (matches_any(opt.quantize, name)) q = true;
    return q && !matches_any(opt.keep, name) && e->shape.back() % 16 == 0;
  };
  const WeightQuantizer wq(ck, opt, true, eligible);
  for (const auto& n : wq.notes()) rep.notes.push_back(n);
  std::vector<Owned> outt;
  std::map<std::string, Json> layer_algo;  // HF module -> its quantized_layers entry ({"quant_algo": ...})
  std::vector<std::string> excluded;
  // HF names in the family's own spelling (Mixtral: block_sparse_moe.experts.E.w1).
  const ArchInfo* family = find_arch(arch, ck.meta(arch + ".expert_count") != nullptr);
  const std::string_view spelling = family ? family->name : std::string_view();
  for (const TensorEntry& e : ck.tensors()) {
    const std::string hfn = hf::to_hf_name(e.name, spelling);
    const bool is_weight = hfn.size() > 7 && hfn.compare(hfn.size() - 7, 7, ".weight") == 0;
    const std::string module = is_weight ? hfn.substr(0, hfn.size() - 7) : hfn;
    int64_t heads = 0;
    if (permute && e.shape.size() == 2) {
      if (e.name.find(".attn_q.") != std::string::npos) heads = n_head;
      if (e.name.find(".attn_k.") != std::string::npos) heads = n_kv;
      if ((e.name.find(".attn_q.") != std::string::npos || e.name.find(".attn_k.") != std::string::npos) &&
          (heads <= 0 || e.shape[0] % (2 * heads) != 0)) {
        throw Error(file, e.name, "cannot undo llama.cpp's q/k row permutation", "head counts in the metadata dividing n_out",
                    std::to_string(heads) + " heads");
      }
    }
    const int64_t n_out = e.shape.empty() ? 1 : e.shape.front();
    const int64_t n_in = e.shape.empty() ? 1 : e.shape.back();
    bool q = e.storage != Storage::nvfp4 && default_quantizes(e.name, e.shape.size());
    if (matches_any(opt.quantize, e.name)) q = e.shape.size() == 2;
    if (matches_any(opt.keep, e.name)) q = false;
    if (q && n_in % 16 != 0) {
      rep.notes.push_back(e.name + ": kept, n_in = " + std::to_string(n_in) + " is not a multiple of 16");
      q = false;
    }
    // An FP8 layer kept: its tensors byte for byte (the input's row order is HF's), declared as
    // ModelOpt names its form.
    Checkpoint::StoredFp8 f8;
    if (e.storage == Storage::fp8 && !matches_any(opt.quantize, e.name) && ck.stored_fp8(e.name, f8)) {
      const auto copy = [&](const std::string& n, const Checkpoint::StoredTensor& t) {
        outt.push_back({n, *st::dtype_from_name(t.dtype), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
      };
      copy(module + ".weight", f8.weight);
      copy(module + ".weight_scale", f8.scale);  // (DeepSeek's weight_scale_inv: the same multiplier)
      if (f8.input_scale.data) copy(module + ".input_scale", f8.input_scale);
      int64_t scale_values = 1;
      for (int64_t d : f8.scale.shape) scale_values *= d;
      layer_algo[module] = f8.form == DType::mxfp8      ? Json{{"quant_algo", "MXFP8"}, {"group_size", kMxBlock}}
                           : f8.form == DType::fp8_b128 ? Json{{"quant_algo", "fp8_pb_wo"}}
                                                        : Json{{"quant_algo", scale_values == 1 ? "FP8" : "FP8_PER_CHANNEL_PER_TOKEN"}};
      ++rep.fp8_kept;
      continue;
    }
    if (e.storage == Storage::nvfp4 || q) {
      RowMatrix m;
      if (e.storage == Storage::nvfp4) {
        m = ck.nvfp4(e.name);
        ++rep.repacked;
      } else {
        const std::vector<float> w = ck.to_f32(e.name);
        m = wq.quantize(e.name, w, n_out, n_in);
        ++rep.quantized;
      }
      outt.push_back({module + ".weight", st::Dtype::U8, {n_out, n_in / 2}, unpermute(m.codes.data(), n_out, n_in / 2, heads)});
      outt.push_back({module + ".weight_scale", st::Dtype::F8_E4M3, {n_out, n_in / 16}, unpermute(m.scales.data(), n_out, n_in / 16, heads)});
      outt.push_back({module + ".weight_scale_2", st::Dtype::F32, {}, scalar(m.scale2)});
      std::string algo = "W4A16_NVFP4";
      if (e.input_scale > 0) {
        outt.push_back({module + ".input_scale", st::Dtype::F32, {}, scalar(e.input_scale)});
        algo = "NVFP4";
      }
      const std::vector<float> pqs = e.storage == Storage::nvfp4 ? ck.pre_quant_scale(e.name) : wq.pre_quant_scale(e.name);
      if (!pqs.empty()) {
        outt.push_back({module + ".pre_quant_scale", st::Dtype::F32, {n_in}, bytes_of(pqs)});
        algo = "NVFP4_AWQ";
      }
      if (e.storage != Storage::nvfp4 && wq.awq_scaled(e.name)) algo = "NVFP4_AWQ";  // folded into its norm or not, as ModelOpt's export
      layer_algo[module] = {{"quant_algo", algo}};
      continue;
    }
    if (is_weight && e.shape.size() == 2 && e.name.rfind("token_embd", 0) != 0 && e.name.find("norm") == std::string::npos) {
      excluded.push_back(module);
    }
    // Kept: float storage as it is (rows back in HF order), anything else as keep_type / F32.
    st::Dtype dt = e.shape.size() >= 2 ? keep : st::Dtype::F32;
    if (e.storage == Storage::f32) dt = st::Dtype::F32;
    if (e.storage == Storage::f16) dt = st::Dtype::F16;
    if (e.storage == Storage::bf16) dt = st::Dtype::BF16;
    if (e.storage != Storage::f32 && e.storage != Storage::f16 && e.storage != Storage::bf16) ++rep.retyped;
    else ++rep.kept;
    const std::vector<float> v = wq.fold_norm(e.name, ck.to_f32(e.name));  // awq: 1 / s folded into the norm
    std::vector<uint8_t> b;
    if (dt == st::Dtype::F32) {
      b = bytes_of(v);
    } else {
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = dt == st::Dtype::F16 ? float_to_half(v[i]) : float_to_bf16(v[i]);
      b = bytes_of(h);
    }
    const int64_t row_bytes = e.shape.size() == 2 ? n_in * (dt == st::Dtype::F32 ? 4 : 2) : 0;
    if (heads) b = unpermute(b.data(), n_out, row_bytes, heads);
    outt.push_back({hfn, dt, e.shape, std::move(b)});
  }

  // A release's parts set aside (its MTP layers, its vision tower) kept as they are: byte for byte
  // under their own names, excluded from the quantization as NVIDIA's releases keep them (one glob
  // per part: "mtp*", "model.visual*").
  {
    std::set<std::string> parts;
    for (const Checkpoint::NamedTensor& a : ck.set_aside_tensors()) {
      outt.push_back({a.name, *st::dtype_from_name(a.t.dtype), a.t.shape, std::vector<uint8_t>(a.t.data, a.t.data + a.t.nbytes)});
      const size_t dot = a.name.find('.');
      const size_t end = a.name.compare(0, dot, "model") == 0 ? a.name.find('.', dot + 1) : dot;
      parts.insert(a.name.substr(0, end) + "*");
    }
    for (const std::string& p : parts) excluded.push_back(p);
    for (const std::string& line : ck.info().set_aside) rep.notes.push_back("kept as stored, not quantized: " + line);
  }

  // The quantization description, as ModelOpt writes it.
  std::string algo;
  for (const auto& [m, al] : layer_algo) {
    const std::string a = al["quant_algo"].get<std::string>();
    algo = algo.empty() || algo == a ? a : "MIXED_PRECISION";
  }
  if (algo.empty()) throw Error(file, "", "nothing to write as NVFP4", "at least one NVFP4, FP8 or quantizable layer", "none");
  Json quant = {{"quant_algo", algo}, {"kv_cache_quant_algo", nullptr}};
  if (algo == "MXFP8") quant["group_size"] = kMxBlock;
  else if (algo != "FP8" && algo != "FP8_PER_CHANNEL_PER_TOKEN" && algo != "fp8_pb_wo") quant["group_size"] = 16;
  quant["exclude_modules"] = excluded;
  if (algo == "MIXED_PRECISION") {
    Json layers = Json::object();
    for (const auto& [m, al] : layer_algo) layers[m] = al;
    quant["quantized_layers"] = layers;
  }
  if (algo == "NVFP4_AWQ") {  // export_hf_checkpoint's two extra fields for AWQ
    quant["has_zero_point"] = false;
    quant["pre_quant_scale"] = true;
  }
  Json config;
  if (ck.info().container == "safetensors") {
    fs::path dir = fs::is_directory(file) ? fs::path(file) : fs::path(file).parent_path();
    if (fs::exists(dir / "config.json")) {
      try {  // as Python writes it (bare Infinity: io/json_config.h)
        config = parse_config_json(read_regular_file((dir / "config.json").string()), (dir / "config.json").string());
      } catch (const Json::exception&) {
        config = Json();
      }
    }
    if (!config.is_object()) config = config_from_meta(ck);
  } else {
    config = config_from_meta(ck);
  }
  Json qc = quant;
  qc["quant_method"] = "modelopt";
  config["quantization_config"] = qc;
  const Json hfq = {{"producer", {{"name", "modelopt"}, {"version", "nvfp4 " NVFP4_VERSION}}}, {"quantization", quant}};

  // Build under a temporary name, then rename into place.
  const fs::path target(out);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (parent / (".tmp-" + target.filename().string() + "-XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw Error(out, "", "cannot create the output's temporary directory", "a writable parent", std::strerror(errno));
  const std::string tmp = buf.data();
  TempRegistration reg(tmp, true);  // locked while written, removed on SIGINT/SIGTERM/SIGHUP
  try {
    fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
    std::vector<st::WriteTensor> w;
    for (const auto& t : outt) w.push_back({t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});
    st::write(tmp + "/model.safetensors", w, {{"format", "pt"}});
    for (const auto& [name, j] : {std::pair<const char*, const Json*>{"config.json", &config}, {"hf_quant_config.json", &hfq}}) {
      std::ofstream f(tmp + "/" + name);
      f << dump_config_json(*j, 2) << "\n";  // a Nemotron's time_step_limit Infinity as Python writes it
      if (!f) throw Error(out, "", "cannot write the output", name, "a write error");
    }
    // The tokenizer, so that the directory runs as it is (a vocabulary it cannot write: refused).
    if (ck.meta("tokenizer.ggml.model") || ck.info().container == "safetensors") write_hf_tokenizer(ck, tmp);
    if (opt.verify) {
      const auto back = Checkpoint::open(tmp);  // every loading rule
      const auto f = st::File::open(tmp + "/model.safetensors");
      for (const auto& t : outt) {
        const auto& r = f.tensor(t.name);
        if (static_cast<size_t>(r.nbytes()) != t.bytes.size() || (t.bytes.size() && std::memcmp(r.data, t.bytes.data(), t.bytes.size()) != 0)) {
          throw Error(out, t.name, "verify: bytes differ", "what was written", "other bytes");
        }
      }
      for (const TensorEntry& e : ck.tensors()) {
        if (e.storage != Storage::nvfp4) continue;
        const RowMatrix x = ck.nvfp4(e.name), y = back->nvfp4(e.name);
        if (x.codes != y.codes || x.scales != y.scales || std::memcmp(&x.scale2, &y.scale2, 4) != 0) {
          throw Error(out, e.name, "verify: NVFP4 weight differs from the input", "the input's codes and scales", "others");
        }
      }
      // FP8 layers kept: the same tensors read back (weights, scales and input scales, byte for byte).
      for (const TensorEntry& e : ck.tensors()) {
        Checkpoint::StoredFp8 x, y;
        if (e.storage != Storage::fp8 || matches_any(opt.quantize, e.name) || !ck.stored_fp8(e.name, x)) continue;
        const auto same = [](const Checkpoint::StoredTensor& p, const Checkpoint::StoredTensor& q) {
          return p.dtype == q.dtype && p.shape == q.shape && p.nbytes == q.nbytes && (p.nbytes == 0 || std::memcmp(p.data, q.data, p.nbytes) == 0);
        };
        if (!back->stored_fp8(e.name, y) || x.form != y.form || !same(x.weight, y.weight) || !same(x.scale, y.scale) ||
            !same(x.input_scale, y.input_scale))
          throw Error(out, e.name, "verify: FP8 layer differs from the input", "its weight, scale and input scale as stored", "others");
      }
      rep.verified = true;
    }
    if (fs::exists(out)) fs::remove(out);  // an empty directory (checked above)
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  return rep;
}

}  // namespace nvfp4
