// The GGUF checkpoint (llama.cpp's forms): ggml NVFP4 blocks (type 40) with `<base>.scale` and
// `<base>.input_scale` companions (`blk.0.attn_q.weight` -> `blk.0.attn_q.scale`), float and ggml
// block-quantized tensors.
#pragma once
#include <memory>
#include <string>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {
std::unique_ptr<Checkpoint> open_gguf_checkpoint(const std::string& path);
}  // namespace nvfp4
