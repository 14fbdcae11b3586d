#include "runtime/runtime_isa.h"

#include <cstdlib>
#include <string>

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
bool has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
}  // namespace

RuntimeIsa runtime_isa() {
  const char* env = std::getenv("NVFP4_ISA");
  if (env && *env) {
    const std::string s = env;
    RuntimeIsa want;
    if (s == "scalar") want = RuntimeIsa::scalar;
    else if (s == "avx2") want = RuntimeIsa::avx2;
    else if (s == "avx512") want = RuntimeIsa::avx512;
    else throw Error("", "", "NVFP4_ISA", "scalar, avx2 or avx512", s);
    if ((want == RuntimeIsa::avx512 && !has_avx512()) || (want == RuntimeIsa::avx2 && !has_avx2()))
      throw Error("", "", "NVFP4_ISA names an ISA this CPU lacks", "a supported ISA", s);
    return want;
  }
  if (has_avx512()) return RuntimeIsa::avx512;
  if (has_avx2()) return RuntimeIsa::avx2;
  return RuntimeIsa::scalar;
}

std::string_view runtime_isa_name() {
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: return "avx512";
    case RuntimeIsa::avx2: return "avx2";
    default: return "scalar";
  }
}

}  // namespace nvfp4
