#include "ops/rope.h"

#include <algorithm>

#include "kernels/pinned_math.h"

namespace nvfp4 {

void RopeTable::init(const RopeConfig& cfg, int64_t head_dim, int64_t n_rot) {
  cfg_ = cfg;
  head_dim_ = head_dim;
  rot_ = n_rot > 0 ? n_rot : head_dim;
  half_ = rot_ / 2;
  other_ = cfg.proportional ? head_dim / 2 : half_;
  const double denom = static_cast<double>(cfg.proportional ? head_dim : rot_);
  n_pos_ = 0;
  cos_.clear();
  sin_.clear();
  freq_.assign(static_cast<size_t>(half_), 0.0);
  const double lt = pinned::log(cfg.theta);
  for (int64_t i = 0; i < half_; ++i) {
    double f = pinned::exp(-(2.0 * static_cast<double>(i) / denom) * lt);
    if (!cfg.freq_factors.empty()) f = f / static_cast<double>(cfg.freq_factors[static_cast<size_t>(i)]);
    if (cfg.linear_factor != 1.0) f = f / cfg.linear_factor;
    freq_[static_cast<size_t>(i)] = f;
  }
}

void RopeTable::reserve(int64_t n_pos) {
  if (n_pos <= n_pos_) return;
  const int64_t want = std::max<int64_t>(n_pos, std::max<int64_t>(64, 2 * n_pos_));
  cos_.resize(static_cast<size_t>(want * half_));
  sin_.resize(cos_.size());
  for (int64_t p = n_pos_; p < want; ++p)
    for (int64_t i = 0; i < half_; ++i) {
      double s, c;
      pinned::sincos(static_cast<double>(p) * freq_[static_cast<size_t>(i)], s, c);
      cos_[static_cast<size_t>(p * half_ + i)] = static_cast<float>(c);
      sin_[static_cast<size_t>(p * half_ + i)] = static_cast<float>(s);
    }
  n_pos_ = want;
}

void RopeTable::apply(float* x, int64_t n_heads, int64_t pos) const {
  const float* c = cos_.data() + pos * half_;
  const float* s = sin_.data() + pos * half_;
  // Element i's partner: 2i and 2i+1 (adjacent) or i and i + other_ (NeoX). A loop per style with
  // its stride known, so the compiler vectorizes it (the same float operations per pair).
  if (cfg_.style == RopeStyle::adjacent) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* __restrict v = x + h * head_dim_;
      for (int64_t i = 0; i < half_; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * c[i] - x1 * s[i];
        v[2 * i + 1] = x0 * s[i] + x1 * c[i];
      }
    }
    return;
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* __restrict lo = x + h * head_dim_;
    float* __restrict hi = lo + other_;  // other_ >= half_: the two ranges never overlap
    for (int64_t i = 0; i < half_; ++i) {
      const float x0 = lo[i], x1 = hi[i];
      lo[i] = x0 * c[i] - x1 * s[i];
      hi[i] = x0 * s[i] + x1 * c[i];
    }
  }
}

}  // namespace nvfp4
