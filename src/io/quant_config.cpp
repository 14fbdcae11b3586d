#include "io/quant_config.h"

#include <fnmatch.h>

#include <fstream>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

constexpr const char* kModeloptTaken = "NVFP4, W4A16_NVFP4, NVFP4_AWQ, FP8 or FP8_PER_CHANNEL_PER_TOKEN";

// `field`: where the algorithm is named ("quantization.quant_algo", or
// "quantization.quantized_layers.<layer>.quant_algo"); `layer`: that entry (empty for the
// checkpoint-wide quant_algo).
LayerQuant modelopt_algo(const std::string& a, const std::string& file, const std::string& field,
                         const std::string& layer = "") {
  if (a == "NVFP4") return LayerQuant::nvfp4_w4a4;
  if (a == "W4A16_NVFP4") return LayerQuant::nvfp4_w4a16;
  if (a == "NVFP4_AWQ") return LayerQuant::nvfp4_awq;
  if (a == "FP8" || a == "FP8_PER_CHANNEL_PER_TOKEN") return LayerQuant::fp8;  // per-tensor / per-channel weight scale
  // Forms ModelOpt writes that this project does not read yet, named as such.
  std::string detail;
  if (a == "FP8_PB_WO" || a == "FP8_BLOCK" || a == "FP8_PB") detail = " (FP8 with 128x128 block scales: not read yet)";
  else if (a == "MXFP8") detail = " (MXFP8: E4M3 values, an E8M0 scale per 32: not read yet)";
  else if (a == "MXFP4" || a == "W4A8_MXFP4_FP8" || a == "W4A8_NVFP4_FP8" || a == "W4A8_AWQ" || a == "W4A16_AWQ" || a == "INT4_AWQ" ||
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
    const std::string strat = w.value("strategy", "tensor");
    if (strat == "tensor" || strat == "channel") return LayerQuant::fp8;
    if (strat == "block")
      throw Error(file, "", "compressed-tensors FP8 with block scales is not read yet (group " + gname + ")",
                  "FP8 with strategy tensor or channel", "strategy block " + (w.contains("block_structure") ? w["block_structure"].dump() : std::string()));
    if (strat == "group" && w.value("group_size", 0) == 32)
      throw Error(file, "", "compressed-tensors MXFP8 (an E8M0 scale per 32) is not read yet (group " + gname + ")",
                  "FP8 with strategy tensor or channel", "strategy group, group_size 32");
    throw Error(file, "", "unsupported compressed-tensors FP8 weight strategy (group " + gname + ")", "tensor or channel", strat);
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
        if (it.value().contains("weight_scale_encoding") && !it.value()["weight_scale_encoding"].is_null()) {
          throw Error(c.source, lat + ".weight_scale_encoding",
                      "block scales stored compressed (weight_scale_encoding) are not read yet (layer " + it.key() + ")",
                      "plain E4M3 weight_scale tensors", "weight_scale_encoding " + it.value()["weight_scale_encoding"].dump());
        }
        const int64_t gs = int_field(it.value(), "group_size", 16, c.source, lat + ".");
        if (lq != LayerQuant::fp8 && gs != 16)
          throw Error(c.source, lat + ".group_size", "ModelOpt NVFP4 group size (layer " + it.key() + ")", "16", std::to_string(gs));
        c.per_layer.emplace_back(it.key(), lq);
        c.per_layer_names.push_back(it.key());
      }
    } else {
      c.global = modelopt_algo(c.algorithm, c.source, at + "quant_algo");
      const int64_t gs = int_field(*q, "group_size", 16, c.source, at);
      if (gs != 16) throw Error(c.source, at + "group_size", "ModelOpt NVFP4 group size", "16", std::to_string(gs));
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
  throw Error(c.source, "", "unsupported quantization method", "modelopt or compressed-tensors", method.empty() ? "none named" : method);
}

LayerQuant QuantConfig::layer(const std::string& module) const {
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
  for (const auto& [n, q] : per_layer) if (q != LayerQuant::none && q != LayerQuant::fp8) return true;
  for (const auto& g : groups) if (g.q != LayerQuant::none && g.q != LayerQuant::fp8) return true;
  return false;
}

}  // namespace nvfp4
