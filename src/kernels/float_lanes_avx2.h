// 8 float lanes on AVX2, the traits the recurrent state kernels are written over
// (gated_delta_vec.h, mamba2_scan_vec.h): each function one instruction, multiply and add unfused.
// Include only from *_avx2.cpp files (compiled with AVX2).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nvfp4::kern {
namespace {
struct F256 {
  using F = __m256;
  static constexpr int64_t kLanes = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
};
}  // namespace
}  // namespace nvfp4::kern
