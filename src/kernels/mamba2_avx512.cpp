// One Mamba-2 head's scan (mamba2_scan.h) on avx512: mamba2_scan_vec.h over 16 lanes of p, xdt and y
// of up to 8 vectors each in registers. The same bits as the scalar form (tests/test_mamba2.cpp, ==).
#include <immintrin.h>

#include "kernels/mamba2_scan.h"
#include "kernels/mamba2_scan_vec.h"

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
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
};
}  // namespace

void mamba2_scan_avx512(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                      int64_t ds, int64_t hd, const float* next) {
  mamba2_scan_vec<F512, 8>(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd, next);
}
}  // namespace nvfp4::kern
