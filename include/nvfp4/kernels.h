// Which instruction set the kernels run on. The best variant the CPU supports is picked once, from
// CPUID; NVFP4_ISA=scalar|avx2|avxvnni|avx512|amx in the environment, or force_isa() (tests, benchmarks),
// overrides it. Every variant of an integer-exact mode gives the scalar reference's bits, so the
// choice changes speed only; the float modes stay within their derived bound of FP64.
#pragma once
#include <string_view>
#include <vector>

namespace nvfp4 {

enum class Isa { scalar, avx2, avxvnni, avx512, amx };

// "scalar", "avx2", "avxvnni", "avx512", "amx" (the AVX-512 table with AMX-INT8 kernels where
// they are faster: FP8 layers over windows of columns).
std::string_view isa_name(Isa isa);
// Parses the names above; throws nvfp4::Error on anything else.
Isa parse_isa(std::string_view s);
// avx2: AVX2 + FMA + F16C + BMI2; avxvnni: that and AVX-VNNI (vpdpbusd on 256-bit registers:
// Alder Lake and later, Zen 5), false when this build could not compile it; avx512: F/BW/VL/DQ +
// VNNI + VBMI (and the AVX2 set). Checked once.
bool isa_supported(Isa isa);
// The best supported ISA on this machine.
Isa detect_isa();
// The ISA the kernels use now: force_isa()'s choice, else NVFP4_ISA (read once per process),
// else detect_isa().
// Throws nvfp4::Error when NVFP4_ISA names an unknown or unsupported ISA.
Isa active_isa();
// What a value of NVFP4_ISA selects (null or empty: detect_isa()); throws nvfp4::Error for an
// unknown or unsupported ISA.
Isa isa_from_env_value(const char* value);
// Forces an ISA for the whole process (tests, benchmarks); throws nvfp4::Error if unsupported.
void force_isa(Isa isa);
// Back to NVFP4_ISA / CPUID.
void clear_forced_isa();
// Every ISA this CPU supports, scalar first.
std::vector<Isa> supported_isas();
// Every ISA this build has kernels for (whether or not this CPU runs them), scalar first: what
// tests loop over.
std::vector<Isa> compiled_isas();

// How far ahead of their weight stream the packed NVFP4 kernels (a16q8, w4a4) request lines:
// l1: 2 KiB ahead into L1; l1_l2: 1 KiB ahead into L1 and 6 KiB ahead into L2 (kernels/packed.h).
// Picked once from CPUID's vendor (Intel: l1, others: l1_l2; docs/BENCHMARKS.md 26, 31, 32);
// NVFP4_PREFETCH=l1|l1+l2 in the environment, or force_prefetch() (tests, benchmarks), overrides
// it. Speed only: every plan gives the same bits.
enum class Prefetch { l1, l1_l2 };
// "l1", "l1+l2".
std::string_view prefetch_name(Prefetch p);
// Parses the names above; throws nvfp4::Error on anything else.
Prefetch parse_prefetch(std::string_view s);
// This CPU's plan.
Prefetch detect_prefetch();
// force_prefetch()'s choice, else NVFP4_PREFETCH (read once per process), else detect_prefetch().
Prefetch active_prefetch();
// What a value of NVFP4_PREFETCH selects (null or empty: detect_prefetch()).
Prefetch prefetch_from_env_value(const char* value);
void force_prefetch(Prefetch p);
void clear_forced_prefetch();
// Every plan, for tests and benchmarks to loop over.
std::vector<Prefetch> prefetch_plans();

}  // namespace nvfp4
