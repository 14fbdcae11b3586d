#include "io/quant_config.h"

#include <fnmatch.h>

#include <fstream>

#include "nvfp4/dense.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

constexpr const char* kModeloptTaken = "NVFP4, W4A16_NVFP4, NVFP4_AWQ, FP8, FP8_PER_CHANNEL_PER_TOKEN, MXFP8 or FP8_PB_WO";

// `field`: where the algorithm is named ("quantization.quant_algo", or
// "quantization.quantized_layers.<layer>.quant_algo"); `layer`: that entry (empty for the
// checkpoint-wide quant_algo).
LayerQuant modelopt_algo(const std::string& a, const std::string& file, const std::string& field,
                         const std::string& layer = "") {
  if (a == "NVFP4") return LayerQuant::nvfp4_w4a4;
  if (a == "W4A16_NVFP4") return LayerQuant::nvfp4_w4a16;
  if (a == "NVFP4_AWQ") return LayerQuant::nvfp4_awq;
  if (a == "FP8" || a == "FP8_PER_CHANNEL_PER_TOKEN") return LayerQuant::fp8;  // per-tensor / per-channel weight scale
  if (a == "MXFP8") return LayerQuant::mxfp8;                                    // E8M0 per 32 (group_size 32)
  // 128 x 128 block scales: export_hf_checkpoint writes its format name in lower case ("fp8_pb_wo").
  if (a == "FP8_PB_WO" || a == "fp8_pb_wo" || a == "FP8_PB_REAL" || a == "fp8_pb_real" || a == "FP8_BLOCK" || a == "FP8_PB")
    return LayerQuant::fp8_block;
  // Forms ModelOpt writes that this project does not read, named as such.
  std::string detail;
  if (a == "MXFP4" || a == "W4A8_MXFP4_FP8" || a == "W4A8_NVFP4_FP8" || a == "W4A8_AWQ" || a == "W4A16_AWQ" || a == "INT4_AWQ" ||
           a == "INT8_SQ" || a == "INT8_WO" || a == "NVFP4_SVDQUANT")
    detail = " (a ModelOpt format this project does not read)";
  throw Error(file, field, layer.empty() ? "unsupported ModelOpt quant_algo" : "unsupported ModelOpt quant_algo for layer " + layer,
              std::string(kModeloptTaken) + (layer.empty() ? " or MIXED_PRECISION" : ""), (a.empty() ? "none named" : a) + detail);
}

// Typed fields: absent or null gives the default; any other type is refused naming the file and
// the field's path in it ("quantization.group_size").
std::string str_field(const nlohmann::json& j, const char* key, const std::string& def, const std::string& file,
                      const std::string& at) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_string()) throw Error(file, at + key, "field of the wrong type", "a string", it->dump());
  return it->get<std::string>();
}

int64_t int_field(const nlohmann::json& j, const char* key, int64_t def, const std::string& file, const std::string& at) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  if (!it->is_number_integer()) throw Error(file, at + key, "field of the wrong type", "an integer", it->dump());
  return it->get<int64_t>();
}

// A "re:" pattern compiles as the matchers read it (Python's re syntax through PyRegex,
// src/io/quant_match.h); refused naming file and field.
void check_pattern(const std::string& pat, const std::string& file, const std::string& field) {
  if (pat.rfind("re:", 0) != 0) return;
  try {
    PyRegex r(pat.substr(3), file);
  } catch (const Error&) {
    throw Error(file, field, "bad regular expression", "a regular expression (Python re syntax)", pat);
  }
}

bool name_matches(const std::string& pat, const std::string& module) {
  if (pat.rfind("re:", 0) == 0) {
    // Python's re.match (anchored at the start), as the producers match; checked at parse.
    return PyRegex(pat.substr(3), "").match(module);
  }
  if (pat == module) return true;
  return ::fnmatch(pat.c_str(), module.c_str(), 0) == 0;
}

