// `nvfp4 verify A B`: do two checkpoints hold the same NVFP4 weights (codes, block scale bytes,
// tensor scales, activation scales), whatever their layouts (row / ggml blocks) and containers?
// And A's FP8 layers: which B keeps as stored (lossless), which it holds in another form.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {

struct VerifyResult {
  bool same = false;
  int64_t tensors = 0;      // NVFP4 tensors compared
  int64_t values = 0;       // weights compared
  std::string difference;   // the first difference, when !same
  int64_t fp8_same = 0;     // A's FP8 layers B holds byte for byte (weight, scale, input scale as stored)
  std::vector<std::string> fp8_changed;  // A's FP8 layers B holds in another form ("name: F8_E4M3 in A, Q8_0 in B")
};

// Opens both with Checkpoint::open (so both are validated in full) and compares every NVFP4 tensor
// by canonical name, in A's order; then A's FP8 layers: the same when B stores FP8 too (a
// difference there is a difference), listed in fp8_changed when B holds another form (convert to
// GGUF writes Q8_0). Throws nvfp4::Error when either is refused.
VerifyResult verify_checkpoints(const std::string& a, const std::string& b);

}  // namespace nvfp4
