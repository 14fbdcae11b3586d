// Activation scales for w4a4 on a float checkpoint quantized at load: run the float model over a
// calibration text and take, per linear layer, amax(|input|) / 2688 (ModelOpt's input_scale rule:
// amax / (6 * 448)).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// tokens: the calibration text, evaluated in windows of n_ctx tokens (the KV cache reset between).
std::map<std::string, float> calibrate_input_scales(const Checkpoint& ck, const std::vector<int32_t>& tokens,
                                                    int64_t n_ctx, int threads);

}  // namespace nvfp4
