// Lossless repack between the row layout and ggml's 64-value block layout (SPEC.md section 3).
#pragma once
#include <string>

#include "nvfp4/matrix.h"

namespace nvfp4 {

// Both directions are pure byte permutations; the tensor scale is copied. They throw nvfp4::Error
// when n_in % 64 != 0 (the block layout cannot hold such a row) and, through check_scale_bytes,
// when a scale byte is NaN or has its sign bit set (E4M3 and UE4M3 would read it differently).
GgmlMatrix row_to_ggml(const RowView& m, const std::string& name = "");
RowMatrix ggml_to_row(const GgmlView& g, const std::string& name = "");

// One row each way (n_in % 64 == 0); dst sized by the caller.
void row_to_ggml_row(const uint8_t* codes, const uint8_t* scales, int64_t n_in, uint8_t* blocks);
void ggml_to_row_row(const uint8_t* blocks, int64_t n_in, uint8_t* codes, uint8_t* scales);

}  // namespace nvfp4
