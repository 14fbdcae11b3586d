// Row layout <-> ggml block layout (SPEC.md sections 2 and 3). A pure byte permutation:
//   row layout, element i of a row:  byte i/2, low nibble when i is even, high when odd
//   block layout, element s*16 + j (j < 8) of a 64-block: qs[s*8 + j] low nibble
//                 element s*16 + j + 8         : qs[s*8 + j] high nibble
//   scale of group g of a row = d[g % 4] of block g / 4.
#include "nvfp4/layout.h"

#include <cstring>

#include "nvfp4/validate.h"

namespace nvfp4 {

void row_to_ggml_row(const uint8_t* codes, const uint8_t* scales, int64_t n_in, uint8_t* blocks) {
  for (int64_t b = 0; b < n_in / kGgmlBlock; ++b) {
    uint8_t* blk = blocks + b * kGgmlBlockBytes;
    uint8_t* qs = blk + 4;
    std::memcpy(blk, scales + b * 4, 4);
    const uint8_t* c = codes + b * (kGgmlBlock / 2);  // 32 bytes: 64 codes in row order
    for (int s = 0; s < 4; ++s) {
      const uint8_t* g = c + s * 8;  // the 16 codes of sub-block s, pairs (2k, 2k+1)
      for (int j = 0; j < 8; ++j) {
        const uint8_t lo = (j & 1) ? (g[j / 2] >> 4) : (g[j / 2] & 0xF);          // element j
        const uint8_t hi = (j & 1) ? (g[4 + j / 2] >> 4) : (g[4 + j / 2] & 0xF);  // element j+8
        qs[s * 8 + j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

void ggml_to_row_row(const uint8_t* blocks, int64_t n_in, uint8_t* codes, uint8_t* scales) {
  for (int64_t b = 0; b < n_in / kGgmlBlock; ++b) {
    const uint8_t* blk = blocks + b * kGgmlBlockBytes;
    const uint8_t* qs = blk + 4;
    std::memcpy(scales + b * 4, blk, 4);
    uint8_t* c = codes + b * (kGgmlBlock / 2);
    for (int s = 0; s < 4; ++s) {
      uint8_t v[16];
      for (int j = 0; j < 8; ++j) {
        v[j] = qs[s * 8 + j] & 0xF;
        v[j + 8] = qs[s * 8 + j] >> 4;
      }
      for (int k = 0; k < 8; ++k) c[s * 8 + k] = static_cast<uint8_t>(v[2 * k] | (v[2 * k + 1] << 4));
    }
  }
}

GgmlMatrix row_to_ggml(const RowView& m, const std::string& name) {
  check_n_in(m.n_in, true, "", name);
  check_scale_bytes(m.scales, m.n_out * m.scale_row_bytes(), "", name);
  GgmlMatrix g;
  g.n_out = m.n_out;
  g.n_in = m.n_in;
  g.scale = m.scale2;
  g.blocks.resize(static_cast<size_t>(m.n_out * g.view().row_bytes()));
  for (int64_t r = 0; r < m.n_out; ++r) {
    row_to_ggml_row(m.row_codes(r), m.row_scales(r), m.n_in, g.blocks.data() + r * g.view().row_bytes());
  }
  return g;
}

RowMatrix ggml_to_row(const GgmlView& g, const std::string& name) {
  check_n_in(g.n_in, true, "", name);
  RowMatrix m;
  m.n_out = g.n_out;
  m.n_in = g.n_in;
  m.scale2 = g.scale;
  m.codes.resize(static_cast<size_t>(g.n_out * g.n_in / 2));
  m.scales.resize(static_cast<size_t>(g.n_out * g.n_in / kGroup));
  for (int64_t r = 0; r < g.n_out; ++r) {
    ggml_to_row_row(g.blocks + r * g.row_bytes(), g.n_in, m.codes.data() + r * (g.n_in / 2),
                    m.scales.data() + r * (g.n_in / kGroup));
  }
  check_scale_bytes(m.scales.data(), static_cast<int64_t>(m.scales.size()), "", name);
  return m;
}

}  // namespace nvfp4
