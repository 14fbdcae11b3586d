// The safetensors checkpoint families: a .safetensors file, an HF-style directory (config.json,
// optional hf_quant_config.json, one file or shards listed by model.safetensors.index.json).
// ModelOpt NVFP4 (X.weight U8, X.weight_scale F8_E4M3, X.weight_scale_2 F32, X.input_scale,
// X.pre_quant_scale), compressed-tensors nvfp4-pack-quantized (X.weight_packed, X.weight_scale,
// X.weight_global_scale = 1/scale2, X.input_global_scale), FP8 E4M3 layers (per-tensor or
// per-channel weight_scale) dequantized, and float tensors; names mapped to GGUF's.
#pragma once
#include <memory>
#include <string>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {
// mtp: a release's mtp.* tensors read as block n_layer (Checkpoint::OpenOptions), not set aside.
std::unique_ptr<Checkpoint> open_safetensors_checkpoint(const std::string& path, const Checkpoint::OpenOptions& o = {});
}  // namespace nvfp4
