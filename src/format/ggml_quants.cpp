// ggml's block-quantized formats dequantized to float32, each in ggml's own float operation order
// (so that our values equal ggml's and PyPI gguf's bit for bit):
//   Q4_0  32 values, 18 B: f16 d, qs[16];  x[j] = (lo(qs[j]) - 8) * d, x[j+16] = (hi(qs[j]) - 8) * d
//   Q4_1  32 values, 20 B: f16 d, f16 m, qs[16];  x[j] = lo(qs[j]) * d + m, x[j+16] = hi * d + m
//   Q8_0  32 values, 34 B: f16 d, i8 qs[32];  x = qs * d
//   Q4_K 256 values, 144 B: f16 d, f16 dmin, scales[12] (6-bit scale/min pairs for 8 sub-blocks of
//        32), qs[128];  x = (d * sc) * q - (dmin * m)
//   Q6_K 256 values, 210 B: ql[128] (low 4 bits), qh[64] (high 2 bits), i8 scales[16], f16 d;
//        x = (d * scale) * (q - 32)
#include "format/ggml_quants.h"

#include <cstring>

#include "nvfp4/codec.h"
#include "nvfp4/ggml_types.h"

namespace nvfp4 {

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

void q4_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

void q4_1(const uint8_t* b, float* y) {
  const float d = f16_at(b), m = f16_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0xF) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

void q8_0(const uint8_t* b, float* y) {
  const float d = f16_at(b);
  const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

void scale_min_k4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void q4_k(const uint8_t* b, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    uint8_t sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

}  // namespace

bool dequantize_row_quant(uint32_t type, const uint8_t* src, float* dst, int64_t n) {
  void (*fn)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case ggml::Q4_0: fn = q4_0; break;
    case ggml::Q4_1: fn = q4_1; break;
    case ggml::Q8_0: fn = q8_0; break;
    case ggml::Q4_K: fn = q4_k; break;
    case ggml::Q6_K: fn = q6_k; break;
    default: return false;
  }
  const GgmlTypeInfo* t = ggml_type_info(type);
  for (int64_t b = 0; b < n / t->block_values; ++b) fn(src + b * t->block_bytes, dst + b * t->block_values);
  return true;
}

}  // namespace nvfp4
