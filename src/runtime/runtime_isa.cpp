#include "runtime/runtime_isa.h"

#include "nvfp4/kernels.h"

namespace nvfp4 {

// The kernels' choice (force_isa(), else NVFP4_ISA, else CPUID), so one switch covers both.
RuntimeIsa runtime_isa() {
  switch (active_isa()) {
    case Isa::avx512: return RuntimeIsa::avx512;
    case Isa::avx2: return RuntimeIsa::avx2;
    case Isa::scalar: break;
  }
  return RuntimeIsa::scalar;
}

std::string_view runtime_isa_name() { return isa_name(active_isa()); }

}  // namespace nvfp4
