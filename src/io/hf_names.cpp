// HF <-> GGUF tensor names from the architecture table's name pairs (include/nvfp4/arch.h).
#include "io/hf_names.h"

#include <cctype>

#include "nvfp4/arch.h"

namespace nvfp4::hf {

namespace {

// Splits "<prefix><digits>.<rest>" into (digits, rest); false when `module` is not of that form.
bool split_layer(const std::string& module, const std::string& prefix, std::string& n, std::string& rest) {
  if (module.rfind(prefix, 0) != 0) return false;
  size_t k = prefix.size();
  while (k < module.size() && std::isdigit(static_cast<unsigned char>(module[k]))) ++k;
  if (k == prefix.size() || k >= module.size() || module[k] != '.') return false;
  n = module.substr(prefix.size(), k - prefix.size());
  rest = module.substr(k + 1);
  return true;
}

// Maps `name` (module + "." + suffix) from one side of the table to the other.
std::string map_name(const std::string& name, bool to_gguf) {
  const auto dot = name.find_last_of('.');
  if (dot == std::string::npos) return name;
  const std::string module = name.substr(0, dot), suffix = name.substr(dot);
  for (const ArchTensor& t : global_tensors()) {
    const std::string_view from = to_gguf ? t.hf : t.gguf, to = to_gguf ? t.gguf : t.hf;
    if (module == from) return std::string(to) + suffix;
  }
  std::string n, rest;
  if (!split_layer(module, to_gguf ? "model.layers." : "blk.", n, rest)) return name;
  for (const ArchTensor& t : layer_tensors()) {
    const std::string_view from = to_gguf ? t.hf : t.gguf, to = to_gguf ? t.gguf : t.hf;
    if (rest == from) return (to_gguf ? "blk." : "model.layers.") + n + "." + std::string(to) + suffix;
  }
  return name;
}

}  // namespace

std::string to_hf_name(const std::string& g) { return map_name(g, false); }
std::string to_gguf_name(const std::string& hf) { return map_name(hf, true); }

int64_t permuted_source_row(int64_t r, int64_t n_out, int64_t heads) {
  const int64_t hd = n_out / heads, half = hd / 2;
  const int64_t h = r / hd, k = r % hd;  // GGUF row k = 2*j + i
  const int64_t j = k / 2, i = k % 2;
  return h * hd + i * half + j;
}

}  // namespace nvfp4::hf
