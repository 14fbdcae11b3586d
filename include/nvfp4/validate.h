// Checks on NVFP4 data shared by the layouts, the loaders and the converters (SPEC.md section 6).
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4 {

// Refuses a NaN scale byte (0x7F/0xFF) or one with the sign bit set, naming the tensor and the
// flat index of the first bad byte.
void check_scale_bytes(const uint8_t* bytes, int64_t count, const std::string& file,
                       const std::string& tensor);
// check_scale_bytes of ggml's NVFP4 blocks (the first 4 bytes of each 36-byte block), the index
// named within the first bad block.
void check_ggml_scale_bytes(const uint8_t* blocks, int64_t n_blocks, const std::string& file,
                            const std::string& tensor);
// Refuses a tensor scale that is not finite and positive.
void check_tensor_scale(float scale2, const std::string& file, const std::string& tensor);
// An activation scale (amax / 2688): finite, positive and within [1e-9, 1e9], i.e. a calibrated
// activation amax between 2.7e-6 and 2.7e12. Outside it the layer was not calibrated (an expert
// no calibration token reached: llm-compressor leaves uninitialised values such as 5e31 or 1e-43).
void check_input_scale(float input_scale, const std::string& file, const std::string& tensor);
// Refuses n_in % 16 != 0 (or % 64 for the block layout when block64 is set).
void check_n_in(int64_t n_in, bool block64, const std::string& file, const std::string& tensor);

}  // namespace nvfp4
