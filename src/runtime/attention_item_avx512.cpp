// attention_item compiled for avx512 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention_item.h"

namespace nvfp4 {
void attention_item_avx512(const void* item) { attention_item(*static_cast<const AttnItem*>(item)); }
}  // namespace nvfp4
