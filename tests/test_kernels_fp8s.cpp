// The scaled FP8 forms (MXFP8: E4M3 with an E8M0 scale per 32 inputs; FP8 with 128 x 128 block
// scales) on every compiled ISA the CPU has: every weight widened with the same bits as the
// scalar truth (one-hot inputs pick each one out), every product within the derived bound of FP64.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "isa_scope.h"
#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/dense.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

class Fp8sIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam());
    force_isa(GetParam());
  }
  void TearDown() override { clear_forced_isa(); }
};

std::vector<uint8_t> finite_e4m3() {
  std::vector<uint8_t> v;
  for (int b = 0; b < 256; ++b)
    if ((b & 0x7F) != 0x7F) v.push_back(static_cast<uint8_t>(b));
  return v;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f + 0.0f); }  // -0 as +0: a sum from +0

constexpr double kU = 0x1p-24;
double gamma_k(double k) { return k * kU / (1 - k * kU); }

}  // namespace

// E8M0 decodes to 2^(byte - 127) (byte 0: the subnormal 2^-127), the kernels' bit form agrees on
// every byte they may see, and 0xFF is NaN.
TEST(E8m0, DecodesEveryByte) {
  for (int b = 0; b < 255; ++b) {
    EXPECT_EQ(e8m0_to_float(static_cast<uint8_t>(b)), std::ldexp(1.0, b - 127)) << b;
    EXPECT_EQ(std::bit_cast<uint32_t>(kern::e8m0_bits(static_cast<uint8_t>(b))), std::bit_cast<uint32_t>(e8m0_to_float(static_cast<uint8_t>(b)))) << b;
  }
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  // The largest byte the loader takes keeps 448 finite; the next would not.
  EXPECT_TRUE(std::isfinite(448.0f * e8m0_to_float(kE8m0MaxForE4m3)));
  EXPECT_FALSE(std::isfinite(448.0f * e8m0_to_float(kE8m0MaxForE4m3 + 1)));
}

// Every finite E4M3 byte times every E8M0 scale the loader takes (0..246), in every lane position
// of a vector step (the column moves with the exponent), widened exactly: e4m3 * 2^(e - 127).
TEST_P(Fp8sIsa, MxFp8WidensEveryE4m3ByteAtEveryE8m0ExponentExactly) {
  const std::vector<uint8_t> bytes = finite_e4m3();
  const int64_t n_out = static_cast<int64_t>(bytes.size()), n_in = 64;
  ThreadPool pool(2);
  std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in)), scales(static_cast<size_t>(n_out * n_in / kMxBlock));
  std::vector<float> x(static_cast<size_t>(n_in)), y(static_cast<size_t>(n_out));
  for (int e = 0; e <= kE8m0MaxForE4m3; ++e) {
    const int64_t col = (e * 7) % n_in;
    std::fill(codes.begin(), codes.end(), 0);
    for (int64_t r = 0; r < n_out; ++r) codes[static_cast<size_t>(r * n_in + col)] = bytes[static_cast<size_t>(r)];
    std::fill(scales.begin(), scales.end(), static_cast<uint8_t>(e));
    std::fill(x.begin(), x.end(), 0.0f);
    x[static_cast<size_t>(col)] = 1.0f;
    const DenseLinear d = DenseLinear::prepare_scaled(DType::mxfp8, codes.data(), scales.data(), n_out, n_in);
    d.forward(x.data(), 1, y.data(), pool);
    for (int64_t r = 0; r < n_out; ++r) {
      const float want = std::ldexp(e4m3_to_float(bytes[static_cast<size_t>(r)]), e - 127);  // exact in float
      ASSERT_EQ(bits(y[static_cast<size_t>(r)]), bits(want))
          << d.kernel_name(1) << ": byte " << int(bytes[static_cast<size_t>(r)]) << " exponent " << e << " column " << col;
    }
  }
}

