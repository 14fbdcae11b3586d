// 16 float lanes on AVX-512, the traits the recurrent state kernels are written over
// (gated_delta_vec.h, mamba2_scan_vec.h): each function one instruction, multiply and add unfused.
// Include only from *_avx512.cpp files (compiled with AVX-512 F).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nvfp4::kern {
namespace {
struct F512 {
  using F = __m512;
  static constexpr int64_t kLanes = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
};
}  // namespace
}  // namespace nvfp4::kern
