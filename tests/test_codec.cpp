// Exhaustive tests of the scalar codecs (SPEC.md section 1): every code, every byte, every half.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "nvfp4/codec.h"

using namespace nvfp4;

TEST(E2M1, AllSixteenCodesDecode) {
  const float want[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(std::bit_cast<uint32_t>(e2m1_to_float(c)), std::bit_cast<uint32_t>(want[c])) << c;
  }
}

TEST(E2M1, IntegerTwinIsTwiceTheValueForEveryCode) {
  for (int c = 0; c < 16; ++c) EXPECT_EQ(static_cast<float>(e2m1_q1(c)), 2.0f * e2m1_to_float(c)) << c;
}

TEST(E2M1, EveryCodeEncodesToItselfExceptNegativeZero) {
  for (int c = 0; c < 16; ++c) {
    const uint8_t back = float_to_e2m1(e2m1_to_float(c));
    EXPECT_EQ(back, c == 8 ? 0 : c) << c;  // -0.0 is not < 0, so it encodes as +0
  }
}

TEST(E2M1, TiesGoToTheEvenCode) {
  struct { float v; uint8_t code; } cases[] = {
      {0.25f, 0}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4}, {2.5f, 4}, {3.5f, 6}, {5.0f, 6},
      {-0.25f, 8}, {-0.75f, 10}, {-5.0f, 14}, {7.0f, 7}, {1e30f, 7}, {-0.1f, 8}};
  for (auto c : cases) EXPECT_EQ(float_to_e2m1(c.v), c.code) << c.v;
}

TEST(E4M3, AllBytesDecodeByTheFormula) {
  for (int b = 0; b < 256; ++b) {
    const float v = e4m3_to_float(b);
    if ((b & 0x7F) == 0x7F) { EXPECT_TRUE(std::isnan(v)) << b; continue; }
    const int e = (b >> 3) & 15, m = b & 7;
    double want = e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
    if (b & 0x80) want = -want;
    EXPECT_EQ(static_cast<double>(v), want) << b;
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);
}

TEST(E4M3, IntegerTwinIsValueTimes512ForEveryFiniteByte) {
  int32_t max_q9 = 0;
  for (int b = 0; b < 256; ++b) {
    if (e4m3_is_nan(b)) continue;
    EXPECT_EQ(static_cast<double>(e4m3_q9(b)), std::ldexp(static_cast<double>(e4m3_to_float(b)), 9)) << b;
    if (b < 0x80) { EXPECT_GE(e4m3_q9(b), 0); max_q9 = std::max(max_q9, e4m3_q9(b)); }
  }
  EXPECT_EQ(max_q9, 229376);
}

TEST(E4M3, EveryFiniteByteRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    if (e4m3_is_nan(b)) continue;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(b)), b) << b;
  }
}

TEST(E4M3, OverflowAndNaNEncodeAsNaN) {
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7E);  // tie between 448 (even) and the absent 480
  EXPECT_EQ(float_to_e4m3(std::nextafter(464.0f, 1e9f)), 0x7F);
  EXPECT_EQ(float_to_e4m3(INFINITY), 0x7F);
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xFF);
  EXPECT_EQ(float_to_e4m3(NAN) & 0x7F, 0x7F);
}

TEST(UE4M3, SignBitIgnoredForEveryByte) {
  for (int b = 0; b < 256; ++b) {
    const float u = ue4m3_to_float(b), e = e4m3_to_float(b & 0x7F);
    if (std::isnan(e)) EXPECT_TRUE(std::isnan(u)); else EXPECT_EQ(u, e) << b;
  }
}

TEST(Half, AllHalvesRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (nan) { EXPECT_TRUE(std::isnan(f)) << h; EXPECT_EQ(float_to_half(f), h | 0x200) << h; continue; }
    EXPECT_EQ(float_to_half(f), h) << h;
  }
}

TEST(Half, AllMidpointsTieToEven) {
  // Between every pair of adjacent finite halves of the same sign, the midpoint rounds to the
  // even one and the floats just beside it round to the nearer one.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const double a = half_to_float(h | sign), b = half_to_float((h + 1) | sign);
      const float mid = static_cast<float>((a + b) / 2);  // exact in float
      const uint16_t even = (h & 1) ? (h + 1) : h;
      EXPECT_EQ(float_to_half(mid), even | sign) << h;
      EXPECT_EQ(float_to_half(std::nextafter(mid, static_cast<float>(a))), h | sign) << h;
      EXPECT_EQ(float_to_half(std::nextafter(mid, static_cast<float>(b))), (h + 1) | sign) << h;
    }
  }
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
}

TEST(BF16, AllBfloatsRoundTripAndMidpointsTieToEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    if (std::isnan(f)) { EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << b; continue; }
    EXPECT_EQ(float_to_bf16(f), b) << b;
    if ((b & 0x7FFF) < 0x7F7F) {  // finite with a finite successor
      const uint32_t bits = std::bit_cast<uint32_t>(f) + 0x8000;  // the midpoint
      EXPECT_EQ(float_to_bf16(std::bit_cast<float>(bits)), (b & 1) ? b + 1 : b) << b;
    }
  }
}

TEST(RoundHalfEven, Ties) {
  EXPECT_EQ(round_half_even(0.5f), 0);
  EXPECT_EQ(round_half_even(1.5f), 2);
  EXPECT_EQ(round_half_even(-2.5f), -2);
  EXPECT_EQ(round_half_even(126.5f), 126);
}
