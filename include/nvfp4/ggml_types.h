// ggml tensor types as GGUF stores them: ids, block sizes, and dequantization to float32.
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4 {

namespace ggml {
inline constexpr uint32_t F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
                          Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14,
                          Q8_K = 15, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
                          NVFP4 = 40;
}  // namespace ggml

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  int64_t block_values;  // values per block (1 for plain types)
  int64_t block_bytes;   // bytes per block
  bool dequantizable;    // ggml_dequantize_row supports it
};

// nullptr for a type id this project does not know.
const GgmlTypeInfo* ggml_type_info(uint32_t type);
// The name of a type id ("Q4_1"), or "type N" when unknown.
std::string ggml_type_name(uint32_t type);
// Bytes of a row of n values; throws nvfp4::Error when n is not a multiple of the block size.
int64_t ggml_row_bytes(uint32_t type, int64_t n);
// Dequantizes n values (n a multiple of the block size) to float32. Throws nvfp4::Error naming the
// type when it is not dequantizable. NVFP4 rows decode with scale 1 (the `.scale` tensor applies
// outside).
void ggml_dequantize_row(uint32_t type, const void* src, float* dst, int64_t n);

}  // namespace nvfp4
