// What a safetensors checkpoint's configuration declares, per module: ModelOpt
// (hf_quant_config.json, or config.json quantization_config with quant_method "modelopt") or
// compressed-tensors (quantization_config with format "nvfp4-pack-quantized" / config_groups).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/quant_match.h"

namespace nvfp4 {

// fp8: E4M3 with a per-tensor or per-output-channel scale; mxfp8: E4M3 with an E8M0 scale per 32
// inputs; fp8_block: E4M3 with a float scale per 128 x 128 block.
enum class LayerQuant { none, nvfp4_w4a4, nvfp4_w4a16, nvfp4_awq, fp8, mxfp8, fp8_block };
inline bool layer_quant_fp8(LayerQuant q) { return q == LayerQuant::fp8 || q == LayerQuant::mxfp8 || q == LayerQuant::fp8_block; }
const char* layer_quant_name(LayerQuant q);

struct QuantConfig {
  std::string producer = "float";  // "modelopt", "compressed-tensors", "fp8" (transformers' fine-grained FP8) or "float"
  std::string algorithm = "float";
  std::string source;              // the file it came from
  // Throws nvfp4::Error for a quantization method or algorithm we do not support (by name).
  static QuantConfig parse(const nlohmann::json* config, const nlohmann::json* hf_quant, const std::string& dir);
  // What the configuration says about module `module` (HF name without ".weight").
  LayerQuant layer(const std::string& module) const;
  bool declares_nvfp4() const;

 private:
  LayerQuant global = LayerQuant::none;
  std::vector<std::string> exclude;                          // fnmatch wildcards / "re:" regexes
  std::vector<std::pair<std::string, LayerQuant>> per_layer; // MIXED_PRECISION quantized_layers
  std::vector<std::string> per_layer_names;                  // their names, for modelopt_layer_entry
  bool mixed = false;
  struct Group {
    std::string name;
    LayerQuant q;
  };
  std::vector<Group> groups;         // compressed-tensors config_groups, in the file's order
  std::vector<CtTarget> ct_order;    // their targets in compressed-tensors' match order (payload: group)
  std::vector<CtTarget> ct_ignore;   // compressed-tensors `ignore`
};

}  // namespace nvfp4
