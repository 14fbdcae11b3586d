// Every float value and scale a model reads is finite (SPEC.md section 6: nothing is used before
// every rule has passed): F32/F16/BF16 tensors (norms, embeddings, biases, float weights) and the
// f16 scales of ggml's block formats (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K). NVFP4 scales are validated by
// format/validate, FP8 weight scales where they are read. Checked at open, in the file's own order:
// the error names the file, the tensor as the file names it, and the first bad value's index.
#pragma once
#include <cstdint>
#include <string>

#include "nvfp4/dense.h"

namespace nvfp4 {

// n values of `dt` at data, rows of row_len values (for the message). Throws nvfp4::Error.
void check_finite_floats(DType dt, const void* data, int64_t n, int64_t row_len, const std::string& file,
                         const std::string& tensor);
// The f16 scales of n values of ggml block type `type`; other types pass. Throws nvfp4::Error.
void check_finite_ggml_scales(uint32_t type, const void* data, int64_t n, int64_t row_len, const std::string& file,
                              const std::string& tensor);

}  // namespace nvfp4
