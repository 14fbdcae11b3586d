// attention_item and swiglu compiled for avx2 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention_item.h"

namespace nvfp4 {
void attention_item_avx2(const void* item) { attention_item(*static_cast<const AttnItem*>(item)); }
void swiglu_avx2(float* g, const float* u, int64_t n) { swiglu(g, u, n); }
}  // namespace nvfp4
