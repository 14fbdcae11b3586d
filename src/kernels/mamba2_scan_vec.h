// One Mamba-2 head's scan (mamba2_scan.h) written over a vector of float lanes of p, for
// mamba2_avx2.cpp and mamba2_avx512.cpp (V: that file's traits, each function one instruction).
// Include only from those files.
//
// The same bits as mamba2_scan_body: every lane p performs the scalar form's IEEE operations in
// its order (xdt = x * dt; r = S_np * dA + B_n * xdt; y = y + r * C_n from 0, n ascending; then
// y + D * x; each product rounded before its add: the build has no FMA contraction), and lanes are
// independent, so how p is cut into vectors and chunks changes nothing.
//
// Why not the compiler's vector form of the body: it kept y in memory (a load and a store per n
// and vector). Here xdt and y of up to NJ vectors of p stay in registers over all n, and each S
// row chunk is loaded and stored once; while a head runs from cache the next head's state
// (`next`, the caller's, or null) is prefetched into L2 a row per n (gated_delta_vec.h, the same
// reasoning: the states are evicted by the weights between tokens).
#pragma once
#include <cstdint>

#include "kernels/state_rows.h"

namespace nvfp4 {
namespace {

template <class V, int NJ>
inline void mamba2_scan_chunk(float* __restrict S, const float* __restrict x, const float* __restrict B,
                              const float* __restrict C, float dt, float dA, float Dh, float* __restrict xdt,
                              float* __restrict y, int64_t ds, int64_t hd, int64_t p0, const float* next) {
  constexpr int64_t L = V::kLanes;
  typename V::F xd[NJ], acc[NJ];
  for (int u = 0; u < NJ; ++u) {
    xd[u] = V::mul(V::load(x + p0 + u * L), V::set1(dt));
    V::store(xdt + p0 + u * L, xd[u]);
    acc[u] = V::zero();
  }
  const typename V::F a = V::set1(dA);
  for (int64_t n = 0; n < ds; ++n) {
    float* row = S + n * hd + p0;
    prefetch_state_row(next, n, hd);  // the next head's row n, all of it (the first chunk brings it)
    const typename V::F bn = V::set1(B[n]), cn = V::set1(C[n]);
    for (int u = 0; u < NJ; ++u) {
      const typename V::F r = V::add(V::mul(V::load(row + u * L), a), V::mul(bn, xd[u]));
      V::store(row + u * L, r);
      acc[u] = V::add(acc[u], V::mul(r, cn));
    }
  }
  for (int u = 0; u < NJ; ++u) V::store(y + p0 + u * L, V::add(acc[u], V::mul(V::set1(Dh), V::load(x + p0 + u * L))));
}

// NJ: vectors of p a chunk holds (xdt and y, NJ each, within the register file).
template <class V, int NJ>
inline void mamba2_scan_vec(float* __restrict S, const float* __restrict x, const float* __restrict B, const float* __restrict C,
                            float dt, float dA, float Dh, float* __restrict xdt, float* __restrict y, int64_t ds, int64_t hd,
                            const float* next) {
  constexpr int64_t L = V::kLanes;
  const int64_t hd_vec = hd / L * L;
  int64_t p = 0;
  for (; p + NJ * L <= hd_vec; p += NJ * L) mamba2_scan_chunk<V, NJ>(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd, p, p == 0 ? next : nullptr);
  for (; p < hd_vec; p += L) mamba2_scan_chunk<V, 1>(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd, p, p == 0 ? next : nullptr);
  for (; p < hd; ++p) {  // the lanes below a vector, one at a time
    xdt[p] = x[p] * dt;
    float acc = 0.0f;
    for (int64_t n = 0; n < ds; ++n) {
      const float r = S[n * hd + p] * dA + B[n] * xdt[p];
      S[n * hd + p] = r;
      acc = acc + r * C[n];
    }
    y[p] = acc + Dh * x[p];
  }
}

}  // namespace
}  // namespace nvfp4
