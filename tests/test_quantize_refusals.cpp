// The quantizer fails closed (SPEC.md section 4, house rule): NaN/Inf named with the flat index
// of the FIRST bad value, on both entry points; a tensor whose scale2 underflows is refused.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nvfp4/error.h"
#include "nvfp4/quantize.h"

using namespace nvfp4;

namespace {
std::string refusal(const std::vector<float>& w, int64_t n_out, int64_t n_in, bool given_s2) {
  try {
    if (given_s2) quantize_with_scale2(w.data(), n_out, n_in, 0.01f, "blk.3.ffn_up");
    else quantize(w.data(), n_out, n_in, "blk.3.ffn_up");
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), "blk.3.ffn_up");
    return e.what();
  }
  return "";
}
}  // namespace

TEST(QuantizeRefusals, FirstNonFiniteValueIsNamedOnBothEntryPoints) {
  for (bool given : {false, true}) {
    std::vector<float> w(3 * 32, 0.5f);
    w[70] = NAN;
    w[41] = -INFINITY;  // the first bad value in flat order
    w[90] = INFINITY;
    const std::string msg = refusal(w, 3, 32, given);
    EXPECT_NE(msg.find("Inf at flat index 41"), std::string::npos) << msg;
    w[41] = 0.5f;
    EXPECT_NE(refusal(w, 3, 32, given).find("NaN at flat index 70"), std::string::npos);
    w[70] = 0.5f;
    EXPECT_NE(refusal(w, 3, 32, given).find("Inf at flat index 90"), std::string::npos);
    w[90] = 0.5f;
    EXPECT_EQ(refusal(w, 3, 32, given), "");
  }
}

TEST(QuantizeRefusals, LastElementAndSignallingNaNAreFound) {
  std::vector<float> w(16 * 16, 1.0f);
  w.back() = std::numeric_limits<float>::signaling_NaN();
  EXPECT_NE(refusal(w, 16, 16, false).find("NaN at flat index 255"), std::string::npos);
}

TEST(QuantizeRefusals, TensorScaleUnderflowIsRefusedJustBelowTheThreshold) {
  // scale2 = amax / 2688 rounds to 0 exactly when amax <= 2688 * 2^-150 = 1344 * 2^-149 (the
  // quotient 2^-150 is a tie between 0 and 2^-149 and goes to the even 0).
  const float below = std::bit_cast<float>(uint32_t{1344});  // the subnormal 1344 * 2^-149
  const float above = std::bit_cast<float>(uint32_t{1345});
  ASSERT_EQ(below / 2688.0f, 0.0f);
  ASSERT_EQ(above / 2688.0f, std::bit_cast<float>(uint32_t{1}));
  std::vector<float> w(32, 0.0f);
  w[5] = -below;
  const std::string msg = refusal(w, 1, 32, false);
  EXPECT_NE(msg.find("tensor scale underflows"), std::string::npos) << msg;
  // The next representable amax gives a subnormal, non-zero scale2: accepted.
  w[5] = above;
  const RowMatrix m = quantize(w.data(), 1, 32, "blk.3.ffn_up");
  EXPECT_GT(m.scale2, 0.0f);
  EXPECT_EQ(refusal(w, 1, 32, false), "");
}
