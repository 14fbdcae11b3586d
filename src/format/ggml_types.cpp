// The ggml type table and the float dequantizers dispatched by type. The quantized formats
// (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K) live in ggml_quants.cpp; NVFP4 decodes through codec.h.
#include "nvfp4/ggml_types.h"

#include <cstring>

#include "format/ggml_quants.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
constexpr GgmlTypeInfo kTypes[] = {
    {ggml::F32, "F32", 1, 4, true},       {ggml::F16, "F16", 1, 2, true},
    {ggml::Q4_0, "Q4_0", 32, 18, true},   {ggml::Q4_1, "Q4_1", 32, 20, true},
    {ggml::Q5_0, "Q5_0", 32, 22, false},  {ggml::Q5_1, "Q5_1", 32, 24, false},
    {ggml::Q8_0, "Q8_0", 32, 34, true},   {ggml::Q8_1, "Q8_1", 32, 36, false},
    {ggml::Q2_K, "Q2_K", 256, 84, false}, {ggml::Q3_K, "Q3_K", 256, 110, false},
    {ggml::Q4_K, "Q4_K", 256, 144, true}, {ggml::Q5_K, "Q5_K", 256, 176, false},
    {ggml::Q6_K, "Q6_K", 256, 210, true}, {ggml::Q8_K, "Q8_K", 256, 292, false},
    {ggml::I8, "I8", 1, 1, false},        {ggml::I16, "I16", 1, 2, false},
    {ggml::I32, "I32", 1, 4, false},      {ggml::I64, "I64", 1, 8, false},
    {ggml::F64, "F64", 1, 8, false},      {ggml::BF16, "BF16", 1, 2, true},
    {ggml::NVFP4, "NVFP4", 64, 36, true},
};
}  // namespace

const GgmlTypeInfo* ggml_type_info(uint32_t type) {
  for (const auto& t : kTypes) if (t.id == type) return &t;
  return nullptr;
}

std::string ggml_type_name(uint32_t type) {
  const GgmlTypeInfo* t = ggml_type_info(type);
  return t ? t->name : "type " + std::to_string(type);
}

int64_t ggml_row_bytes(uint32_t type, int64_t n) {
  const GgmlTypeInfo* t = ggml_type_info(type);
  if (!t) throw Error("", "ggml type", "unknown ggml type", "a known ggml type id", std::to_string(type));
  if (n % t->block_values != 0) {
    throw Error("", "row length", std::string("row length must be a multiple of the ") + t->name + " block",
                "n % " + std::to_string(t->block_values) + " == 0", "n = " + std::to_string(n));
  }
  return n / t->block_values * t->block_bytes;
}

void ggml_dequantize_row(uint32_t type, const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  switch (type) {
    case ggml::F32: std::memcpy(dst, p, 4 * n); return;
    case ggml::F16:
      for (int64_t i = 0; i < n; ++i) { uint16_t h; std::memcpy(&h, p + 2 * i, 2); dst[i] = half_to_float(h); }
      return;
    case ggml::BF16:
      for (int64_t i = 0; i < n; ++i) { uint16_t h; std::memcpy(&h, p + 2 * i, 2); dst[i] = bf16_to_float(h); }
      return;
    case ggml::NVFP4:
      for (int64_t b = 0; b < n / 64; ++b) {
        const uint8_t* blk = p + 36 * b;
        for (int s = 0; s < 4; ++s) {
          const float d = ue4m3_to_float(blk[s]);
          for (int j = 0; j < 8; ++j) {
            const uint8_t q = blk[4 + s * 8 + j];
            dst[b * 64 + s * 16 + j] = e2m1_to_float(q & 0xF) * d;
            dst[b * 64 + s * 16 + j + 8] = e2m1_to_float(q >> 4) * d;
          }
        }
      }
      return;
    default: break;
  }
  if (dequantize_row_quant(type, p, dst, n)) return;
  throw Error("", "ggml type", "cannot dequantize this ggml tensor type",
              "F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K or NVFP4", ggml_type_name(type));
}

}  // namespace nvfp4
