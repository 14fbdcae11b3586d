// attention_item compiled for avx2 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention_item.h"

namespace nvfp4 {
void attention_item_avx2(const void* item) { attention_item(*static_cast<const AttnItem*>(item)); }
}  // namespace nvfp4
