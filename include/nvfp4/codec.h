// Scalar codecs of the NVFP4 contract (SPEC.md section 1) and the float16/bfloat16 conversions
// the engine needs. Every function here is exhaustively tested over its whole input domain.
#pragma once
#include <cstdint>

namespace nvfp4 {

// ---- E2M1: 4-bit code, bit 3 sign, bits 0-2 magnitude index --------------------------------
// Codes 0-7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8-15: the negatives (8 = -0). No Inf/NaN.
float e2m1_to_float(uint8_t code);  // uses code & 0xF
// Integer twin: value * 2, in {0, +-1, +-2, +-3, +-4, +-6, +-8, +-12}. Exact.
inline constexpr int8_t kE2M1Q1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
inline int e2m1_q1(uint8_t code) { return kE2M1Q1[code & 0xF]; }
// Round to the nearest E2M1 value, ties to the even code, saturating at +-6 (SPEC.md section 4,
// step 3). The sign comes from v < 0, so small negatives give code 8 (-0). NaN is the caller's
// business (the quantizer refuses it before).
uint8_t float_to_e2m1(float v);

// ---- E4M3FN: sign, 4 exponent bits (bias 7), 3 mantissa bits. Max 448. NaN at 0x7F/0xFF. ----
float e4m3_to_float(uint8_t byte);  // quiet NaN for 0x7F and 0xFF, with the byte's sign
bool e4m3_is_nan(uint8_t byte);
// Round to nearest, ties to even. Magnitudes at or above the midpoint 464 between 448 and the
// next (absent) step, Inf and NaN all give NaN (0x7F, sign kept), as ml_dtypes does.
uint8_t float_to_e4m3(float v);
// Integer twin: value * 2^9, an exact integer in [0, 229376] for every finite non-negative byte
// (0x00..0x7E); the sign bit is honoured (negative result) for 0x80..0xFE. Precondition: not NaN.
int32_t e4m3_q9(uint8_t byte);

// ---- E8M0 (OCP MX scale): an unsigned biased exponent, 2^(byte - 127); 0xFF is NaN. ----------
// Byte 0 is 2^-127 (a float32 subnormal, exact). MXFP8 keeps one per 32 E4M3 values.
float e8m0_to_float(uint8_t byte);
// The largest E8M0 byte whose scale keeps every finite E4M3 value finite in float32:
// 448 * 2^(246 - 127) = 1.75 * 2^127 < FLT_MAX; byte 247 would take 448 past it.
inline constexpr uint8_t kE8m0MaxForE4m3 = 246;

// ---- UE4M3: ggml's name for the block scale: the byte as E4M3 with the sign bit ignored. -----
float ue4m3_to_float(uint8_t byte);

// ---- IEEE binary16 and bfloat16, round to nearest even both ways ---------------------------
// NaN keeps its sign and payload and leaves quiet (quiet bit set), as x86 F16C's VCVTPH2PS and
// VCVTPS2PH do; numpy keeps a signalling NaN signalling (docs/FORMAT.md, "ml_dtypes").
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);  // NaN -> canonical quiet NaN 0x7FC0 | sign, never Inf

// Round half to even for float -> integer, as the a16q8 contract pins it.
int32_t round_half_even(float v);

}  // namespace nvfp4
