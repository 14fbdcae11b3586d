// The runtime's own exp/log/sin/cos (kernels/pinned_math.h) against libm in long double, and
// its vector loops against the scalar code, bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/codec.h"
#include "nvfp4/kernels.h"
#include "ops/attention.h"
#include "kernels/packed.h"
#include "kernels/pinned_math.h"
#include "test_util.h"

using namespace nvfp4;

TEST(PinnedMath, ExpLogSinCosMatchLibm) {
  test::Rng rng(3);
  double worst_exp = 0, worst_log = 0, worst_sc = 0;
  for (int i = 0; i < 200000; ++i) {
    const double u = rng.uniform();
    const double xe = u * 700.0;
    const long double re = std::exp(static_cast<long double>(xe));
    worst_exp = std::max(worst_exp, static_cast<double>(std::fabs((pinned::exp(xe) - re) / re)));
    const double xl = std::ldexp(1.0 + std::fabs(u), static_cast<int>(rng.next() % 200) - 100);
    const long double rl = std::log(static_cast<long double>(xl));
    worst_log = std::max(worst_log, static_cast<double>(std::fabs(pinned::log(xl) - rl) / std::max(1.0L, std::fabs(rl))));
    const double xs = u * 20000.0;
    double s, c;
    pinned::sincos(xs, s, c);
    worst_sc = std::max(worst_sc, static_cast<double>(std::fabs(s - std::sin(static_cast<long double>(xs)))));
    worst_sc = std::max(worst_sc, static_cast<double>(std::fabs(c - std::cos(static_cast<long double>(xs)))));
  }
  EXPECT_LT(worst_exp, 4e-16);
  EXPECT_LT(worst_log, 4e-16);
  EXPECT_LT(worst_sc, 1e-15);
  EXPECT_EQ(pinned::exp(0.0), 1.0);
  EXPECT_EQ(pinned::exp(-1000.0) >= 0.0, true);
  EXPECT_NEAR(pinned::silu(1.0f), 1.0f / (1.0f + std::exp(-1.0f)), 1e-7f);
}

// The vector softmax-numerator and SwiGLU loops (pinned_exp_avx2.h / pinned_exp_avx512.h) give the
// scalar code's bits on every input: random values over exp's whole range and beyond its clamps,
// and the edges (signed zeros, infinities, NaN, subnormals, the clamp points, odd lengths).
namespace {
std::vector<float> exp_inputs() {
  test::Rng rng(17);
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-38f, -700.0f,
                          -700.5f, -699.5f, 709.0f, 709.5f, 708.9f, 88.7f, -87.3f, -103.9f, -104.0f,
                          1.0f, -1.0f, 0.5f, 3.4e38f, -3.4e38f};
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.uniform() * 2.0 - 1.0;  // [-1, 1)
    switch (i % 4) {
      case 0: v.push_back(static_cast<float>(u * 20.0)); break;     // activations
      case 1: v.push_back(static_cast<float>(u * 800.0)); break;    // past the clamps
      case 2: v.push_back(static_cast<float>(-std::fabs(u) * 120.0)); break;  // softmax shifts
      default: v.push_back(static_cast<float>(std::ldexp(u, static_cast<int>(rng.next() % 60) - 40)));
    }
  }
  return v;
}
using ExpFn = void (*)(const float*, float, float*, int64_t);
using SwigluFn = void (*)(float*, const float*, int64_t);
std::vector<std::pair<std::string, std::pair<ExpFn, SwigluFn>>> vector_variants() {
  std::vector<std::pair<std::string, std::pair<ExpFn, SwigluFn>>> v;
  if (isa_supported(Isa::avx2)) v.push_back({"avx2", {exp_shifted_avx2, swiglu_avx2}});
  if (isa_supported(Isa::avx512)) v.push_back({"avx512", {exp_shifted_avx512, swiglu_avx512}});
  return v;
}
}  // namespace

TEST(PinnedMath, VectorExpAndSwigluEqualScalarBits) {
  const std::vector<float> x = exp_inputs();
  test::Rng rng(5);
  std::vector<float> u(x.size());
  for (auto& e : u) e = static_cast<float>(rng.uniform() * 4.0 - 2.0);
  const auto variants = vector_variants();
  if (variants.empty()) GTEST_SKIP() << "no vector ISA on this CPU";
  for (const auto& [name, fns] : variants) {
    for (const float mx : {0.0f, 3.25f, -17.5f}) {
      // Lengths that leave every tail size.
      for (const int64_t n : {int64_t(x.size()), int64_t(x.size()) - 1, int64_t(7), int64_t(3), int64_t(17), int64_t(31),
                              int64_t(32), int64_t(33), int64_t(47), int64_t(64), int64_t(71)}) {
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        exp_shifted_scalar(x.data(), mx, want.data(), n);
        fns.first(x.data(), mx, got.data(), n);
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << name << " exp, mx " << mx << ", n " << n;
        std::vector<float> in_place(x.begin(), x.begin() + n);
        fns.first(in_place.data(), mx, in_place.data(), n);
        ASSERT_EQ(std::memcmp(want.data(), in_place.data(), want.size() * 4), 0) << name << " exp in place";
      }
    }
    std::vector<float> want(x), got(x);
    swiglu_scalar(want.data(), u.data(), static_cast<int64_t>(x.size()));
    fns.second(got.data(), u.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(want[i]), std::bit_cast<uint32_t>(got[i])) << name << " swiglu x " << x[i];
  }
}