// A module name as ModelOpt meant it. ModelOpt 0.47's export under transformers 5 puts an
// unresolved-name marker into some names ("backbone.layers.0.mixer.in_proj.\0backbone.pt_name_sentinel",
// "backbone.layers.0.\0backbone.pt_name_sentinel*" for the pattern backbone.layers.0.*; NVIDIA
// Model-Optimizer#2508): the marker, from the NUL to the end of "sentinel", is dropped, what follows
// it kept, and a dot left at the end removed. Without this nothing matches such an entry, and a
// MIXED_PRECISION layer's own entry goes unseen.
std::string modelopt_name(const std::string& n) {
  const size_t z = n.find('\0');
  if (z == std::string::npos) return n;
  const size_t s = n.find("sentinel", z);
  std::string out = n.substr(0, z) + (s == std::string::npos ? "" : n.substr(s + 8));
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

std::vector<std::string> strings(const nlohmann::json& j, const char* key, const std::string& file,
                                 const std::string& at) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) throw Error(file, at + key, "field of the wrong type", "a list of strings", j[key].dump());
  for (const auto& e : j[key]) {
    if (!e.is_string()) throw Error(file, at + key, "list holds a non-string", "strings", e.dump());
    check_pattern(e.get<std::string>(), file, at + key);
    out.push_back(e.get<std::string>());
  }
  return out;
}

// ModelOpt's group_size: 16 for NVFP4 (the default when absent), 32 for MXFP8; FP8 has none.
void check_group_size(const nlohmann::json& j, LayerQuant lq, const std::string& file, const std::string& at,
                      const std::string& which) {
  if (lq == LayerQuant::fp8 || lq == LayerQuant::fp8_block) return;
  const bool mx = lq == LayerQuant::mxfp8;
  const int64_t gs = int_field(j, "group_size", mx ? kMxBlock : 16, file, at);
  if (gs != (mx ? kMxBlock : 16))
    throw Error(file, at + "group_size", std::string(mx ? "ModelOpt MXFP8 group size" : "ModelOpt NVFP4 group size") + which,
                mx ? "32" : "16", std::to_string(gs));
}

LayerQuant ct_group(const nlohmann::json& g, const std::string& file, const std::string& gname) {
  const std::string at = "quantization_config.config_groups." + gname + ".";
  if (!g.is_object()) throw Error(file, at.substr(0, at.size() - 1), "field of the wrong type", "an object", g.dump());
  const auto& w = g.contains("weights") ? g["weights"] : nlohmann::json();
  if (!w.is_object()) throw Error(file, at + "weights", "compressed-tensors group without weights", "an object", "absent");
  const int64_t bits = int_field(w, "num_bits", 0, file, at + "weights.");
  const std::string type = str_field(w, "type", "", file, at + "weights.");
  if (bits == 4 && type == "float") {
    const int64_t gs = int_field(w, "group_size", 0, file, at + "weights.");
    if (gs != 16) throw Error(file, at + "weights.group_size", "compressed-tensors FP4 group size", "16", std::to_string(gs));
    const auto ia = g.contains("input_activations") ? g["input_activations"] : nlohmann::json();
    if (!ia.is_null() && !ia.is_object())
      throw Error(file, at + "input_activations", "field of the wrong type", "an object or null", ia.dump());
    if (ia.is_object() && int_field(ia, "num_bits", 0, file, at + "input_activations.") == 4 &&
        str_field(ia, "type", "", file, at + "input_activations.") == "float")
      return LayerQuant::nvfp4_w4a4;
    if (ia.is_object()) {
      throw Error(file, at + "input_activations", "compressed-tensors group with unsupported input activations",
                  "FP4 (W4A4) or none (W4A16)", ia.dump());
    }
    return LayerQuant::nvfp4_w4a16;
  }
  if (bits == 8 && type == "float") {
    const std::string strat = str_field(w, "strategy", "tensor", file, at + "weights.");
    if (strat == "tensor" || strat == "channel") return LayerQuant::fp8;
    if (strat == "block") {
      const auto bs = w.contains("block_structure") ? w["block_structure"] : nlohmann::json();
      if (bs != nlohmann::json::array({kFp8Block, kFp8Block}))
        throw Error(file, at + "weights.block_structure", "compressed-tensors FP8 block size (group " + gname + ")", "[128, 128]", bs.dump());
      return LayerQuant::fp8_block;
    }
    if (strat == "group") {
      const int64_t gs = int_field(w, "group_size", 0, file, at + "weights.");
      const std::string sd = str_field(w, "scale_dtype", "", file, at + "weights.");
      if (gs == kMxBlock && sd == "torch.uint8") return LayerQuant::mxfp8;  // MXFP8: E8M0 exponents stored as uint8
      throw Error(file, at + "weights", "compressed-tensors FP8 group strategy (group " + gname + ")",
                  "MXFP8: group_size 32 with scale_dtype torch.uint8", "group_size " + std::to_string(gs) + ", scale_dtype " + (sd.empty() ? "none" : sd));
    }
    throw Error(file, at + "weights.strategy", "unsupported compressed-tensors FP8 weight strategy (group " + gname + ")",
                "tensor, channel, block [128, 128] or group 32 (MXFP8)", strat);
  }
  throw Error(file, "", "unsupported compressed-tensors weight format", "4-bit float (NVFP4) or 8-bit float (FP8)",
              std::to_string(bits) + "-bit " + type + " in group " + gname);
}

}  // namespace

