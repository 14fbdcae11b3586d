#include "nvfp4/verify.h"

#include <cstring>
#include <set>

#include "nvfp4/checkpoint.h"
#include "nvfp4/codec.h"

namespace nvfp4 {

namespace {
std::string bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), u);
  return buf;
}
}  // namespace

VerifyResult verify_checkpoints(const std::string& pa, const std::string& pb) {
  const auto a = Checkpoint::open(pa);
  const auto b = Checkpoint::open(pb);
  VerifyResult r;
  auto differ = [&](const std::string& msg) {
    r.same = false;
    r.difference = msg;
    return r;
  };
  std::set<std::string> seen;
  for (const TensorEntry& ea : a->tensors()) {
    if (ea.storage != Storage::nvfp4) continue;
    seen.insert(ea.name);
    const TensorEntry* eb = b->find(ea.name);
    if (!eb) return differ(ea.name + ": NVFP4 in A, absent from B");
    if (eb->storage != Storage::nvfp4) return differ(ea.name + ": NVFP4 in A, " + eb->storage_name + " in B");
    if (ea.shape != eb->shape) return differ(ea.name + ": shapes differ");
    const RowMatrix ma = a->nvfp4(ea.name);
    const RowMatrix mb = b->nvfp4(ea.name);
    if (std::memcmp(&ma.scale2, &mb.scale2, 4) != 0) {
      return differ(ea.name + ": tensor scale A " + bits(ma.scale2) + ", B " + bits(mb.scale2));
    }
    if (std::memcmp(&ea.input_scale, &eb->input_scale, 4) != 0) {
      return differ(ea.name + ": input scale A " + bits(ea.input_scale) + ", B " + bits(eb->input_scale));
    }
    for (size_t i = 0; i < ma.scales.size(); ++i) {
      if (ma.scales[i] != mb.scales[i]) {
        const int64_t g = ma.n_in / kGroup;
        return differ(ea.name + ": block scale of row " + std::to_string(static_cast<int64_t>(i) / g) + ", inputs " +
                      std::to_string(static_cast<int64_t>(i) % g * kGroup) + ".." +
                      std::to_string(static_cast<int64_t>(i) % g * kGroup + 15) + ": A byte " +
                      std::to_string(ma.scales[i]) + ", B byte " + std::to_string(mb.scales[i]));
      }
    }
    for (size_t i = 0; i < ma.codes.size(); ++i) {
      if (ma.codes[i] != mb.codes[i]) {
        const int64_t e = static_cast<int64_t>(i) * 2 + ((ma.codes[i] & 0xF) == (mb.codes[i] & 0xF) ? 1 : 0);
        const int64_t row = e / ma.n_in, col = e % ma.n_in;
        return differ(ea.name + ": code of [" + std::to_string(row) + "][" + std::to_string(col) + "]: A " +
                      std::to_string(ma.view().code(row, col)) + ", B " + std::to_string(mb.view().code(row, col)));
      }
    }
    ++r.tensors;
    r.values += ma.n_out * ma.n_in;
  }
  for (const TensorEntry& eb : b->tensors()) {
    if (eb.storage == Storage::nvfp4 && !seen.count(eb.name)) return differ(eb.name + ": NVFP4 in B, not in A");
  }
  if (r.tensors == 0) return differ("no NVFP4 tensor in either checkpoint");
  r.same = true;
  return r;
}

}  // namespace nvfp4
