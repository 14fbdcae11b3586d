// The one dispatch point: which ISA runs (CPUID once, NVFP4_ISA, force_isa) and the table of
// kernels of each ISA, filled once. No kernel body tests the ISA.
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "kernels/fp8_q8.h"
#include "kernels/head_q8.h"
#include "kernels/attention_kernels.h"
#include "kernels/packed.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avxvnni: return "avxvnni";
    case Isa::avx512: return "avx512";
    case Isa::amx: return "amx";
  }
  return "?";
}

Isa parse_isa(std::string_view s) {
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avxvnni, Isa::avx512, Isa::amx}) {
    if (s == isa_name(i)) return i;
  }
  throw Error("", "NVFP4_ISA / --isa", "unknown instruction set (NVFP4_ISA or --isa)", "scalar, avx2, avxvnni, avx512 or amx",
              std::string(s));
}

std::vector<Isa> compiled_isas() {
  std::vector<Isa> v = {Isa::scalar, Isa::avx2};
#ifdef NVFP4_HAVE_AVXVNNI
  v.push_back(Isa::avxvnni);
#endif
  v.push_back(Isa::avx512);
#ifdef NVFP4_HAVE_AMX
  v.push_back(Isa::amx);
#endif
  return v;
}

namespace {

// F16C and BMI2 straight from CPUID: clang 14's __builtin_cpu_supports does not know them.
bool cpuid_f16c_bmi2() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) return false;  // leaf 1 ECX.29: F16C
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 8)) != 0;                                             // leaf 7 EBX.8: BMI2
}

bool cpu_has_avx2() {
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         cpuid_f16c_bmi2();
  return v;
}

// AVX-VNNI: CPUID leaf 7 subleaf 1 EAX bit 4 (the VEX-encoded vpdpbusd on xmm/ymm).
bool cpu_has_avxvnni() {
#ifdef NVFP4_HAVE_AVXVNNI
  static const bool v = [] {
    if (!cpu_has_avx2()) return false;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
    return (a & (1u << 4)) != 0;
  }();
  return v;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
  static const bool v = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
                        __builtin_cpu_supports("avx512vbmi");
  return v;
}

// AMX-INT8: CPUID leaf 7 EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), the OS saving the tile state
// (XCR0 bits 17 and 18), and Linux's permission to use it, asked once for the process
// (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA; refused on kernels before 5.16).
bool cpu_has_amx() {
#ifdef NVFP4_HAVE_AMX
  static const bool v = [] {
    if (!cpu_has_avx512()) return false;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv allowed
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return false;
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return ::syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return v;
#else
  return false;
#endif
}

std::atomic<int> g_forced{-1};

// NVFP4_ISA is read once, at the first dispatch: one choice for the whole process. Tests that
// switch ISAs within a process use force_isa().
Isa from_env() {
  static const Isa chosen = isa_from_env_value(std::getenv("NVFP4_ISA"));
  return chosen;
}

}  // namespace

Isa isa_from_env_value(const char* e) {
  if (e == nullptr || *e == '\0') return detect_isa();
  const Isa i = parse_isa(e);
  if (!isa_supported(i)) {
    throw Error("", "NVFP4_ISA", "NVFP4_ISA names an instruction set this CPU lacks",
                "one of the supported ISAs (best: " + std::string(isa_name(detect_isa())) + ")", e);
  }
  return i;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return cpu_has_avx2();
    case Isa::avxvnni: return cpu_has_avxvnni();
    case Isa::avx512: return cpu_has_avx512();
    case Isa::amx: return cpu_has_amx();
  }
  return false;
}

Isa detect_isa() {
  if (cpu_has_amx()) return Isa::amx;
  if (cpu_has_avx512()) return Isa::avx512;
  if (cpu_has_avxvnni()) return Isa::avxvnni;
  if (cpu_has_avx2()) return Isa::avx2;
  return Isa::scalar;
}

Isa active_isa() {
  const int f = g_forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<Isa>(f);
  return from_env();
}