const char* layer_quant_name(LayerQuant q) {
  switch (q) {
    case LayerQuant::none: return "none";
    case LayerQuant::nvfp4_w4a4: return "NVFP4";
    case LayerQuant::nvfp4_w4a16: return "W4A16_NVFP4";
    case LayerQuant::nvfp4_awq: return "NVFP4_AWQ";
    case LayerQuant::fp8: return "FP8";
    case LayerQuant::mxfp8: return "MXFP8";
    case LayerQuant::fp8_block: return "FP8_BLOCK";
  }
  return "?";
}

QuantConfig QuantConfig::parse(const nlohmann::json* config, const nlohmann::json* hfq, const std::string& dir) {
  QuantConfig c;
  const nlohmann::json* q = nullptr;
  std::string method;
  if (hfq) {
    c.source = dir + "/hf_quant_config.json";
    if (!hfq->contains("quantization") || !(*hfq)["quantization"].is_object()) {
      throw Error(c.source, "", "hf_quant_config.json without a quantization object", "\"quantization\": {...}", "absent");
    }
    q = &(*hfq)["quantization"];
    method = "modelopt";
  } else if (config && config->contains("quantization_config")) {
    c.source = dir + "/config.json";
    q = &(*config)["quantization_config"];
    if (!q->is_object()) throw Error(c.source, "", "quantization_config is not an object", "an object", q->type_name());
    method = str_field(*q, "quant_method", "", c.source, "quantization_config.");
  } else {
    return c;
  }
  const std::string at = hfq ? "quantization." : "quantization_config.";
  if (method == "modelopt") {
    c.producer = "modelopt";
    c.algorithm = str_field(*q, "quant_algo", "", c.source, at);
    c.exclude = strings(*q, "exclude_modules", c.source, at);
    for (const auto& s : strings(*q, "ignore", c.source, at)) c.exclude.push_back(s);
    for (auto& s : c.exclude) s = modelopt_name(s);
    if (c.algorithm == "MIXED_PRECISION") {
      c.mixed = true;
      if (!q->contains("quantized_layers") || !(*q)["quantized_layers"].is_object()) {
        throw Error(c.source, "", "MIXED_PRECISION without quantized_layers", "\"quantized_layers\": {...}", "absent");
      }
      for (auto it = (*q)["quantized_layers"].begin(); it != (*q)["quantized_layers"].end(); ++it) {
        const std::string lat = at + "quantized_layers." + it.key();
        if (!it.value().is_object()) throw Error(c.source, lat, "field of the wrong type", "an object", it.value().dump());
        const std::string a = str_field(it.value(), "quant_algo", "", c.source, lat + ".");
        const LayerQuant lq = modelopt_algo(a, c.source, lat + ".quant_algo", it.key());
        // "csf": the layer's block scales are stored CSF-compressed (io/csf_scales.h), decoded at load.
        if (it.value().contains("weight_scale_encoding") && !it.value()["weight_scale_encoding"].is_null() &&
            it.value()["weight_scale_encoding"] != "csf") {
          throw Error(c.source, lat + ".weight_scale_encoding", "unknown block scale encoding (layer " + it.key() + ")",
                      "\"csf\" or none", it.value()["weight_scale_encoding"].dump());
        }
        check_group_size(it.value(), lq, c.source, lat + ".", " (layer " + it.key() + ")");
        const std::string name = modelopt_name(it.key());
        c.per_layer.emplace_back(name, lq);
        c.per_layer_names.push_back(name);
      }
    } else {
      c.global = modelopt_algo(c.algorithm, c.source, at + "quant_algo");
      check_group_size(*q, c.global, c.source, at, "");
    }
    return c;
  }
  if (method == "compressed-tensors") {
    c.producer = "compressed-tensors";
    const std::string fmt = str_field(*q, "format", "", c.source, at);
    std::vector<std::pair<std::string, int>> ign;
    for (const auto& t : strings(*q, "ignore", c.source, at)) ign.emplace_back(t, 0);
    c.ct_ignore = ct_targets(ign, c.source);
    if (!q->contains("config_groups") || !(*q)["config_groups"].is_object()) {
      throw Error(c.source, "", "compressed-tensors config without config_groups", "\"config_groups\": {...}", "absent");
    }
    // The groups in the file's order (a target named by two groups takes the later one's scheme).
    std::vector<std::string> order;
    try {
      std::ifstream f(c.source);
      const auto oj = nlohmann::ordered_json::parse(f);
      for (auto it = oj["quantization_config"]["config_groups"].begin(); it != oj["quantization_config"]["config_groups"].end(); ++it)
        order.push_back(it.key());
    } catch (const std::exception&) {
      order.clear();
    }
    if (order.size() != (*q)["config_groups"].size()) {
      order.clear();
      for (auto it = (*q)["config_groups"].begin(); it != (*q)["config_groups"].end(); ++it) order.push_back(it.key());
    }
    std::vector<std::pair<std::string, int>> targets;
    for (const auto& gname : order) {
      const auto& g = (*q)["config_groups"][gname];
      const std::string gat = at + "config_groups." + gname + ".";
      const LayerQuant lq = ct_group(g, c.source, gname);
      const std::string gfmt = str_field(g, "format", fmt, c.source, gat);
      if ((lq == LayerQuant::nvfp4_w4a4 || lq == LayerQuant::nvfp4_w4a16) && gfmt != "nvfp4-pack-quantized") {
        throw Error(c.source, "", "unsupported compressed-tensors format for FP4 weights", "nvfp4-pack-quantized", gfmt);
      }
      for (const auto& t : strings(g, "targets", c.source, gat)) targets.emplace_back(t, static_cast<int>(c.groups.size()));
      c.groups.push_back({gname, lq});
    }
    c.ct_order = ct_targets(targets, c.source);
    c.algorithm = fmt.empty() ? "compressed-tensors" : fmt;
    return c;
  }
  if (method == "fp8") {
    // transformers' fine-grained FP8, as DeepSeek, GLM and Kimi ship it: E4M3 weights with F32
    // weight_scale_inv per 128 x 128 block (a multiplier despite its name), dynamic activations.
    c.producer = "fp8";
    const auto bs = q->contains("weight_block_size") ? (*q)["weight_block_size"] : nlohmann::json();
    if (bs != nlohmann::json::array({kFp8Block, kFp8Block}))
      throw Error(c.source, at + "weight_block_size", "FP8 block size", "[128, 128]", bs.is_null() ? "absent" : bs.dump());
    const std::string fmt = str_field(*q, "fmt", "e4m3", c.source, at);
    if (fmt != "e4m3") throw Error(c.source, at + "fmt", "FP8 value format", "e4m3", fmt);
    c.global = LayerQuant::fp8_block;
    c.algorithm = "FP8_BLOCK";
    c.exclude = strings(*q, "modules_to_not_convert", c.source, at);
    return c;
  }
  throw Error(c.source, "", "unsupported quantization method", "modelopt, compressed-tensors or fp8", method.empty() ? "none named" : method);
}

