// AMX tile configuration (LDTILECFG's 64-byte operand, palette 1), shared by the AMX kernels.
#pragma once
#include <cstdint>

namespace nvfp4::kern {

struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile k
  uint8_t rows[16] = {};    // rows of tile k
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

}  // namespace nvfp4::kern
