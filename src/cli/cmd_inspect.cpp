// nvfp4 inspect PATH [--json]: what the checkpoint is (container, producer, algorithm, modes it can
// serve) and its tensors. Exit 0 when valid, 1 when refused (the error on stderr), 2 for usage.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/registry.h"
#include "nvfp4/checkpoint.h"

namespace nvfp4::cli {
namespace {

std::vector<std::string> modes(const Checkpoint& ck) {
  bool nv = false;
  for (const auto& t : ck.tensors()) nv = nv || t.storage == Storage::nvfp4;
  if (!nv) return {};
  std::vector<std::string> m = {"a16q8", "a16", "f32", "f64"};  // a8 (ggml parity) is not built yet
  if (ck.info().has_input_scales) m.insert(m.begin() + 2, "w4a4");
  return m;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t k = 0; k < s.size(); ++k) o += (k ? ", " : "") + std::to_string(s[k]);
  return o + "]";
}

Registrar reg("inspect", "Show what a checkpoint is (producer, algorithm, modes it can serve) and its tensors",
              [](CLI::App& sub) {
                auto path = std::make_shared<std::string>();
                auto json = std::make_shared<bool>(false);
                sub.add_option("PATH", *path, "checkpoint (.gguf, .safetensors or HF directory)")->required()->check(CLI::ExistingPath);
                sub.add_flag("--json", *json, "print JSON");
                return [path, json]() {
                  const auto ck = Checkpoint::open(*path);
                  const auto& in = ck->info();
                  const auto m = modes(*ck);
                  if (*json) {
                    nlohmann::json j;
                    j["path"] = in.path;
                    j["container"] = in.container;
                    j["producer"] = in.producer;
                    j["algorithm"] = in.algorithm;
                    j["modes"] = m;
                    j["tensors"] = nlohmann::json::array();
                    for (const auto& t : ck->tensors()) {
                      nlohmann::json e = {{"name", t.name}, {"shape", t.shape}, {"storage", t.storage_name},
                                          {"bits_per_weight", t.bits_per_weight}};
                      if (t.storage == Storage::nvfp4) {
                        e["scale2"] = t.scale2;
                        if (t.input_scale > 0) e["input_scale"] = t.input_scale;
                      }
                      j["tensors"].push_back(e);
                    }
                    std::cout << j.dump(1) << "\n";
                    return 0;
                  }
                  std::cout << "path:      " << in.path << "\ncontainer: " << in.container << "\nproducer:  "
                            << in.producer << "\nalgorithm: " << in.algorithm << "\nmodes:     ";
                  if (m.empty())
                    std::cout << "f32 (float weights; NVFP4 modes after `nvfp4 convert`, or with `run --quantize`)";
                  for (size_t k = 0; k < m.size(); ++k) std::cout << (k ? ", " : "") << m[k];
                  std::cout << "\ntensors:   " << ck->tensors().size() << "\n\n";
                  std::printf("%-40s %-16s %-8s %6s  %s\n", "name", "shape", "storage", "bits", "scale2 / input_scale");
                  double bits = 0, values = 0;
                  for (const auto& t : ck->tensors()) {
                    double n = 1;
                    for (int64_t d : t.shape) n *= static_cast<double>(d);
                    bits += n * t.bits_per_weight;
                    values += n;
                    std::string sc;
                    if (t.storage == Storage::nvfp4) {
                      char b[64];
                      std::snprintf(b, sizeof b, "%.6g", static_cast<double>(t.scale2));
                      sc = b;
                      if (t.input_scale > 0) {
                        std::snprintf(b, sizeof b, " / %.6g", static_cast<double>(t.input_scale));
                        sc += b;
                      }
                    }
                    std::printf("%-40s %-16s %-8s %6.3g  %s\n", t.name.c_str(), shape_str(t.shape).c_str(),
                                t.storage_name.c_str(), t.bits_per_weight, sc.c_str());
                  }
                  std::printf("\n%.0f values, %.3f bits per value on average\n", values, values > 0 ? bits / values : 0.0);
                  return 0;
                };
              });

}  // namespace
}  // namespace nvfp4::cli
