#include "io/quant_config.h"

#include <fnmatch.h>
#include <regex.h>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

LayerQuant modelopt_algo(const std::string& a, const std::string& file, const std::string& field) {
  if (a == "NVFP4") return LayerQuant::nvfp4_w4a4;
  if (a == "W4A16_NVFP4") return LayerQuant::nvfp4_w4a16;
  if (a == "NVFP4_AWQ") return LayerQuant::nvfp4_awq;
  if (a == "FP8") return LayerQuant::fp8;
  throw Error(file, field, "unsupported ModelOpt quant_algo", "NVFP4, W4A16_NVFP4, NVFP4_AWQ, FP8 or MIXED_PRECISION",
              a.empty() ? "none" : a);
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

// A "re:" pattern compiles (POSIX ERE, as name_matches uses it); refused naming file and field.
void check_pattern(const std::string& pat, const std::string& file, const std::string& field) {
  if (pat.rfind("re:", 0) != 0) return;
  regex_t re;
  const int rc = ::regcomp(&re, ("^(" + pat.substr(3) + ")").c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char msg[128];
    ::regerror(rc, &re, msg, sizeof msg);
    throw Error(file, field, "bad regular expression (" + std::string(msg) + ")", "a POSIX extended regular expression",
                pat);
  }
  ::regfree(&re);
}

bool name_matches(const std::string& pat, const std::string& module) {
  if (pat.rfind("re:", 0) == 0) {
    // compressed-tensors matches with Python's re.match (anchored at the start): POSIX ERE here.
    regex_t re;
    if (::regcomp(&re, ("^(" + pat.substr(3) + ")").c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
      throw Error("", "", "bad regular expression in the quantization config", "a valid regex", pat);  // checked at parse
    }
    const bool m = ::regexec(&re, module.c_str(), 0, nullptr, 0) == 0;
    ::regfree(&re);
    return m;
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
  if (bits == 8 && type == "float") return LayerQuant::fp8;
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
        c.per_layer.emplace_back(it.key(), modelopt_algo(a, c.source, lat + ".quant_algo"));
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
    c.exclude = strings(*q, "ignore", c.source, at);
    if (!q->contains("config_groups") || !(*q)["config_groups"].is_object()) {
      throw Error(c.source, "", "compressed-tensors config without config_groups", "\"config_groups\": {...}", "absent");
    }
    for (auto it = (*q)["config_groups"].begin(); it != (*q)["config_groups"].end(); ++it) {
      const LayerQuant lq = ct_group(it.value(), c.source, it.key());
      const std::string gfmt = str_field(it.value(), "format", fmt, c.source, at + "config_groups." + it.key() + ".");
      if ((lq == LayerQuant::nvfp4_w4a4 || lq == LayerQuant::nvfp4_w4a16) && gfmt != "nvfp4-pack-quantized") {
        throw Error(c.source, "", "unsupported compressed-tensors format for FP4 weights", "nvfp4-pack-quantized", gfmt);
      }
      c.groups.push_back({strings(it.value(), "targets", c.source, at + "config_groups." + it.key() + "."), lq});
    }
    c.algorithm = fmt.empty() ? "compressed-tensors" : fmt;
    return c;
  }
  throw Error(c.source, "", "unsupported quantization method", "modelopt or compressed-tensors", method.empty() ? "none named" : method);
}

LayerQuant QuantConfig::layer(const std::string& module) const {
  for (const auto& p : exclude) if (name_matches(p, module)) return LayerQuant::none;
  if (producer == "modelopt") {
    if (!mixed) return global;
    for (const auto& [name, q] : per_layer) if (name == module) return q;
    return LayerQuant::none;
  }
  for (const auto& g : groups) {
    for (const auto& t : g.targets) {
      if (t == "Linear" || name_matches(t, module)) return g.q;
    }
  }
  return LayerQuant::none;
}

bool QuantConfig::declares_nvfp4() const {
  if (global == LayerQuant::nvfp4_w4a4 || global == LayerQuant::nvfp4_w4a16 || global == LayerQuant::nvfp4_awq) return true;
  for (const auto& [n, q] : per_layer) if (q != LayerQuant::none && q != LayerQuant::fp8) return true;
  for (const auto& g : groups) if (g.q != LayerQuant::none && g.q != LayerQuant::fp8) return true;
  return false;
}

}  // namespace nvfp4
