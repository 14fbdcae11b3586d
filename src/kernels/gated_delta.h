// The Gated DeltaNet token mixer of Qwen3.5 / Qwen3.6 / Qwen3-Next ("linear attention" layers),
// between its input projections and out_proj, one token at a time in a pinned order.
//
// Per token (transformers' Qwen3_5GatedDeltaNet / Qwen3NextGatedDeltaNet, decode form):
//   x = SiLU(causal depthwise conv1d over the last `kernel` inputs of qkv)   [conv_dim]
//   q, k, v = split(x, key_dim, key_dim, value_dim); heads of d_k, d_k, d_v
//   q = l2norm(q) / sqrt(d_k); k = l2norm(k)        (l2norm: x * rsqrt(sum x^2 + 1e-6))
//   g = -exp(A_log) * softplus(a + dt_bias); beta = sigmoid(b)       (per value head)
//   value head h reads key head h / (n_v_heads / n_k_heads) (repeat_interleave), and its state
//   S [d_k][d_v]:  S *= exp(g);  m_j = sum_i S_ij k_i;  d_j = (v_j - m_j) beta;
//                  S_ij += k_i d_j;  o_j = sum_i S_ij q_i
//   y = RMSNorm(o over d_v, eps) * norm_w * SiLU(z)                 (per value head)
//
// Why one token at a time, also for prompts: the recurrence is sequential in the token anyway,
// and doing it token by token makes a prompt's bits the same whether it runs in one step, token
// by token, or in chunks beside other sequences (issue 32); transformers' chunked prompt form
// (WY representation) computes the same function in another order. Cost per token and layer:
// about 4 n_v_heads d_k d_v multiply-adds (2M on Qwen3.6-35B-A3B), small beside its projections.
//
// The pinned order (docs/DETERMINISM.md): the conv sums its kernel taps oldest first in float;
// the l2norm and RMSNorm sums run in double over the head, ascending, and scale in double
// rounded once to float; g, exp(g), softplus and sigmoid are computed in double with pinned::exp
// and pinned::log and rounded once to float; the state update and both dot products run in float
// with i ascending, each product rounded before its add (the build has no FMA contraction), so a
// vector form over j (d_v lanes) gives the same bits as this scalar one.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nvfp4 {

struct GatedDeltaShape {
  int64_t n_k_heads = 0, n_v_heads = 0, d_k = 0, d_v = 0, conv_kernel = 0;
  int64_t key_dim() const { return n_k_heads * d_k; }
  int64_t value_dim() const { return n_v_heads * d_v; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  // A sequence's recurrent state for one layer, in floats: the conv window (the last kernel - 1
  // inputs per channel, [conv_dim][kernel - 1], oldest first) and S ([n_v_heads][d_k][d_v]).
  size_t conv_state_floats() const { return static_cast<size_t>(conv_dim() * (conv_kernel - 1)); }
  size_t ssm_state_floats() const { return static_cast<size_t>(n_v_heads * d_k * d_v); }
  // Throws nvfp4::Error naming `where` (the layer) and the field when the shape is not one this
  // code runs: positive sizes, n_v_heads a multiple of n_k_heads, a kernel of 2 to 8 taps.
  void check(const char* where) const;
};

struct GatedDeltaWeights {
  const float* conv_w = nullptr;   // [conv_dim][kernel]
  const float* A_log = nullptr;    // [n_v_heads]
  const float* dt_bias = nullptr;  // [n_v_heads]
  const float* norm_w = nullptr;   // [d_v], the gated RMSNorm's weight (used as is, not 1 + w)
  float eps = 1e-6f;               // the gated RMSNorm's epsilon (the config's rms_norm_eps)
};

// The part of one token that key head kh owns: the conv of its q, k and v channels, their
// normalisation, and its n_v_heads / n_k_heads value heads (kh * rep ..), their states and
// outputs. Groups share nothing, so every group of a token, in any order and on any threads, is
// gated_delta_token, bit for bit. Arguments as gated_delta_token's; scratch holds
// group_scratch_floats(s) floats.
void gated_delta_group(const GatedDeltaShape& s, const GatedDeltaWeights& w, int64_t kh, const float* qkv, const float* z,
                       const float* a, const float* b, float* conv_state, float* ssm_state, float* y, float* scratch);
inline int64_t group_scratch_floats(const GatedDeltaShape& s) {
  return 2 * s.d_k + (s.n_v_heads / s.n_k_heads + 1) * s.d_v;
}

// One token of one sequence. qkv [conv_dim] is in_proj_qkv's output (transformers' q|k|v channel
// order), z [value_dim], a and b [n_v_heads]; conv_state and ssm_state are the sequence's state
// for this layer, updated in place; y [value_dim] receives the output that goes into out_proj.
// scratch holds group_scratch_floats(s) floats.
void gated_delta_token(const GatedDeltaShape& s, const GatedDeltaWeights& w, const float* qkv, const float* z,
                       const float* a, const float* b, float* conv_state, float* ssm_state, float* y, float* scratch);

}  // namespace nvfp4
