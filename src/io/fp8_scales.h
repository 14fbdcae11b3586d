// The scales of the FP8 layers whose scale varies along the input, checked as they are read
// (refused naming the file, the tensor, the rule, what was expected and what was found):
//   MXFP8: U8 E8M0 exponents [n_out][n_in / 32] (ModelOpt quant_algo MXFP8, compressed-tensors
//          mxfp8-quantized), bytes 0..246 (0xFF is NaN; above 246 the largest E4M3 value times
//          the scale overflows float32);
//   FP8 with 128 x 128 block scales: F32 / F16 / BF16 [ceil(n_out / 128)][ceil(n_in / 128)]
//          (llm-compressor FP8_BLOCK weight_scale, DeepSeek / GLM / Kimi weight_scale_inv, ModelOpt
//          fp8_pb_wo, which drops the grid's unit axes: [] for a one-block matrix), or U8 E8M0
//          (DeepSeek-V4's UE8M0); finite and > 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/safetensors.h"

namespace nvfp4 {

void check_mxfp8_scales(const safetensors::TensorInfo& scale, const std::string& scale_file, const std::string& weight_file,
                        const std::string& weight, int64_t n_out, int64_t n_in);
// The block scales as float32, row-major over the block grid.
std::vector<float> read_fp8_block_scales(const safetensors::TensorInfo& scale, const std::string& file, int64_t n_out, int64_t n_in);

}  // namespace nvfp4
