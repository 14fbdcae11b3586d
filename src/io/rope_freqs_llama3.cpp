#include "io/rope_freqs_llama3.h"

#include <cmath>
#include <string>

#include "nvfp4/error.h"

namespace nvfp4 {

std::vector<float> rope_freq_factors_llama3(int64_t head_dim, double theta, const RopeLlama3& p) {
  if (head_dim <= 0 || head_dim % 2 != 0) {
    throw Error("", "rope_freqs.weight", "Llama 3 RoPE factors need an even head dimension", "head_dim > 0, even",
                std::to_string(head_dim));
  }
  if (!(p.factor > 0) || !(p.low_freq_factor < p.high_freq_factor) || !(p.original_ctx > 0) || !(theta > 0)) {
    throw Error("", "rope_freqs.weight", "Llama 3 rope_scaling parameters",
                "factor > 0, low_freq_factor < high_freq_factor, original_max_position_embeddings > 0, rope_theta > 0",
                "factor " + std::to_string(p.factor) + ", low " + std::to_string(p.low_freq_factor) + ", high " +
                    std::to_string(p.high_freq_factor) + ", ctx " + std::to_string(p.original_ctx));
  }
  const float pi2 = static_cast<float>(2.0 * M_PI);
  const float low_wavelen = static_cast<float>(p.original_ctx / p.low_freq_factor);
  const float high_wavelen = static_cast<float>(p.original_ctx / p.high_freq_factor);
  std::vector<float> out;
  out.reserve(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim; i += 2) {
    const float e = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / std::pow(static_cast<float>(theta), e);
    const float wavelen = pi2 / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(static_cast<float>(p.factor));
    } else {
      const float smooth = (static_cast<float>(p.original_ctx) / wavelen - static_cast<float>(p.low_freq_factor)) /
                           static_cast<float>(p.high_freq_factor - p.low_freq_factor);
      out.push_back(1.0f / ((1.0f - smooth) / static_cast<float>(p.factor) + smooth));
    }
  }
  return out;
}

}  // namespace nvfp4
