#include "nvfp4/verify.h"

#include <cstring>
#include <set>
#include <tuple>

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
    const TensorEntry* ea = a->find(eb.name);
    if (eb.storage == Storage::nvfp4 && !seen.count(eb.name) && !(ea && ea->storage == Storage::fp8))  // (FP8 in A: listed below)
      return differ(eb.name + ": NVFP4 in B, not in A");
  }
  for (const TensorEntry& ea : a->tensors()) {
    Checkpoint::StoredFp8 x, y;
    if (ea.storage != Storage::fp8 || !a->stored_fp8(ea.name, x)) continue;
    const TensorEntry* eb = b->find(ea.name);
    if (!eb) return differ(ea.name + ": FP8 in A, absent from B");
    if (!b->stored_fp8(ea.name, y)) {
      r.fp8_changed.push_back(ea.name + ": " + ea.storage_name + " in A, " + eb->storage_name + " in B");
      continue;
    }
    for (const auto& [what, p, q] : {std::tuple{"weight", &x.weight, &y.weight}, {"scale", &x.scale, &y.scale}, {"input scale", &x.input_scale, &y.input_scale}}) {
      if (p->dtype != q->dtype || p->shape != q->shape || p->nbytes != q->nbytes)
        return differ(ea.name + ": FP8 " + what + " stored as " + (p->dtype.empty() ? "none" : p->dtype) + " in A, " + (q->dtype.empty() ? "none" : q->dtype) + " in B (or another shape)");
      for (size_t i = 0; i < p->nbytes; ++i)
        if (p->data[i] != q->data[i])
          return differ(ea.name + ": FP8 " + what + " byte " + std::to_string(i) + ": A " + std::to_string(p->data[i]) + ", B " + std::to_string(q->data[i]));
    }
    ++r.fp8_same;
  }
  if (r.tensors == 0 && r.fp8_same == 0)
    return differ(r.fp8_changed.empty() ? "no NVFP4 or FP8 tensor in both checkpoints"
                                        : "no NVFP4 tensor, and none of A's " + std::to_string(r.fp8_changed.size()) +
                                              " FP8 layers stored as FP8 in B (" + r.fp8_changed.front() + ", ...)");
  r.same = true;
  return r;
}

}  // namespace nvfp4
