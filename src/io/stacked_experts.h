// Routed experts stored stacked as 3-D float tensors, as transformers 5 saves Gemma 4's
// (`<layer>.experts.gate_up_proj` [E][2 ff][d]: each expert's gate rows, then its up rows;
// `<layer>.experts.down_proj` [E][d][ff]), read as the per-expert matrices the exporters write
// (`<layer>.experts.<e>.gate_proj.weight`, `up_proj`, `down_proj`): views of the stacked bytes,
// nothing copied.
#pragma once
#include <string>
#include <vector>

#include "nvfp4/safetensors.h"

namespace nvfp4 {

namespace st = safetensors;

// The per-expert views of `t` when it is a stacked expert tensor of a float dtype (F32, F16,
// BF16), else nothing. A stacked tensor of another dtype or rank, or a gate_up_proj of an odd
// row count, throws nvfp4::Error naming `file` and the tensor.
std::vector<st::TensorInfo> split_stacked_experts(const st::TensorInfo& t, const std::string& file);

}  // namespace nvfp4
