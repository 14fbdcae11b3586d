// attention_item and swiglu compiled for avx512 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention_item.h"

namespace nvfp4 {
void attention_item_avx512(const void* item) { attention_item(*static_cast<const AttnItem*>(item)); }
void swiglu_avx512(float* g, const float* u, int64_t n) { swiglu(g, u, n); }
}  // namespace nvfp4
