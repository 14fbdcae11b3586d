// Scalar codecs (SPEC.md section 1). Derivations:
//   E4M3FN byte b = s eeee mmm. e > 0: (1 + m/8) * 2^(e-7); e == 0: m * 2^-9.
//   Its integer twin q9 = value * 2^9: e == 0 gives m; e > 0 gives (8 + m) * 2^(e-1).
//   The largest finite byte 0x7E = 1.75 * 2^8 = 448 has q9 = 14 * 2^14 = 229376.
//   Encoding: within one binade [2^e, 2^(e+1)) the E4M3 grid has spacing 2^(e-3) (e >= -6), and
//   below 2^-6 the subnormal spacing 2^-9. Dividing by the spacing is exact in float (a power of
//   two), so rint() of the quotient is the round-to-nearest-even of the value itself.
#include "nvfp4/codec.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace nvfp4 {

namespace {
constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
}  // namespace

float e2m1_to_float(uint8_t code) { return kE2M1[code & 0xF]; }

uint8_t float_to_e2m1(float v) {
  const uint8_t sign = v < 0.0f ? 0x8 : 0x0;
  const float a = std::fabs(v);
  uint8_t mag;
  if (a <= 0.25f) mag = 0;        // tie 0.25 -> 0 (even)
  else if (a < 0.75f) mag = 1;    // tie 0.75 -> 1.0 (even)
  else if (a <= 1.25f) mag = 2;   // tie 1.25 -> 1.0
  else if (a < 1.75f) mag = 3;    // tie 1.75 -> 2.0
  else if (a <= 2.5f) mag = 4;    // tie 2.5 -> 2.0
  else if (a < 3.5f) mag = 5;     // tie 3.5 -> 4.0
  else if (a <= 5.0f) mag = 6;    // tie 5 -> 4.0
  else mag = 7;                   // saturate at 6
  return sign | mag;
}

bool e4m3_is_nan(uint8_t b) { return (b & 0x7F) == 0x7F; }

float e4m3_to_float(uint8_t b) {
  if (e4m3_is_nan(b)) {  // 0x7F / 0xFF: a quiet NaN that keeps the byte's sign, as ml_dtypes does
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return (b & 0x80) ? -nan : nan;
  }
  const int e = (b >> 3) & 0xF;
  const int m = b & 0x7;
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                           : std::ldexp(static_cast<float>(8 + m), e - 10);
  return (b & 0x80) ? -mag : mag;
}

int32_t e4m3_q9(uint8_t b) {
  const int e = (b >> 3) & 0xF;
  const int m = b & 0x7;
  const int32_t mag = e == 0 ? m : (8 + m) << (e - 1);
  return (b & 0x80) ? -mag : mag;
}

float e8m0_to_float(uint8_t b) {
  if (b == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(b) - 127);  // 2^-127 for byte 0: a subnormal, exact
}

float ue4m3_to_float(uint8_t b) { return e4m3_to_float(b & 0x7F); }

uint8_t float_to_e4m3(float v) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const float a = std::fabs(v);
  if (!(a <= 464.0f)) return sign | 0x7F;  // NaN, Inf, or rounds past 448
  if (a < 0.015625f) {                                        // below 2^-6: subnormal grid 2^-9
    const int q = static_cast<int>(std::rint(a * 512.0f));    // 0..8; 8 is 2^-6 = byte 0x08
    return sign | static_cast<uint8_t>(q);
  }
  int e2;
  std::frexp(a, &e2);             // a = f * 2^e2, f in [0.5, 1): binade exponent e = e2 - 1
  const int e = e2 - 1;
  int q = static_cast<int>(std::rint(std::ldexp(a, 3 - e)));  // in [8, 16]
  int be = e + 7;
  if (q == 16) { q = 8; ++be; }
  if (be > 15) return sign | 0x7F;
  const uint8_t byte = static_cast<uint8_t>((be << 3) | (q - 8));
  return sign | byte;  // 464 ties down to 448 (0x7E, even mantissa)
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int e = (h >> 10) & 0x1F;
  const uint32_t m = h & 0x3FF;
  float mag;
  if (e == 0) mag = std::ldexp(static_cast<float>(m), -24);
  else if (e == 31) mag = m ? std::numeric_limits<float>::quiet_NaN()
                            : std::numeric_limits<float>::infinity();
  else mag = std::ldexp(static_cast<float>(m | 0x400), e - 25);
  uint32_t bits = std::bit_cast<uint32_t>(mag) | sign;
  if (e == 31 && m) bits |= (m << 13);  // keep the NaN payload
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000) return sign | 0x7E00 | static_cast<uint16_t>((ax >> 13) & 0x3FF);  // NaN
  const float a = std::bit_cast<float>(ax);
  if (a >= 65520.0f) return sign | 0x7C00;  // rounds to Inf (65520 is the midpoint past 65504)
  if (a < 6.103515625e-05f) {               // below 2^-14: subnormal grid 2^-24
    return sign | static_cast<uint16_t>(std::rint(a * 16777216.0f));  // 1024 -> 0x0400 ok
  }
  int e2;
  std::frexp(a, &e2);
  const int e = e2 - 1;                          // binade exponent, -14..15
  int q = static_cast<int>(std::rint(std::ldexp(a, 10 - e)));  // in [1024, 2048]
  int be = e + 15;
  if (q == 2048) { q = 1024; ++be; }
  return sign | static_cast<uint16_t>((be << 10) | (q - 1024));
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  // NaN: the canonical quiet NaN with the input's sign (payload dropped), as ml_dtypes and
  // PyTorch write it.
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>(((x >> 16) & 0x8000) | 0x7FC0);
  const uint32_t rounded = x + 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(rounded >> 16);
}

int32_t round_half_even(float v) { return static_cast<int32_t>(std::nearbyint(v)); }

}  // namespace nvfp4
