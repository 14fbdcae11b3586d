// One Mamba-2 head's state update and output for one token (kernels/mamba2.h has the derivation):
//   xdt_p = x_p * dt;  S_np = S_np * dA + B_n * xdt_p;  y_p = sum_n S_np C_n (n ascending);  y_p += D x_p
// Every p is its own lane, each product rounded before its add (the build has no FMA
// contraction), so a vector form over lanes of p (mamba2_scan_vec.h, in mamba2_avx2.cpp and
// mamba2_avx512.cpp) computes exactly the scalar form's bits.
#pragma once
#include <cstdint>

#include "nvfp4/kernels.h"

namespace nvfp4 {
namespace kern {
// next: the state the caller runs next, which the vector forms prefetch (mamba2_scan_vec.h), or null.
using Mamba2ScanFn = void (*)(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt,
                              float* y, int64_t ds, int64_t hd, const float* next);
void mamba2_scan_scalar(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                        int64_t ds, int64_t hd, const float* next);
void mamba2_scan_avx2(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                      int64_t ds, int64_t hd, const float* next);
void mamba2_scan_avx512(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                        int64_t ds, int64_t hd, const float* next);
// The form for `isa` (AVX-VNNI machines take the AVX2 one).
inline Mamba2ScanFn mamba2_scan(Isa isa) {
  return isa == Isa::avx512 || isa == Isa::amx ? mamba2_scan_avx512 : isa == Isa::avx2 || isa == Isa::avxvnni ? mamba2_scan_avx2 : mamba2_scan_scalar;
}
}  // namespace kern

namespace {
inline void mamba2_scan_body(float* __restrict S, const float* __restrict x, const float* __restrict B, const float* __restrict C,
                             float dt, float dA, float Dh, float* __restrict xdt, float* __restrict y, int64_t ds, int64_t hd) {
  for (int64_t p = 0; p < hd; ++p) xdt[p] = x[p] * dt;
  for (int64_t p = 0; p < hd; ++p) y[p] = 0.0f;
  for (int64_t n = 0; n < ds; ++n) {
    float* __restrict row = S + n * hd;
    const float bn = B[n], cn = C[n];
    for (int64_t p = 0; p < hd; ++p) {
      const float r = row[p] * dA + bn * xdt[p];
      row[p] = r;
      y[p] = y[p] + r * cn;
    }
  }
  for (int64_t p = 0; p < hd; ++p) y[p] = y[p] + Dh * x[p];
}
}  // namespace
}  // namespace nvfp4
