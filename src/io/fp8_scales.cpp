#include "io/fp8_scales.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nvfp4/codec.h"
#include "nvfp4/dense.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace st = safetensors;

namespace {

std::string shape_text(const std::vector<int64_t>& sh) {
  std::string t = "[";
  for (size_t i = 0; i < sh.size(); ++i) t += (i ? ", " : "") + std::to_string(sh[i]);
  return t + "]";
}

// An E8M0 byte the kernels take, or the error naming it (`where`: its place in the grid).
void check_e8m0(uint8_t b, const std::string& file, const std::string& tensor, const std::string& where) {
  if (b <= kE8m0MaxForE4m3) return;
  throw Error(file, tensor, b == 0xFF ? "E8M0 scale is NaN (byte 0xFF)" : "E8M0 scale too large: the block's E4M3 values would overflow float32",
              "bytes 0..246 (2^-127 .. 2^119)", "byte " + std::to_string(b) + " at " + where);
}

}  // namespace

void check_mxfp8_scales(const st::TensorInfo& t, const std::string& file, const std::string& wfile, const std::string& weight,
                        int64_t n_out, int64_t n_in) {
  if (n_in % kMxBlock != 0)
    throw Error(wfile, weight, "MXFP8 weight: inputs must fill whole blocks of 32", "n_in % 32 == 0", std::to_string(n_in));
  if (t.dtype != st::Dtype::U8)
    throw Error(file, t.name, "MXFP8 scale must be E8M0 exponents stored as U8", "U8", st::dtype_name(t.dtype));
  const std::vector<int64_t> want = {n_out, n_in / kMxBlock};
  if (t.shape != want)
    throw Error(file, t.name, "MXFP8 scale shape: one per 32 inputs of each row", shape_text(want), shape_text(t.shape));
  for (int64_t k = 0; k < t.elements(); ++k)
    check_e8m0(t.data[k], file, t.name, "row " + std::to_string(k / want[1]) + ", block " + std::to_string(k % want[1]));
}

std::vector<float> read_fp8_block_scales(const st::TensorInfo& t, const std::string& file, int64_t n_out, int64_t n_in) {
  const int64_t br = (n_out + kFp8Block - 1) / kFp8Block, bc = (n_in + kFp8Block - 1) / kFp8Block;
  const std::vector<int64_t> want = {br, bc};
  auto squeeze = [](std::vector<int64_t> v) {
    v.erase(std::remove(v.begin(), v.end(), int64_t{1}), v.end());
    return v;
  };
  const bool e8m0 = t.dtype == st::Dtype::U8;
  if (!e8m0 && (!st::dtype_is_float(t.dtype) || t.dtype == st::Dtype::F8_E4M3 || t.dtype == st::Dtype::F8_E5M2))
    throw Error(file, t.name, "FP8 block scale dtype", "F32, F16, BF16 or U8 (E8M0)", st::dtype_name(t.dtype));
  if (t.shape != want && squeeze(t.shape) != squeeze(want))
    throw Error(file, t.name, "FP8 block scale shape: one per 128 x 128 block (smaller at the edges) of " + shape_text({n_out, n_in}),
                shape_text(want), shape_text(t.shape));
  std::vector<float> v(static_cast<size_t>(br * bc));
  const auto at = [&](int64_t k) { return "block row " + std::to_string(k / bc) + ", column " + std::to_string(k % bc); };
  if (e8m0) {
    for (int64_t k = 0; k < br * bc; ++k) {
      check_e8m0(t.data[k], file, t.name, at(k));
      v[static_cast<size_t>(k)] = e8m0_to_float(t.data[k]);
    }
    return v;
  }
  st::to_float(t, v.data(), file);
  for (int64_t k = 0; k < br * bc; ++k) {
    const float x = v[static_cast<size_t>(k)];
    if (!std::isfinite(x) || !(x > 0.0f)) {
      char b[32];
      std::snprintf(b, sizeof b, "%g", static_cast<double>(x));
      throw Error(file, t.name, "FP8 block scale must be finite and positive", "> 0 at every block", std::string(b) + " at " + at(k));
    }
  }
  return v;
}

}  // namespace nvfp4
