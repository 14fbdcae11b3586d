// The Mamba-2 (SSD) token mixer of Nemotron-H, between in_proj and out_proj, one token at a time
// in a pinned order.
//
// Per token (transformers' NemotronHMamba2Mixer, recurrent form; mamba_ssm's selective_state_update):
//   in_proj(xn) = z [inner] | xBC [conv_dim] | dt [n_heads]       (inner = n_heads * head_dim)
//   xBC = SiLU(causal depthwise conv1d over the last `kernel` inputs + bias)
//   x, B, C = split(xBC, inner, n_groups * d_state, n_groups * d_state)
//   head h reads group g = h / (n_heads / n_groups) of B and C, and its state S_h [d_state][head_dim]:
//     dt_h = clamp(softplus(dt_h + dt_bias_h), dt_min, dt_max);  dA = exp(dt_h * -exp(A_log_h))
//     S_np = S_np * dA + B_n * (x_p * dt_h);  y_p = sum_n S_np C_n + D_h x_p
//   y = RMSNorm over groups of inner / n_groups channels of (y * SiLU(z)), times norm_w
//     (Zamba2RMSNormGated with norm_before_gate=False)
//
// Why one token at a time, also for prompts: the scan is sequential in the token anyway, and doing
// it token by token makes a prompt's bits the same whether it runs in one step, token by token, or
// in chunks beside other sequences (docs/DETERMINISM.md); transformers' chunked prompt form (SSD's
// block decomposition) computes the same function in another order. Cost per token and layer:
// about 4 n_heads d_state head_dim multiply-adds, small beside the projections.
//
// The pinned order: the conv sums its taps oldest first in float, then adds the bias; softplus,
// the clamp, exp(A_log) and exp(dt * A) in double with pinned::exp / pinned::log, rounded once to
// float; the state update and the output sum over n run in float with n ascending, each product
// rounded before its add (the build has no FMA contraction), every p its own lane, so a vector form
// over p gives the scalar form's bits; the norm's sum of squares in double, ascending over the
// group, its scale in double rounded once.
//
// A group of B and C and its heads share nothing with another group (the gated norm's group is
// exactly the group's heads), so the groups of a token run in any order on any threads.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nvfp4 {

struct Mamba2Shape {
  int64_t n_heads = 0, head_dim = 0, d_state = 0, n_groups = 0, conv_kernel = 0;
  int64_t inner() const { return n_heads * head_dim; }
  int64_t conv_dim() const { return inner() + 2 * n_groups * d_state; }
  int64_t in_proj_rows() const { return inner() + conv_dim() + n_heads; }
  // A sequence's state for one layer: the conv window ([conv_dim][kernel - 1], oldest first),
  // then S ([n_heads][d_state][head_dim]).
  size_t conv_state_floats() const { return static_cast<size_t>(conv_dim() * (conv_kernel - 1)); }
  size_t ssm_state_floats() const { return static_cast<size_t>(n_heads * d_state * head_dim); }
  // Throws nvfp4::Error naming `where` and the config field when the shape is not one this code
  // runs: positive sizes, n_heads a multiple of n_groups, a kernel of 2 to 8 taps.
  void check(const char* where) const;
};

struct Mamba2Weights {
  const float* conv_w = nullptr;   // [conv_dim][kernel]
  const float* conv_b = nullptr;   // [conv_dim], or null
  const float* A_log = nullptr;    // [n_heads]
  const float* dt_bias = nullptr;  // [n_heads]
  const float* D = nullptr;        // [n_heads]
  const float* norm_w = nullptr;   // [inner]
  float eps = 1e-5f;
  double dt_min = 0.0, dt_max = 0.0;  // dt_max <= 0: no upper limit
};

inline int64_t mamba2_scratch_floats(const Mamba2Shape& s) {
  return (s.n_heads / s.n_groups) * s.head_dim + 2 * s.d_state + s.head_dim;
}

// Group g of one token: its x, B and C channels' conv, its heads' states and outputs, their gated
// norm. zxbcdt is the token's in_proj output [in_proj_rows]; y [inner] receives the output that
// goes into out_proj (only group g's channels are written). scratch: mamba2_scratch_floats(s).
void mamba2_group(const Mamba2Shape& s, const Mamba2Weights& w, int64_t g, const float* zxbcdt, float* conv_state,
                  float* ssm_state, float* y, float* scratch);

// One token of one sequence: every group in order.
void mamba2_token(const Mamba2Shape& s, const Mamba2Weights& w, const float* zxbcdt, float* conv_state, float* ssm_state,
                  float* y, float* scratch);

}  // namespace nvfp4
