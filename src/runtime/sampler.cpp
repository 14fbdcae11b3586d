#include "nvfp4/sampler.h"

#include <algorithm>
#include <cmath>

#include "kernels/pinned_math.h"

namespace nvfp4 {

int32_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

// splitmix64 at counter index + 1: the stream a stateful splitmix64 seeded with `seed` yields.
double Sampler::uniform(uint64_t index) const {
  uint64_t z = opt_.seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-53;
}

int32_t Sampler::sample_at(const float* logits, int64_t n_vocab, uint64_t index) {
  if (opt_.temperature <= 0.0f) return argmax(logits, n_vocab);
  cand_.clear();
  for (int64_t i = 0; i < n_vocab; ++i) cand_.emplace_back(logits[i], static_cast<int32_t>(i));
  // Highest logit first; lower id first on ties, so the order is total.
  auto cmp = [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
  size_t k = cand_.size();
  if (opt_.top_k > 0 && static_cast<size_t>(opt_.top_k) < k) k = static_cast<size_t>(opt_.top_k);
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.end(), cmp);
  cand_.resize(k);
  std::vector<double> p(k);
  double sum = 0.0;
  for (size_t i = 0; i < k; ++i) {
    p[i] = pinned::exp(static_cast<double>(cand_[i].first - cand_[0].first) / opt_.temperature);
    sum += p[i];
  }
  // top-p: the smallest prefix whose probability reaches top_p.
  size_t keep = k;
  if (opt_.top_p < 1.0f) {
    double acc = 0.0;
    for (size_t i = 0; i < k; ++i) {
      acc += p[i] / sum;
      if (acc >= opt_.top_p) { keep = i + 1; break; }
    }
  }
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += p[i];
  double r = uniform(index) * total;
  for (size_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0.0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace nvfp4
