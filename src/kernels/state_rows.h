// A helper of the recurrent state kernels (gated_delta_vec.h, mamba2_scan_vec.h): the row of the
// state the caller runs next, brought into L2 while the current state's pass runs from cache.
#pragma once
#include <cstdint>

namespace nvfp4 {
namespace {
// Row `row` of `next` ([rows][width] floats), every 64-byte line of it; nothing when next is null.
[[gnu::always_inline]] inline void prefetch_state_row(const float* next, int64_t row, int64_t width) {
  if (!next) return;
  const char* p = reinterpret_cast<const char*>(next + row * width);
  for (int64_t b = 0; b < width * 4; b += 64) __builtin_prefetch(p + b, 0, 2);
}
}  // namespace
}  // namespace nvfp4
