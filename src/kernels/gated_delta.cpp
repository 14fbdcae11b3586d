// The scalar form of the Gated DeltaNet token mixer (gated_delta.h has the derivation and the
// pinned order). It is the reference a vector form must equal bit for bit.
#include "gated_delta.h"

#include <cmath>
#include <cstring>
#include <string>

#include "nvfp4/error.h"
#include "pinned_math.h"
#include "kernels/gated_delta_head.h"
#include "kernels/packed.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

namespace {

// softplus as torch computes it (beta 1, threshold 20), in double with the pinned exp and log.
double softplus(double x) { return x > 20.0 ? x : pinned::log(1.0 + pinned::exp(x)); }

// 1 / sqrt(sum of squares + eps) over n floats, the sum in double, ascending.
double inv_norm(const float* x, int64_t n, double eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return 1.0 / std::sqrt(ss + eps);
}

}  // namespace

void GatedDeltaShape::check(const char* where) const {
  auto bad = [&](const char* field, const std::string& expected, int64_t found) {
    throw Error(where, field, "a Gated DeltaNet layer's shape", expected, std::to_string(found));
  };
  if (n_k_heads < 1) bad("linear_num_key_heads", "at least 1", n_k_heads);
  if (n_v_heads < 1 || n_v_heads % n_k_heads != 0)
    bad("linear_num_value_heads", "a positive multiple of linear_num_key_heads (" + std::to_string(n_k_heads) + ")", n_v_heads);
  if (d_k < 1) bad("linear_key_head_dim", "at least 1", d_k);
  if (d_v < 1) bad("linear_value_head_dim", "at least 1", d_v);
  if (conv_kernel < 2 || conv_kernel > 8) bad("linear_conv_kernel_dim", "2 to 8", conv_kernel);
}

namespace {
// The causal depthwise conv of channels [c0, c0 + n) over (window, this input), oldest tap first,
// into x[0 .. n) (SiLU follows, over the whole group, in the ISA's vector form); each channel's
// window slides.
void conv_channels(const GatedDeltaShape& s, const GatedDeltaWeights& w, int64_t c0, int64_t n, const float* qkv,
                   float* conv_state, float* x) {
  const int64_t K = s.conv_kernel;
  for (int64_t c = c0; c < c0 + n; ++c) {
    float* win = conv_state + c * (K - 1);
    const float* wc = w.conv_w + c * K;
    float acc = 0.0f;
    for (int64_t t = 0; t < K - 1; ++t) acc += wc[t] * win[t];
    acc += wc[K - 1] * qkv[c];
    x[c - c0] = acc;
    for (int64_t t = 0; t + 1 < K - 1; ++t) win[t] = win[t + 1];
    win[K - 2] = qkv[c];
  }
}
}  // namespace

void gated_delta_group(const GatedDeltaShape& s, const GatedDeltaWeights& w, int64_t kh, const float* qkv, const float* z,
                       const float* a, const float* b, float* conv_state, float* ssm_state, float* y, float* scratch) {
  const int64_t dk = s.d_k, dv = s.d_v, rep = s.n_v_heads / s.n_k_heads;
  const kern::KernelTable& kt = kern::table(active_isa());
  float* q = scratch;            // [d_k]
  float* k = q + dk;             // [d_k]
  float* vs = k + dk;            // [rep * d_v]
  float* mem = vs + rep * dv;    // [d_v]
  conv_channels(s, w, kh * dk, dk, qkv, conv_state, q);
  conv_channels(s, w, s.key_dim() + kh * dk, dk, qkv, conv_state, k);
  conv_channels(s, w, 2 * s.key_dim() + kh * rep * dv, rep * dv, qkv, conv_state, vs);
  kt.silu(q, 2 * dk + rep * dv);  // q, k and vs lie back to back in scratch
  // l2-normalise q (with 1/sqrt(d_k)) and k.
  const double q_scale = 1.0 / std::sqrt(static_cast<double>(dk));
  const double iq = inv_norm(q, dk, 1e-6) * q_scale, ik = inv_norm(k, dk, 1e-6);
  for (int64_t i = 0; i < dk; ++i) q[i] = static_cast<float>(q[i] * iq);
  for (int64_t i = 0; i < dk; ++i) k[i] = static_cast<float>(k[i] * ik);
  for (int64_t h = kh * rep; h < (kh + 1) * rep; ++h) {
    const float* v = vs + (h - kh * rep) * dv;
    float* S = ssm_state + h * dk * dv;
    const double g = -pinned::exp(static_cast<double>(w.A_log[h])) *
                     softplus(static_cast<double>(a[h]) + static_cast<double>(w.dt_bias[h]));
    const float decay = static_cast<float>(pinned::exp(g));
    const float beta = static_cast<float>(1.0 / (1.0 + pinned::exp(-static_cast<double>(b[h]))));
    float* o = y + h * dv;
    // gated_delta_head.h, the ISA's form; the next head's state (the next group's first head after
    // the last: groups run in ascending order on a thread) is prefetched under this one.
    const float* next = h + 1 < s.n_v_heads ? S + dk * dv : nullptr;
    kt.delta_head(S, k, q, v, decay, beta, mem, o, dk, dv, next);
    // Gated RMSNorm over the head: (o * rsqrt(mean o^2 + eps)) * norm_w * SiLU(z).
    double ss = 0.0;
    for (int64_t j = 0; j < dv; ++j) ss += static_cast<double>(o[j]) * static_cast<double>(o[j]);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dv) + static_cast<double>(w.eps));
    // mem is free after the delta rule: SiLU(z) of this head goes there.
    std::memcpy(mem, z + h * dv, static_cast<size_t>(dv) * sizeof(float));
    kt.silu(mem, dv);
    for (int64_t j = 0; j < dv; ++j) o[j] = static_cast<float>(o[j] * inv) * w.norm_w[j] * mem[j];
  }
}

void kern::delta_head_scalar(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                             float* o, int64_t dk, int64_t dv, const float* /*next: the reference prefetches nothing*/) {
  delta_head_body(S, k, q, v, decay, beta, mem, o, dk, dv);
}

void gated_delta_token(const GatedDeltaShape& s, const GatedDeltaWeights& w, const float* qkv, const float* z,
                       const float* a, const float* b, float* conv_state, float* ssm_state, float* y, float* scratch) {
  for (int64_t kh = 0; kh < s.n_k_heads; ++kh) gated_delta_group(s, w, kh, qkv, z, a, b, conv_state, ssm_state, y, scratch);
}

}  // namespace nvfp4