// The in-place SiLU (the Gated DeltaNet conv and output gate): every ISA's row form == pinned::silu
// lane for lane, at lengths that leave every tail size.
TEST(PinnedMath, SiluRowsEqualScalarBits) {
  const std::vector<float> x = exp_inputs();
  for (Isa isa : compiled_isas()) {
    if (!isa_supported(isa)) continue;
    for (const int64_t n : {int64_t(x.size()), int64_t(x.size()) - 1, int64_t(1), int64_t(15), int64_t(16), int64_t(17),
                            int64_t(31), int64_t(33), int64_t(128)}) {
      std::vector<float> got(x.begin(), x.begin() + n);
      kern::table(isa).silu(got.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(pinned::silu(x[static_cast<size_t>(i)])), std::bit_cast<uint32_t>(got[static_cast<size_t>(i)]))
            << isa_name(isa) << " silu x " << x[static_cast<size_t>(i)] << ", n " << n;
    }
  }
}

// Gemma 4's gelu_tanh(g) * u: every ISA's row form == pinned::gelu_tanh times u, lane for lane.
TEST(PinnedMath, GegluRowsEqualScalarBits) {
  const std::vector<float> x = exp_inputs();
  test::Rng rng(9);
  std::vector<float> u(x.size());
  for (auto& e : u) e = static_cast<float>(rng.uniform() * 4.0 - 2.0);
  for (Isa isa : compiled_isas()) {
    if (!isa_supported(isa)) continue;
    for (const int64_t n : {int64_t(x.size()), int64_t(x.size()) - 1, int64_t(1), int64_t(15), int64_t(17), int64_t(33)}) {
      std::vector<float> got(x.begin(), x.begin() + n);
      kern::table(isa).geglu(got.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        ASSERT_EQ(std::bit_cast<uint32_t>(pinned::gelu_tanh(x[k]) * u[k]), std::bit_cast<uint32_t>(got[k]))
            << isa_name(isa) << " geglu x " << x[k] << ", n " << n;
      }
    }
  }
}

// The KV cache's F16 stores: every ISA's row conversion == float_to_half, on every float's upper
// 16 bits (sign, exponent, the mantissa's top 7) with lower bits around each rounding boundary
// (bit 13 is F16's last mantissa bit for normal halves; subnormal halves round at higher bits).
TEST(PinnedMath, ToHalfRowsEqualFloatToHalf) {
  std::vector<float> f;
  const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x2001, 0x3FFF, 0x4000, 0x7FFF,
                           0x8000, 0x8001, 0xBFFF, 0xC000, 0xFFFF};
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (const uint32_t lo : lows) f.push_back(std::bit_cast<float>((hi << 16) | lo));
  std::vector<uint16_t> want(f.size());
  for (size_t i = 0; i < f.size(); ++i) want[i] = float_to_half(f[i]);
  std::vector<std::pair<std::string, void (*)(const float*, uint16_t*, int64_t)>> fns{{"scalar", to_half_scalar}};
  if (isa_supported(Isa::avx2)) fns.push_back({"avx2", to_half_avx2});
  if (isa_supported(Isa::avx512)) fns.push_back({"avx512", to_half_avx512});
  for (const auto& [name, fn] : fns) {
    std::vector<uint16_t> got(f.size(), 0xABCD);
    fn(f.data(), got.data(), static_cast<int64_t>(f.size()));
    for (size_t i = 0; i < f.size(); ++i)
      ASSERT_EQ(want[i], got[i]) << name << " float bits 0x" << std::hex << std::bit_cast<uint32_t>(f[i]);
    for (const int64_t n : {1, 7, 8, 9, 15, 16, 17, 33}) {  // the tails, and nothing past n written
      std::vector<uint16_t> part(40, 0xABCD);
      fn(f.data() + 1000, part.data(), n);
      for (int64_t i = 0; i < 40; ++i)
        ASSERT_EQ(part[static_cast<size_t>(i)], i < n ? want[static_cast<size_t>(1000 + i)] : uint16_t{0xABCD}) << name << " n " << n;
    }
  }
}
