// In-memory forms of an NVFP4 weight W[n_out][n_in] (SPEC.md sections 2 and 3).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace nvfp4 {

inline constexpr int kGroup = 16;        // values per E4M3 block scale
inline constexpr int kGgmlBlock = 64;    // values per ggml NVFP4 block
inline constexpr int kGgmlBlockBytes = 36;  // d[4] + qs[32]

// A non-owning view of the row layout (ModelOpt / compressed-tensors / MLX bytes):
//   codes  [n_out][n_in/2]  byte k of a row: element 2k low nibble, 2k+1 high nibble
//   scales [n_out][n_in/16] E4M3FN bytes
//   scale2 the FP32 tensor scale, a multiplier: w = (e2m1 * e4m3) * scale2
struct RowView {
  int64_t n_out = 0;
  int64_t n_in = 0;
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  float scale2 = 1.0f;
  // Optional: the stored row that holds logical row r (a view of a file's rows in another order,
  // e.g. HF q/k rows in the order RoPE's adjacent pairs want); null: row r itself. codes and
  // scales hold n_out whole rows either way.
  const int64_t* rows = nullptr;

  int64_t code_row_bytes() const { return n_in / 2; }
  int64_t scale_row_bytes() const { return n_in / kGroup; }
  int64_t stored_row(int64_t r) const { return rows ? rows[r] : r; }
  const uint8_t* row_codes(int64_t r) const { return codes + stored_row(r) * code_row_bytes(); }
  const uint8_t* row_scales(int64_t r) const { return scales + stored_row(r) * scale_row_bytes(); }
  // The 4-bit code of element (r, i).
  uint8_t code(int64_t r, int64_t i) const {
    uint8_t b = row_codes(r)[i >> 1];
    return (i & 1) ? (b >> 4) : (b & 0xF);
  }
};

// The owning row-layout matrix.
struct RowMatrix {
  int64_t n_out = 0;
  int64_t n_in = 0;
  std::vector<uint8_t> codes;
  std::vector<uint8_t> scales;
  float scale2 = 1.0f;

  RowView view() const { return RowView{n_out, n_in, codes.data(), scales.data(), scale2}; }
};

// ggml's block layout (GGUF type 40): per row n_in/64 blocks of 36 bytes, d[4] then qs[32].
// Inside sub-block s, byte qs[s*8 + j] holds element s*16 + j (low) and s*16 + j + 8 (high).
// The tensor scale travels separately (GGUF tensor `<name>.scale`, absent = 1.0).
struct GgmlView {
  int64_t n_out = 0;
  int64_t n_in = 0;
  const uint8_t* blocks = nullptr;
  float scale = 1.0f;
  int64_t row_bytes() const { return n_in / kGgmlBlock * kGgmlBlockBytes; }
};

struct GgmlMatrix {
  int64_t n_out = 0;
  int64_t n_in = 0;
  std::vector<uint8_t> blocks;
  float scale = 1.0f;
  GgmlView view() const { return GgmlView{n_out, n_in, blocks.data(), scale}; }
};

}  // namespace nvfp4
