// Llama 3's RoPE frequency scaling (config.json rope_scaling with rope_type "llama3") as the
// per-frequency divisors llama.cpp reads from a `rope_freqs.weight` F32 tensor of head_dim / 2
// values: 1 for short wavelengths (< original_ctx / high_freq_factor), `factor` for long ones
// (> original_ctx / low_freq_factor), and 1 / ((1 - s) / factor + s) between, with
// s = (original_ctx / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor).
// Frequencies theta^(-2i/head_dim) and wavelengths are computed in float32, as llama.cpp's
// converter (torch float32) does.
#pragma once
#include <cstdint>
#include <vector>

namespace nvfp4 {

struct RopeLlama3 {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_ctx = 8192;  // original_max_position_embeddings
};

// Throws nvfp4::Error for an odd or non-positive head_dim, low_freq_factor >= high_freq_factor or
// a non-positive factor.
std::vector<float> rope_freq_factors_llama3(int64_t head_dim, double theta, const RopeLlama3& p);

}  // namespace nvfp4