void force_isa(Isa isa) {
  if (!isa_supported(isa)) {
    throw Error("", "--isa", "forced instruction set is not supported by this CPU",
                "one of the supported ISAs", std::string(isa_name(isa)));
  }
  g_forced.store(static_cast<int>(isa), std::memory_order_relaxed);
}

void clear_forced_isa() { g_forced.store(-1, std::memory_order_relaxed); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (Isa i : compiled_isas()) {
    if (isa_supported(i)) v.push_back(i);
  }
  return v;
}

namespace {

std::atomic<int> g_forced_prefetch{-1};

// GenuineIntel in CPUID leaf 0 (EBX, EDX, ECX): a guest sees its host's vendor.
bool cpu_is_intel() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  return b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
}

Prefetch prefetch_from_env() {
  static const Prefetch chosen = prefetch_from_env_value(std::getenv("NVFP4_PREFETCH"));
  return chosen;
}

}  // namespace

std::string_view prefetch_name(Prefetch p) { return p == Prefetch::l1 ? "l1" : "l1+l2"; }

Prefetch parse_prefetch(std::string_view s) {
  for (Prefetch p : prefetch_plans()) {
    if (s == prefetch_name(p)) return p;
  }
  throw Error("", "NVFP4_PREFETCH / --prefetch", "unknown prefetch plan", "l1 or l1+l2", std::string(s));
}

std::vector<Prefetch> prefetch_plans() { return {Prefetch::l1, Prefetch::l1_l2}; }

// Intel: the one L1 distance (BENCHMARKS 31, 32); AMD and the rest: the two (BENCHMARKS 26, Zen 4).
Prefetch detect_prefetch() {
  static const Prefetch v = cpu_is_intel() ? Prefetch::l1 : Prefetch::l1_l2;
  return v;
}

Prefetch prefetch_from_env_value(const char* e) {
  if (e == nullptr || *e == '\0') return detect_prefetch();
  return parse_prefetch(e);
}

Prefetch active_prefetch() {
  const int f = g_forced_prefetch.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<Prefetch>(f);
  return prefetch_from_env();
}

void force_prefetch(Prefetch p) { g_forced_prefetch.store(static_cast<int>(p), std::memory_order_relaxed); }

void clear_forced_prefetch() { g_forced_prefetch.store(-1, std::memory_order_relaxed); }

