// Picks the next token from logits: greedy (temperature <= 0, the default), or sampling with
// temperature, top-k and top-p from a seeded generator (the same seed gives the same tokens on
// every machine: splitmix64, no std:: distributions). The generator is counter-based: the draw for
// the token of generation index i is a function of (seed, i) alone, so a speculative verifier
// that knows i picks exactly the token plain decoding would.
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
  explicit Sampler(const SamplerOptions& opt) : opt_(opt) {}
  // The token of generation index `index` (0 for the first generated token).
  int32_t sample_at(const float* logits, int64_t n_vocab, uint64_t index);
  // sample_at() with the index of this call (0, 1, 2, ...).
  int32_t sample(const float* logits, int64_t n_vocab) { return sample_at(logits, n_vocab, calls_++); }
  const SamplerOptions& options() const { return opt_; }

 private:
  double uniform(uint64_t index) const;
  SamplerOptions opt_;
  uint64_t calls_ = 0;
  std::vector<std::pair<float, int32_t>> cand_;
};

// Index of the largest logit (the first one on ties).
int32_t argmax(const float* logits, int64_t n);

}  // namespace nvfp4
