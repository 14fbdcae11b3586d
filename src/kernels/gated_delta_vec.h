// The delta rule of one value head (gated_delta_head.h) written over a vector of float lanes of j,
// for gated_delta_avx2.cpp and gated_delta_avx512.cpp (V: that file's traits, each function one
// instruction). Include only from those files.
//
// The same bits as delta_head_body: every lane j performs the scalar form's IEEE operations in its
// order (i ascending; mem_j = mem_j + (S_ij * decay) * k_i from 0; d_j = (v_j - mem_j) * beta;
// r = S_ij * decay + k_i * d_j; o_j = o_j + r * q_i from 0; each product rounded before its add:
// the build has no FMA contraction), and lanes are independent, so how j is cut into vectors and
// chunks changes nothing.
//
// Why not the compiler's vector form of delta_head_body: it kept mem and o in memory, a load and a
// store of each per i and vector, and ran at 2.8 us a 128 x 128 head from L1/L2 on the Xeon guest
// of BENCHMARKS 39 (the FP ports half idle). Here the first pass holds mem for up to kAcc vectors
// of j in registers over all i; the second holds d and o (kUpd vectors each) and stores each S row
// chunk once. While the second pass runs from cache, the state of the head the caller runs next
// (`next`, the same size) is prefetched into L2 a row per i, so its first pass does not wait on
// DRAM with the FP ports idle (the states, 12.6 MiB a token at Qwen3.6-35B-A3B's shape, are
// evicted by the weights between tokens).
#pragma once
#include <cstdint>

#include "kernels/state_rows.h"

namespace nvfp4 {
namespace {

template <class V, int NJ>
inline void delta_mem_chunk(const float* __restrict S, const float* __restrict k, float decay, float* __restrict mem,
                            int64_t dk, int64_t dv, int64_t j0) {
  constexpr int64_t L = V::kLanes;
  typename V::F acc[NJ];
  for (int u = 0; u < NJ; ++u) acc[u] = V::zero();
  const typename V::F dec = V::set1(decay);
  for (int64_t i = 0; i < dk; ++i) {
    const float* row = S + i * dv + j0;
    const typename V::F ki = V::set1(k[i]);
    for (int u = 0; u < NJ; ++u) acc[u] = V::add(acc[u], V::mul(V::mul(V::load(row + u * L), dec), ki));
  }
  for (int u = 0; u < NJ; ++u) V::store(mem + j0 + u * L, acc[u]);
}

template <class V, int NJ>
inline void delta_update_chunk(float* __restrict S, const float* __restrict k, const float* __restrict q, float decay,
                               const float* __restrict d, float* __restrict o, int64_t dk, int64_t dv, int64_t j0,
                               const float* next) {
  constexpr int64_t L = V::kLanes;
  typename V::F dd[NJ], acc[NJ];
  for (int u = 0; u < NJ; ++u) dd[u] = V::load(d + j0 + u * L), acc[u] = V::zero();
  const typename V::F dec = V::set1(decay);
  for (int64_t i = 0; i < dk; ++i) {
    float* row = S + i * dv + j0;
    prefetch_state_row(next, i, dv);  // the next head's row i, all of it (the first chunk brings it)
    const typename V::F ki = V::set1(k[i]), qi = V::set1(q[i]);
    for (int u = 0; u < NJ; ++u) {
      const typename V::F r = V::add(V::mul(V::load(row + u * L), dec), V::mul(ki, dd[u]));
      V::store(row + u * L, r);
      acc[u] = V::add(acc[u], V::mul(r, qi));
    }
  }
  for (int u = 0; u < NJ; ++u) V::store(o + j0 + u * L, acc[u]);
}

// Lanes [j0, dv) of both passes one at a time (the part of d_v below a vector).
inline void delta_tail_lanes(float* __restrict S, const float* __restrict k, const float* __restrict q,
                             const float* __restrict v, float decay, float beta, float* __restrict mem,
                             float* __restrict o, int64_t dk, int64_t dv, int64_t j0) {
  for (int64_t j = j0; j < dv; ++j) {
    float m = 0.0f;
    for (int64_t i = 0; i < dk; ++i) m = m + (S[i * dv + j] * decay) * k[i];
    mem[j] = (v[j] - m) * beta;
    float acc = 0.0f;
    for (int64_t i = 0; i < dk; ++i) {
      const float r = S[i * dv + j] * decay + k[i] * mem[j];
      S[i * dv + j] = r;
      acc = acc + r * q[i];
    }
    o[j] = acc;
  }
}

// kAcc: vectors of mem a first-pass chunk holds; kUpd: vectors of d and of o a second-pass chunk
// holds (both within the ISA's register file with the temporaries).
template <class V, int kAcc, int kUpd>
inline void delta_head_vec(float* __restrict S, const float* __restrict k, const float* __restrict q,
                           const float* __restrict v, float decay, float beta, float* __restrict mem,
                           float* __restrict o, int64_t dk, int64_t dv, const float* next) {
  constexpr int64_t L = V::kLanes;
  const int64_t dv_vec = dv / L * L;
  int64_t j = 0;
  for (; j + kAcc * L <= dv_vec; j += kAcc * L) delta_mem_chunk<V, kAcc>(S, k, decay, mem, dk, dv, j);
  for (; j < dv_vec; j += L) delta_mem_chunk<V, 1>(S, k, decay, mem, dk, dv, j);
  for (j = 0; j < dv_vec; j += L) V::store(mem + j, V::mul(V::sub(V::load(v + j), V::load(mem + j)), V::set1(beta)));
  for (j = 0; j + kUpd * L <= dv_vec; j += kUpd * L) delta_update_chunk<V, kUpd>(S, k, q, decay, mem, o, dk, dv, j, j == 0 ? next : nullptr);
  for (; j < dv_vec; j += L) delta_update_chunk<V, 1>(S, k, q, decay, mem, o, dk, dv, j, j == 0 ? next : nullptr);
  delta_tail_lanes(S, k, q, v, decay, beta, mem, o, dk, dv, dv_vec);
}

}  // namespace
}  // namespace nvfp4
