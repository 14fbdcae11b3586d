// attention_item and swiglu compiled for avx2 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention.h"
#include "runtime/attention_item.h"
#include "runtime/pinned_exp_avx2.h"

namespace nvfp4 {
void attention_item_avx2(const void* item) {
  attention_item<64, 32>(*static_cast<const AttnItem*>(item), pinned::exp_shifted_avx2);
}
void swiglu_avx2(float* g, const float* u, int64_t n) { pinned::swiglu_avx2_body(g, u, n); }
void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n) { pinned::exp_shifted_avx2(s, mx, out, n); }
}  // namespace nvfp4
