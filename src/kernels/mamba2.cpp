// The Mamba-2 token mixer (mamba2.h has the derivation and the pinned order); each head's scan in
// the ISA's form (mamba2_scan.h), every form the scalar one's bits.
#include "kernels/mamba2.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/mamba2_scan.h"
#include "kernels/packed.h"
#include "kernels/pinned_math.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

double softplus(double x) { return x > 20.0 ? x : pinned::log(1.0 + pinned::exp(x)); }

// The causal depthwise conv of channels [c0, c0 + n) over (window, this input), oldest tap first,
// plus the bias, into out[0 .. n) (SiLU follows, over the group, in the ISA's vector form); each
// channel's window slides.
void conv_channels(const Mamba2Shape& s, const Mamba2Weights& w, int64_t c0, int64_t n, const float* in, float* conv_state,
                   float* out) {
  const int64_t K = s.conv_kernel;
  for (int64_t c = c0; c < c0 + n; ++c) {
    float* win = conv_state + c * (K - 1);
    const float* wc = w.conv_w + c * K;
    float acc = 0.0f;
    for (int64_t t = 0; t < K - 1; ++t) acc += wc[t] * win[t];
    acc += wc[K - 1] * in[c];
    if (w.conv_b) acc += w.conv_b[c];
    out[c - c0] = acc;
    for (int64_t t = 0; t + 1 < K - 1; ++t) win[t] = win[t + 1];
    win[K - 2] = in[c];
  }
}

}  // namespace

void Mamba2Shape::check(const char* where) const {
  auto bad = [&](const char* field, const std::string& expected, int64_t found) {
    throw Error(where, field, "a Mamba-2 layer's shape", expected, std::to_string(found));
  };
  if (n_groups < 1) bad("n_groups", "at least 1", n_groups);
  if (n_heads < 1 || n_heads % n_groups != 0)
    bad("mamba_num_heads", "a positive multiple of n_groups (" + std::to_string(n_groups) + ")", n_heads);
  if (head_dim < 1) bad("mamba_head_dim", "at least 1", head_dim);
  if (d_state < 1) bad("ssm_state_size", "at least 1", d_state);
  if (conv_kernel < 2 || conv_kernel > 8) bad("conv_kernel", "2 to 8", conv_kernel);
}

void mamba2_group(const Mamba2Shape& s, const Mamba2Weights& w, int64_t g, const float* zxbcdt, float* conv_state,
                  float* ssm_state, float* y, float* scratch) {
  const int64_t hd = s.head_dim, ds = s.d_state, hpg = s.n_heads / s.n_groups, inner = s.inner();
  const int64_t gw = hpg * hd;  // the group's x channels (and its norm group)
  const float* z = zxbcdt;
  const float* xbc = zxbcdt + inner;
  const float* dt_in = xbc + s.conv_dim();
  float* x = scratch;       // [gw]
  float* B = x + gw;        // [ds]
  float* C = B + ds;        // [ds]
  float* xdt = C + ds;      // [hd]
  conv_channels(s, w, g * gw, gw, xbc, conv_state, x);
  conv_channels(s, w, inner + g * ds, ds, xbc, conv_state, B);
  conv_channels(s, w, inner + s.n_groups * ds + g * ds, ds, xbc, conv_state, C);
  const kern::KernelTable& kt = kern::table(active_isa());
  kt.silu(x, gw + 2 * ds);  // x, B and C lie back to back in scratch
  float* yg = y + g * gw;
  const kern::Mamba2ScanFn scan = kern::mamba2_scan(active_isa());  // mamba2_scan.h: every form the scalar one's bits
  for (int64_t j = 0; j < hpg; ++j) {
    const int64_t h = g * hpg + j;
    double dt = softplus(static_cast<double>(dt_in[h]) + static_cast<double>(w.dt_bias[h]));
    if (dt < w.dt_min) dt = w.dt_min;
    if (w.dt_max > 0 && dt > w.dt_max) dt = w.dt_max;
    const float dtf = static_cast<float>(dt);
    const double A = -pinned::exp(static_cast<double>(w.A_log[h]));
    const float dA = static_cast<float>(pinned::exp(static_cast<double>(dtf) * A));
    float* S = ssm_state + h * ds * hd;
    // The next head's state (the next group's first head after the last: groups run in ascending
    // order on a thread) is prefetched under this one.
    scan(S, x + j * hd, B, C, dtf, dA, w.D[h], xdt, yg + j * hd, ds, hd, h + 1 < s.n_heads ? S + ds * hd : nullptr);
  }
  // The gated RMSNorm over the group: v = y * SiLU(z); v * rsqrt(mean v^2 + eps) * norm_w.
  const float* zg = z + g * gw;
  for (int64_t i0 = 0; i0 < gw; i0 += hd) {  // SiLU(z) a head at a time through xdt (free after the scans)
    std::memcpy(xdt, zg + i0, static_cast<size_t>(hd) * sizeof(float));
    kt.silu(xdt, hd);
    for (int64_t i = 0; i < hd; ++i) yg[i0 + i] = yg[i0 + i] * xdt[i];
  }
  double ss = 0.0;
  for (int64_t i = 0; i < gw; ++i) ss += static_cast<double>(yg[i]) * static_cast<double>(yg[i]);
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(gw) + static_cast<double>(w.eps));
  const float* nw = w.norm_w + g * gw;
  for (int64_t i = 0; i < gw; ++i) yg[i] = static_cast<float>(yg[i] * inv) * nw[i];
}

void kern::mamba2_scan_scalar(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt,
                              float* y, int64_t ds, int64_t hd, const float* /*next: the reference prefetches nothing*/) {
  mamba2_scan_body(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd);
}

void mamba2_token(const Mamba2Shape& s, const Mamba2Weights& w, const float* zxbcdt, float* conv_state, float* ssm_state,
                  float* y, float* scratch) {
  for (int64_t g = 0; g < s.n_groups; ++g) mamba2_group(s, w, g, zxbcdt, conv_state, ssm_state, y, scratch);
}

}  // namespace nvfp4
