#include "io/stacked_experts.h"

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
bool ends_with(const std::string& s, const std::string& x) { return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0; }
}  // namespace

std::vector<st::TensorInfo> split_stacked_experts(const st::TensorInfo& t, const std::string& file) {
  static const std::string kGateUp = ".experts.gate_up_proj", kDown = ".experts.down_proj";
  const bool gate_up = ends_with(t.name, kGateUp), down = ends_with(t.name, kDown);
  if (!gate_up && !down) return {};
  const std::string layer = t.name.substr(0, t.name.size() - (gate_up ? kGateUp : kDown).size());
  if (t.shape.size() != 3)
    throw Error(file, t.name, "stacked experts: [experts][rows][columns]", "3 dimensions", std::to_string(t.shape.size()));
  if (t.dtype != st::Dtype::F32 && t.dtype != st::Dtype::F16 && t.dtype != st::Dtype::BF16)
    throw Error(file, t.name, "stacked experts of a float dtype (quantized exports write one matrix per expert)", "F32, F16 or BF16",
                st::dtype_name(t.dtype));
  const int64_t ne = t.shape[0], rows = t.shape[1], cols = t.shape[2];
  if (gate_up && rows % 2 != 0) throw Error(file, t.name, "gate_up_proj rows: each expert's gate, then its up", "an even count", std::to_string(rows));
  const uint64_t esz = static_cast<uint64_t>(st::dtype_bits(t.dtype) / 8);
  const uint64_t per_expert = static_cast<uint64_t>(rows * cols) * esz;
  std::vector<st::TensorInfo> out;
  for (int64_t e = 0; e < ne; ++e) {
    const std::string base = layer + ".experts." + std::to_string(e) + ".";
    const uint64_t at = t.begin + static_cast<uint64_t>(e) * per_expert;
    const auto view = [&](const std::string& name, int64_t r0, int64_t r1) {
      st::TensorInfo v;
      v.name = name;
      v.dtype = t.dtype;
      v.shape = {r1 - r0, cols};
      v.begin = at + static_cast<uint64_t>(r0 * cols) * esz;
      v.end = at + static_cast<uint64_t>(r1 * cols) * esz;
      v.data = t.data + (v.begin - t.begin);
      out.push_back(std::move(v));
    };
    if (gate_up) {
      view(base + "gate_proj.weight", 0, rows / 2);
      view(base + "up_proj.weight", rows / 2, rows);
    } else {
      view(base + "down_proj.weight", 0, rows);
    }
  }
  return out;
}

}  // namespace nvfp4
