#include "io/csf_scales.h"

#include <cstring>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace st = safetensors;

namespace {
std::string shape_of(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}
}  // namespace

std::vector<uint8_t> decode_csf_scales(const st::TensorInfo& fixed, const std::string& ff, const st::TensorInfo& exc,
                                       const std::string& ef, int64_t rows, int64_t cols) {
  const std::string rule = "CSF block scales (byte-window4-fixed-stream-u24-exceptions/1)";
  if (rows % 16 != 0 || cols % 2 != 0)
    throw Error(ff, fixed.name, rule + ": scale rows in slabs of 16, columns in pairs", "rows % 16 == 0, cols % 2 == 0",
                std::to_string(rows) + " x " + std::to_string(cols));
  const std::vector<int64_t> want = {rows / 16, 16 * (1 + cols / 2)};
  if (fixed.dtype != st::Dtype::U8 || fixed.shape != want)
    throw Error(ff, fixed.name, rule + ": fixed stream for a " + std::to_string(rows) + " x " + std::to_string(cols) + " scale matrix",
                "U8 " + shape_of(want), std::string(st::dtype_name(fixed.dtype)) + " " + shape_of(fixed.shape));
  if (exc.dtype != st::Dtype::U32 || exc.shape.size() != 1)
    throw Error(ef, exc.name, rule + ": exception words", "U32 [k]", std::string(st::dtype_name(exc.dtype)) + " " + shape_of(exc.shape));
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols));
  const int64_t slab_bytes = want[1], row_bytes = cols / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* slab = fixed.data + (r / 16) * slab_bytes;
    const uint8_t base = slab[r % 16];
    if (base > 240)
      throw Error(ff, fixed.name, rule + ": a row's base byte", "0..240 (base + a 4-bit code stays a byte)",
                  std::to_string(base) + " at row " + std::to_string(r));
    const uint8_t* codes = slab + 16 + (r % 16) * row_bytes;
    for (int64_t j = 0; j < row_bytes; ++j) {
      out[static_cast<size_t>(r * cols + 2 * j)] = static_cast<uint8_t>(base + (codes[j] & 0xF));
      out[static_cast<size_t>(r * cols + 2 * j + 1)] = static_cast<uint8_t>(base + (codes[j] >> 4));
    }
  }
  int64_t last = -1;
  for (int64_t k = 0; k < exc.shape[0]; ++k) {
    uint32_t w;
    std::memcpy(&w, exc.data + 4 * k, 4);  // little-endian, as safetensors stores it
    const int64_t pos = w & 0xFFFFFF;
    if (pos >= rows * cols || pos <= last)
      throw Error(ef, exc.name, rule + ": exception positions sorted, unique and inside the matrix",
                  "increasing positions < " + std::to_string(rows * cols),
                  "position " + std::to_string(pos) + " at word " + std::to_string(k) + (k ? " after " + std::to_string(last) : ""));
    out[static_cast<size_t>(pos)] = static_cast<uint8_t>(w >> 24);
    last = pos;
  }
  return out;
}

}  // namespace nvfp4
