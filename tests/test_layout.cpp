// Row layout <-> ggml block layout: lossless both ways, and the block layout's element order.
#include <gtest/gtest.h>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/layout.h"
#include "nvfp4/quantize.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
RowMatrix random_row_matrix(int64_t n_out, int64_t n_in, uint64_t seed) {
  test::Rng rng(seed);
  RowMatrix m;
  m.n_out = n_out;
  m.n_in = n_in;
  m.scale2 = 0.0123f;
  m.codes.resize(n_out * n_in / 2);
  m.scales.resize(n_out * n_in / 16);
  for (auto& c : m.codes) c = static_cast<uint8_t>(rng.next());
  for (auto& s : m.scales) s = static_cast<uint8_t>(rng.next() % 0x7F);  // finite, sign clear
  return m;
}
}  // namespace

TEST(Layout, RowToGgmlAndBackIsIdentity) {
  for (int64_t n_in : {64, 128, 576, 1536}) {
    RowMatrix m = random_row_matrix(7, n_in, n_in);
    GgmlMatrix g = row_to_ggml(m.view());
    EXPECT_EQ(g.blocks.size(), static_cast<size_t>(7 * n_in / 64 * 36));
    RowMatrix back = ggml_to_row(g.view());
    EXPECT_EQ(back.codes, m.codes);
    EXPECT_EQ(back.scales, m.scales);
    EXPECT_EQ(back.scale2, m.scale2);
    GgmlMatrix again = row_to_ggml(back.view());
    EXPECT_EQ(again.blocks, g.blocks);
  }
}

TEST(Layout, GgmlElementOrderMatchesTheSpec) {
  // Element e of a row holds code (e % 16); check each element lands where SPEC.md section 3 says.
  RowMatrix m;
  m.n_out = 1;
  m.n_in = 64;
  m.codes.resize(32);
  m.scales = {0x38, 0x39, 0x3A, 0x3B};
  for (int e = 0; e < 64; ++e) {
    const uint8_t code = static_cast<uint8_t>((e * 7 + e / 16) & 0xF);
    m.codes[e / 2] |= (e & 1) ? code << 4 : code;
  }
  GgmlMatrix g = row_to_ggml(m.view());
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(g.blocks[s], m.scales[s]);
    for (int j = 0; j < 8; ++j) {
      const uint8_t q = g.blocks[4 + s * 8 + j];
      EXPECT_EQ(q & 0xF, m.view().code(0, s * 16 + j));
      EXPECT_EQ(q >> 4, m.view().code(0, s * 16 + j + 8));
    }
  }
}

TEST(Layout, RefusesRowsNotAMultipleOf64) {
  RowMatrix m = random_row_matrix(2, 48, 1);
  EXPECT_THROW(row_to_ggml(m.view(), "blk.0.ffn_up.weight"), Error);
  try {
    row_to_ggml(m.view(), "blk.0.ffn_up.weight");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 64"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("n_in = 48"), std::string::npos);
    EXPECT_EQ(e.tensor(), "blk.0.ffn_up.weight");
  }
}

TEST(Layout, RefusesNaNOrSignedScaleBytes) {
  RowMatrix m = random_row_matrix(1, 64, 2);
  m.scales[2] = 0x7F;
  EXPECT_THROW(row_to_ggml(m.view()), Error);
  m.scales[2] = 0xB8;
  EXPECT_THROW(row_to_ggml(m.view()), Error);
}
