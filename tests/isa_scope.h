// Forces the kernels' (and so the runtime's) ISA for a scope, back to NVFP4_ISA / CPUID after.
#pragma once
#include "nvfp4/kernels.h"

namespace nvfp4::test {

struct IsaEnv {
  explicit IsaEnv(Isa isa) { force_isa(isa); }
  explicit IsaEnv(const char* name) : IsaEnv(parse_isa(name)) {}
  ~IsaEnv() { clear_forced_isa(); }
  IsaEnv(const IsaEnv&) = delete;
  IsaEnv& operator=(const IsaEnv&) = delete;
};

// The same for the packed kernels' software prefetch plan.
struct PrefetchEnv {
  explicit PrefetchEnv(Prefetch p) { force_prefetch(p); }
  ~PrefetchEnv() { clear_forced_prefetch(); }
  PrefetchEnv(const PrefetchEnv&) = delete;
  PrefetchEnv& operator=(const PrefetchEnv&) = delete;
};

}  // namespace nvfp4::test
