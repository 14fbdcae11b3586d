// Quantizer properties (SPEC.md section 4) that hold whatever ModelOpt does; the bit-for-bit
// comparison with ModelOpt lives in test_modelopt_fixtures.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/quantize.h"
#include "test_util.h"

using namespace nvfp4;

TEST(Quantize, SpecWorkedFixtureDecodesExactly) {
  // SPEC.md section 7: codes 10 32 54 76 98 BA DC FE, scale 0x38, scale2 0.25.
  RowMatrix m;
  m.n_out = 1;
  m.n_in = 16;
  m.codes = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  m.scales = {0x38};
  m.scale2 = 0.25f;
  std::vector<float> out(16);
  dequantize(m.view(), out.data());
  const float want[16] = {0, 0.125, 0.25, 0.375, 0.5, 0.75, 1.0, 1.5,
                          -0.0f, -0.125, -0.25, -0.375, -0.5, -0.75, -1.0, -1.5};
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want[i])) << i;
  }
}

TEST(Quantize, AllZeroTensorGetsScale2OneAndZeroCodes) {
  std::vector<float> w(64, 0.0f);
  RowMatrix m = quantize(w.data(), 2, 32);
  EXPECT_EQ(m.scale2, 1.0f);
  for (uint8_t c : m.codes) EXPECT_EQ(c, 0);
  // s == 0 -> 1.0 -> clamp -> E4M3(1.0) = 0x38
  for (uint8_t s : m.scales) EXPECT_EQ(s, 0x38);
}

TEST(Quantize, RefusesNaNAndInfWithTheirIndex) {
  std::vector<float> w(32, 1.0f);
  w[17] = NAN;
  try {
    quantize(w.data(), 2, 16, "model.layers.0.mlp.up_proj.weight");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at flat index 17"), std::string::npos) << e.what();
    EXPECT_EQ(e.tensor(), "model.layers.0.mlp.up_proj.weight");
  }
  w[17] = 1.0f;
  w[3] = -INFINITY;
  EXPECT_THROW(quantize(w.data(), 2, 16), Error);
}

TEST(Quantize, RefusesNInNotAMultipleOf16) {
  std::vector<float> w(24, 1.0f);
  EXPECT_THROW(quantize(w.data(), 1, 24), Error);
}

TEST(Quantize, ErrorIsBoundedByHalfAStepPerValue) {
  test::Rng rng(7);
  const int n_out = 64, n_in = 256;
  std::vector<float> w(n_out * n_in);
  for (auto& v : w) v = rng.gauss() * 0.02f;
  RowMatrix m = quantize(w.data(), n_out, n_in);
  std::vector<float> back(w.size());
  dequantize(m.view(), back.data());
  for (int g = 0; g < n_out * n_in / 16; ++g) {
    const float step = e4m3_to_float(m.scales[g]) * m.scale2;  // E2M1 unit (0.5 grid at the bottom)
    for (int j = 0; j < 16; ++j) {
      const int i = g * 16 + j;
      // Largest E2M1 gap is 2 (between 4 and 6): |err| <= 1 step unless the value saturated.
      EXPECT_LE(std::fabs(back[i] - w[i]), 1.0f * step + 1e-12f) << i;
    }
  }
}