// FP8 block scales: every weight is e4m3 * s rounded once in float32 on every ISA; a 300 x 200
// matrix has 3 x 2 blocks, the last row of blocks 44 high and the last column 72 wide, and the
// one-hot column walks across the blocks and the AVX2 scalar tail (200 % 8 == 0; n_in 203 below).
TEST_P(Fp8sIsa, Fp8BlockWidensWithOneRoundingOnEveryIsa) {
  for (const int64_t n_in : {int64_t{200}, int64_t{203}}) {
    const int64_t n_out = 300, br = 3, bc = (n_in + 127) / 128;
    test::Rng rng(static_cast<uint64_t>(n_in));
    std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in));
    for (auto& c : codes) {
      c = static_cast<uint8_t>(rng.next());
      if ((c & 0x7F) == 0x7F) c ^= 1;
    }
    std::vector<float> s(static_cast<size_t>(br * bc));
    for (auto& v : s) v = std::ldexp(1.0f + static_cast<float>(rng.next() % 8388608) / 8388608.0f, static_cast<int>(rng.next() % 40) - 30);
    const DenseLinear d = DenseLinear::prepare_scaled(DType::fp8_b128, codes.data(), s.data(), n_out, n_in);
    ThreadPool pool(3);
    std::vector<float> x(static_cast<size_t>(n_in)), y(static_cast<size_t>(n_out));
    for (int64_t col = 0; col < n_in; col += 9) {
      std::fill(x.begin(), x.end(), 0.0f);
      x[static_cast<size_t>(col)] = 1.0f;
      // Only the chosen column's weights: the others are zeroed so the sum is that one product.
      std::vector<uint8_t> one(codes.size(), 0);
      for (int64_t r = 0; r < n_out; ++r) one[static_cast<size_t>(r * n_in + col)] = codes[static_cast<size_t>(r * n_in + col)];
      const DenseLinear d1 = DenseLinear::prepare_scaled(DType::fp8_b128, one.data(), s.data(), n_out, n_in);
      d1.forward(x.data(), 1, y.data(), pool);
      for (int64_t r = 0; r < n_out; ++r) {
        const float want = e4m3_to_float(codes[static_cast<size_t>(r * n_in + col)]) * s[static_cast<size_t>((r / 128) * bc + col / 128)];
        ASSERT_EQ(bits(y[static_cast<size_t>(r)]), bits(want)) << d1.kernel_name(1) << " n_in " << n_in << " row " << r << " column " << col;
      }
    }
    // DenseLinear::row (embedding lookups, Checkpoint::to_f32) widens the same way.
    std::vector<float> row(static_cast<size_t>(n_in));
    d.row(299, row.data());
    for (int64_t i = 0; i < n_in; ++i)
      ASSERT_EQ(bits(row[static_cast<size_t>(i)]), bits(e4m3_to_float(codes[static_cast<size_t>(299 * n_in + i)]) * s[static_cast<size_t>(2 * bc + i / 128)]));
  }
}

// Random inputs and weights over windows of 1..7 columns: within gamma_{n_in+1} * sum |w x| of the
// FP64 product of the widened weights (any summation order of float32 products, Higham 3.5).
TEST_P(Fp8sIsa, WithinDerivedBoundOfFp64) {
  struct Case { DType dt; int64_t n_out, n_in; };
  for (const Case c : {Case{DType::mxfp8, 1, 32}, Case{DType::mxfp8, 9, 96}, Case{DType::mxfp8, 13, 576},
                       Case{DType::fp8_b128, 1, 7}, Case{DType::fp8_b128, 131, 260}, Case{DType::fp8_b128, 5, 576}}) {
    test::Rng rng(static_cast<uint64_t>(c.n_in * 31 + c.n_out));
    std::vector<uint8_t> codes(static_cast<size_t>(c.n_out * c.n_in));
    for (auto& b : codes) {
      b = static_cast<uint8_t>(rng.next());
      if ((b & 0x7F) == 0x7F) b ^= 1;
    }
    std::vector<uint8_t> scales(static_cast<size_t>(scale_bytes(c.dt, c.n_out, c.n_in)));
    if (c.dt == DType::mxfp8) {
      for (auto& b : scales) b = static_cast<uint8_t>(110 + rng.next() % 30);
    } else {
      for (size_t k = 0; k < scales.size() / 4; ++k) {
        const float v = 0.001f + static_cast<float>(rng.next() % 1000) * 1e-5f;
        std::memcpy(scales.data() + 4 * k, &v, 4);
      }
    }
    const DenseLinear d = DenseLinear::prepare_scaled(c.dt, codes.data(), scales.data(), c.n_out, c.n_in);
    std::vector<float> w(static_cast<size_t>(c.n_out * c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) d.row(r, w.data() + r * c.n_in);
    for (int64_t n = 1; n <= 7; n += 3) {
      std::vector<float> x(static_cast<size_t>(n * c.n_in)), y(static_cast<size_t>(n * c.n_out));
      for (auto& v : x) v = rng.gauss();
      ThreadPool pool(3);
      d.forward(x.data(), n, y.data(), pool);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < c.n_out; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < c.n_in; ++i) {
            const double p = static_cast<double>(w[static_cast<size_t>(r * c.n_in + i)]) * x[static_cast<size_t>(t * c.n_in + i)];
            want += p;
            mag += std::fabs(p);
          }
          ASSERT_LE(std::fabs(y[static_cast<size_t>(t * c.n_out + r)] - want), gamma_k(static_cast<double>(c.n_in + 1)) * mag)
              << d.kernel_name(n) << " " << c.n_out << "x" << c.n_in << " t " << t << " r " << r;
        }
    }
  }
}

TEST_P(Fp8sIsa, KernelNameIsTheTablesFp8sEntry) {
  std::vector<uint8_t> codes(32, 0x38), sc(1, 127);
  const DenseLinear d = DenseLinear::prepare_scaled(DType::mxfp8, codes.data(), sc.data(), 1, 32);
  EXPECT_EQ(d.kernel_name(1), kern::table(GetParam()).fp8s_name);
  EXPECT_THROW(DenseLinear::prepare_scaled(DType::mxfp8, codes.data(), sc.data(), 2, 16), Error);  // n_in % 32
  EXPECT_THROW(DenseLinear::prepare(DType::mxfp8, codes.data(), 1, 32), Error);
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, Fp8sIsa, ::testing::ValuesIn(compiled_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });
