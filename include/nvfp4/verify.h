// `nvfp4 verify A B`: do two checkpoints hold the same NVFP4 weights (codes, block scale bytes,
// tensor scales, activation scales), whatever their layouts (row / ggml blocks) and containers?
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4 {

struct VerifyResult {
  bool same = false;
  int64_t tensors = 0;      // NVFP4 tensors compared
  int64_t values = 0;       // weights compared
  std::string difference;   // the first difference, when !same
};

// Opens both with Checkpoint::open (so both are validated in full) and compares every NVFP4 tensor
// by canonical name, in A's order. Throws nvfp4::Error when either is refused.
VerifyResult verify_checkpoints(const std::string& a, const std::string& b);

}  // namespace nvfp4
