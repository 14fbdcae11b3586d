// Picks the next token from logits: greedy (temperature <= 0, the default), or sampling with
// temperature, top-k and top-p from a seeded generator (the same seed gives the same tokens on
// every machine: splitmix64, no std:: distributions).
#pragma once
#include <cstdint>
#include <vector>

namespace nvfp4 {

struct SamplerOptions {
  float temperature = 0.0f;
  int top_k = 40;       // 0: all
  float top_p = 0.95f;  // 1: all
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& opt) : opt_(opt), state_(opt.seed) {}
  int32_t sample(const float* logits, int64_t n_vocab);

 private:
  double uniform();
  SamplerOptions opt_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> cand_;
};

// Index of the largest logit (the first one on ties).
int32_t argmax(const float* logits, int64_t n);

}  // namespace nvfp4
