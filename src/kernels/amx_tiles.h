// AMX tile configuration (LDTILECFG's 64-byte operand, palette 1) and the 64-byte aligned
// buffers tile rows are loaded from, shared by the AMX kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nvfp4::kern {

struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile k
  uint8_t rows[16] = {};    // rows of tile k
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// n elements of T starting at a 64-byte boundary (p), zero-initialized.
template <class T>
struct Aligned {
  std::vector<T> v;
  T* p = nullptr;
  explicit Aligned(size_t n) : v(n + 64 / sizeof(T)) {
    p = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
  }
};

}  // namespace nvfp4::kern
