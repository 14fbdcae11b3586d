// Activation scales for w4a4 on a float checkpoint quantized at load: run the float model over a
// calibration text and take, per linear layer, amax(|input|) / 2688 (ModelOpt's input_scale rule:
// amax / (6 * 448)).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// tokens: the calibration text, evaluated in windows of n_ctx tokens (the KV cache reset between).
std::map<std::string, float> calibrate_input_scales(const Checkpoint& ck, const std::vector<int32_t>& tokens,
                                                    int64_t n_ctx, int threads);

// The importance statistics of `convert --quantize-method search`: per linear layer ("blk.0.attn_q"),
// per input channel, the mean of x_i^2 over every calibration token (sums in float64, tokens in
// order), rounded to 4 significant bits (round_importance). on = float: the float model in f32,
// its linear layers through PinnedDense (LoadOptions::pinned_float; everything else of the f32
// step is pinned, docs/DETERMINISM.md): the same bits on every ISA and thread count (before, with
// DenseLinear, 4 of about 130k channels differed between scalar and AVX-512 on SmolLM2). on = rtn:
// the model quantized at load (ModelOpt's rounding) in a16q8, likewise pinned.
// progress(done_tokens, total_tokens) per window.
enum class CalibrationModel { float_model, rtn_a16q8 };
using ChannelMoments = std::map<std::string, std::vector<float>>;
ChannelMoments calibrate_second_moments(const Checkpoint& ck, const std::vector<int32_t>& tokens, int64_t n_ctx,
                                        int threads, CalibrationModel on = CalibrationModel::float_model,
                                        const std::function<void(size_t, size_t)>& progress = {});
// Round a non-negative finite float to the nearest value with 4 significant bits (ties away).
float round_importance(float v);

}  // namespace nvfp4
