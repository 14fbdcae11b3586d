// CSF-compressed NVFP4 block scales (codec "byte-window4-fixed-stream-u24-exceptions/1", as the
// CSF checkpoints of Local Inference Lab store routed-expert scales and their vLLM loader reads
// them: ModelOpt quantized_layers entries with "weight_scale_encoding": "csf"). One E4M3 scale
// matrix [rows][cols] is stored as two tensors beside the weight:
//   <module>.weight_scale.nvfp4_csf_fixed       U8 [rows / 16, 16 * (1 + cols / 2)]: per slab of
//       16 rows, the 16 rows' base bytes (0..240), then each row's cols / 2 bytes of 4-bit codes,
//       low nibble first (column 2j low, 2j + 1 high); a scale byte is base + code;
//   <module>.weight_scale.nvfp4_csf_exceptions  U32 [k]: sorted words, low 24 bits a flat
//       row * cols + col position, high 8 bits the scale byte there (replacing base + code).
// Decoding is integer arithmetic on bytes: lossless, the plain weight_scale bytes exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/safetensors.h"

namespace nvfp4 {

// The [rows][cols] scale bytes of one CSF pair (rows, cols: what the weight needs). Throws
// nvfp4::Error naming the file and tensor for a wrong dtype or shape, a base above 240, an
// exception position out of range or out of order.
std::vector<uint8_t> decode_csf_scales(const safetensors::TensorInfo& fixed, const std::string& fixed_file,
                                       const safetensors::TensorInfo& exceptions, const std::string& exceptions_file,
                                       int64_t rows, int64_t cols);

}  // namespace nvfp4
