// The ISA the runtime's own pinned kernels use: NVFP4_ISA (scalar|avx2|avx512) when set, else the
// best this CPU has: the kernels' active_isa(), so that forcing an ISA covers both.
#pragma once
#include <string_view>

namespace nvfp4 {
enum class RuntimeIsa { scalar, avx2, avx512 };
RuntimeIsa runtime_isa();
std::string_view runtime_isa_name();
}  // namespace nvfp4
