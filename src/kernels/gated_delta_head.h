// The delta rule of one value head for one token (kernels/gated_delta.h has the derivation), the
// part of the Gated DeltaNet mixer that touches the head's whole state S [d_k][d_v]:
//   S *= decay;  mem_j = sum_i S_ij k_i;  d_j = (v_j - mem_j) beta;  S_ij += k_i d_j;  o_j = sum_i S_ij q_i
// Every j is its own lane: i ascending, each product rounded before its add (the build has no FMA
// contraction). This is the scalar reference; the AVX2 and AVX-512 forms (gated_delta_vec.h) do
// each lane's operations in this order, 8 or 16 lanes of j, so they compute exactly its bits.
#pragma once
#include <cstdint>

namespace nvfp4 {
namespace {

inline void delta_head_body(float* __restrict S, const float* __restrict k, const float* __restrict q,
                            const float* __restrict v, float decay, float beta, float* __restrict mem,
                            float* __restrict o, int64_t dk, int64_t dv) {
  // The decayed state S_ij * decay is computed in both passes (the same float product, so the
  // same bits) and stored once, in the second: one write of S per token instead of two.
  for (int64_t j = 0; j < dv; ++j) mem[j] = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    const float* __restrict row = S + i * dv;
    const float ki = k[i];
    for (int64_t j = 0; j < dv; ++j) mem[j] = mem[j] + (row[j] * decay) * ki;
  }
  for (int64_t j = 0; j < dv; ++j) mem[j] = (v[j] - mem[j]) * beta;  // the delta
  for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
  for (int64_t i = 0; i < dk; ++i) {
    float* __restrict row = S + i * dv;
    const float ki = k[i], qi = q[i];
    for (int64_t j = 0; j < dv; ++j) {
      const float r = row[j] * decay + ki * mem[j];
      row[j] = r;
      o[j] = o[j] + r * qi;
    }
  }
}

}  // namespace
}  // namespace nvfp4