LayerQuant QuantConfig::layer(const std::string& module) const {
  if (producer == "fp8") {
    // transformers skips a module whose name contains an entry of modules_to_not_convert.
    for (const auto& p : exclude) if (module.find(p) != std::string::npos) return LayerQuant::none;
    return global;
  }
  if (producer == "modelopt") {
    for (const auto& p : exclude) if (name_matches(p, module)) return LayerQuant::none;
    if (!mixed) return global;
    const int i = modelopt_layer_entry(per_layer_names, module);
    return i < 0 ? LayerQuant::none : per_layer[static_cast<size_t>(i)].second;
  }
  if (ct_ignored(ct_ignore, module)) return LayerQuant::none;
  const CtTarget* t = ct_first_match(ct_order, module);
  return t ? groups[static_cast<size_t>(t->payload)].q : LayerQuant::none;
}

bool QuantConfig::declares_nvfp4() const {
  if (global == LayerQuant::nvfp4_w4a4 || global == LayerQuant::nvfp4_w4a16 || global == LayerQuant::nvfp4_awq) return true;
  for (const auto& [n, q] : per_layer) if (q != LayerQuant::none && !layer_quant_fp8(q)) return true;
  for (const auto& g : groups) if (g.q != LayerQuant::none && !layer_quant_fp8(g.q)) return true;
  return false;
}

}  // namespace nvfp4