// The per-ISA variants of attention_item and swiglu (attention_item*.cpp) and of PinnedDense
// (pinned_dense*.cpp).
namespace pinned_dense_detail {
void rows_scalar(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template <class Pf>
void rows_avx2(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template <class Pf>
void rows_avx512(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
}  // namespace pinned_dense_detail

namespace kern {

namespace {

// The tables of one prefetch plan.
template <class Pf>
const KernelTable& table_of(Isa isa) {
  using namespace pinned_dense_detail;
  static const KernelTable scalar{Isa::scalar, prepare_q8_cols,
                                  gemv_a16q8_scalar, "gemv_a16q8_ref",
                                  gemv_a16q8_scalar, "gemv_a16q8_ref",
                                  gemv_w4a4_scalar, "gemv_w4a4_ref",
                                  gemv_a16_scalar, "gemv_a16_ref",
                                  gemv_f32_scalar, "gemv_f32_ref",
                                  gemv_f64_scalar, "gemv_f64_ref",
                                  gemv_dense_scalar, "gemv_dense_ref",
                                  attention_item_scalar, attention_phase_scalar, swiglu_scalar, silu_scalar, geglu_scalar, to_half_scalar,
                                  rows_scalar, "gemv_pinned16_scalar",
                                  head_q8_scalar, "head_q8_ref",
                                  delta_head_scalar, "delta_head_scalar",
                                  gemv_fp8s_scalar, "gemv_fp8s_ref",
                                  fp8_q8_scalar, "fp8_q8_ref"};
  static const KernelTable avx2{Isa::avx2, prepare_q8_cols_avx2,
                                gemv_a16q8_avx2<Pf>, "gemv_a16q8_avx2",
                                gemm_a16q8_avx2<Pf>, "gemm_a16q8_avx2",
                                gemv_w4a4_avx2<Pf>, "gemv_w4a4_avx2",
                                gemv_a16_avx2, "gemv_a16_avx2",
                                gemv_f32_avx2, "gemv_f32_avx2",
                                gemv_f64_scalar, "gemv_f64_ref",
                                gemv_dense_avx2, "gemv_dense_avx2",
                                attention_item_avx2, attention_phase_avx2, swiglu_avx2, silu_avx2, geglu_avx2, to_half_avx2,
                                rows_avx2<Pf>, "gemv_pinned16_avx2",
                                head_q8_avx2, "head_q8_avx2",
                                delta_head_avx2, "delta_head_avx2",
                                gemv_fp8s_avx2, "gemv_fp8s_avx2",
                                fp8_q8_avx2, "fp8_q8_avx2"};
  static const KernelTable avx512{Isa::avx512, prepare_q8_cols_avx512,
                                  gemv_a16q8_avx512vnni<Pf>, "gemv_a16q8_avx512vnni",
                                  gemm_a16q8_avx512vnni<Pf>, "gemm_a16q8_avx512vnni",
                                  gemv_w4a4_avx512vnni<Pf>, "gemv_w4a4_avx512vnni",
                                  gemv_a16_avx512, "gemv_a16_avx512",
                                  gemv_f32_avx512, "gemv_f32_avx512",
                                  gemv_f64_scalar, "gemv_f64_ref",
                                  gemv_dense_avx512, "gemv_dense_avx512",
                                  attention_item_avx512, attention_phase_avx512, swiglu_avx512, silu_avx512, geglu_avx512, to_half_avx512,
                                  rows_avx512<Pf>, "gemv_pinned16_avx512",
                                  head_q8_avx512vnni, "head_q8_avx512vnni",
                                  delta_head_avx512, "delta_head_avx512",
                                  gemv_fp8s_avx512, "gemv_fp8s_avx512",
                                  fp8_q8_avx512vnni, "fp8_q8_avx512vnni"};
#ifdef NVFP4_HAVE_AVXVNNI
  // The AVX2 table with the integer-exact gemv/gemm kernels on vpdpbusd (ymm).
  static const KernelTable avxvnni = [] {
    KernelTable t = avx2;
    t.isa = Isa::avxvnni;
    t.a16q8 = gemv_a16q8_avxvnni<Pf>;
    t.a16q8_name = "gemv_a16q8_avxvnni";
    t.a16q8_gemm = gemm_a16q8_avxvnni<Pf>;
    t.a16q8_gemm_name = "gemm_a16q8_avxvnni";
    t.w4a4 = gemv_w4a4_avxvnni<Pf>;
    t.w4a4_name = "gemv_w4a4_avxvnni";
    t.head_q8 = head_q8_avxvnni;
    t.head_q8_name = "head_q8_avxvnni";
    return t;
  }();
#endif
#ifdef NVFP4_HAVE_AMX
  // The AVX-512 table with the FP8 layers' windows and a16q8 prompts on AMX-INT8 tiles.
  static const KernelTable amx = [] {
    KernelTable t = avx512;
    t.isa = Isa::amx;
    t.fp8_q8 = fp8_q8_amx;
    t.fp8_q8_name = "fp8_q8_amx";
    t.a16q8_gemm = gemm_a16q8_amx<Pf>;
    t.a16q8_gemm_name = "gemm_a16q8_amx";
    return t;
  }();
#endif
  switch (isa) {
    case Isa::amx:
#ifdef NVFP4_HAVE_AMX
      return amx;
#else
      return avx512;
#endif
    case Isa::avx512: return avx512;
    case Isa::avxvnni:
#ifdef NVFP4_HAVE_AVXVNNI
      return avxvnni;
#else
      return avx2;
#endif
    case Isa::avx2: return avx2;
    case Isa::scalar: break;
  }
  return scalar;
}

}  // namespace

const KernelTable& table(Isa isa) { return table(isa, active_prefetch()); }

const KernelTable& table(Isa isa, Prefetch pf) {
  return pf == Prefetch::l1 ? table_of<PrefetchL1>(isa) : table_of<PrefetchL1L2>(isa);
}

}  // namespace kern
}  // namespace nvfp4
