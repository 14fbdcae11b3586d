// The integer-exact FP8 layer (Fp8Linear; kernels/fp8_q8.h): every finite E4M3 byte against an
// independent decode (e4m3_to_float, itself checked against ml_dtypes), the same bits on every
// compiled ISA, thread count and window width as the scalar reference, and the derived bound
// against float64.
#include <gtest/gtest.h>

#include <bit>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/fp8_q8.h"
#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/fp8_linear.h"
#include "nvfp4/kernels.h"

using namespace nvfp4;

namespace {

class Fp8Q8Isa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam());
  }
  void TearDown() override { clear_forced_isa(); }
};

uint64_t g_state = 0x9E3779B97F4A7C15ull;
uint64_t next_rand() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}

// Random finite E4M3 bytes (every value, NaN bytes replaced).
std::vector<uint8_t> random_codes(int64_t n) {
  std::vector<uint8_t> c(static_cast<size_t>(n));
  for (auto& b : c) {
    b = static_cast<uint8_t>(next_rand());
    if ((b & 0x7F) == 0x7F) b = 0x7E;
  }
  return c;
}
std::vector<float> random_x(int64_t n, float scale) {
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = static_cast<float>(static_cast<int64_t>(next_rand() >> 40) - (1 << 23)) * scale;
  return x;
}

// The scalar reference through the table's scalar entry, on activations quantized once.
std::vector<float> reference(const std::vector<uint8_t>& codes, int64_t n_out, int64_t n_in, const std::vector<float>& x,
                             int64_t n) {
  const kern::Fp8Q8 w = kern::Fp8Q8::prepare(codes.data(), n_out, n_in);
  kern::ActQ8 a;
  kern::prepare_q8(x.data(), n, n_in, a);
  std::vector<float> y(static_cast<size_t>(n * n_out));
  kern::fp8_q8_scalar(w, a, 0, n_out, y.data());
  return y;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// n columns of random inputs, column 1 all zero from 3 columns on (a block ActQ8 skips).
std::vector<float> window_x(int64_t n, int64_t n_in) {
  std::vector<float> x = random_x(n * n_in, 0x1p-20f);
  if (n >= 3)
    for (int64_t i = 0; i < n_in; ++i) x[static_cast<size_t>(n_in + i)] = 0.0f;
  return x;
}

// The layer on `isa` at one and two threads gives ref's bits (the count of other values is 0).
void expect_ref_bits(Isa isa, const Fp8Linear& l, const std::vector<float>& x, int64_t n, const std::vector<float>& ref,
                     const std::string& what) {
  force_isa(isa);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    std::vector<float> y(static_cast<size_t>(n * l.n_out()), -1.0f);
    l.forward(x.data(), n, y.data(), pool);
    size_t bad = 0;
    for (size_t k = 0; k < y.size(); ++k) bad += bits(y[k]) != bits(ref[k]);
    EXPECT_EQ(bad, 0u) << what << " n " << n << " threads " << threads;
  }
  clear_forced_isa();
}

}  // namespace

// Every finite byte in every row lane and input slot of a unit: the reference's T for a one-hot
// input equals the byte's value (e4m3_to_float) times 2^9 times the activation code, and its
// float steps follow fp8_q8.h; then every ISA gives the same bits.
TEST_P(Fp8Q8Isa, EveryByteOneHot) {
  const int64_t n_out = 256, n_in = 64;
  std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in), 0);
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t i = 0; i < n_in; ++i) codes[static_cast<size_t>(r * n_in + i)] = static_cast<uint8_t>((r + i) % 256 == 0x7F || (r + i) % 256 == 0xFF ? 0 : (r + i) % 256);
  for (int64_t hot = 0; hot < n_in; hot += 5) {
    std::vector<float> x(static_cast<size_t>(n_in), 0.0f);
    x[static_cast<size_t>(hot)] = -1.75f;  // q = 127 (the block's first largest magnitude is negative: iscale > 0)
    const std::vector<float> ref = reference(codes, n_out, n_in, x, 1);
    kern::ActQ8 a;
    kern::prepare_q8(x.data(), 1, n_in, a);
    const int8_t q = a.qg(hot / 16, 0)[hot % 16];
    for (int64_t r = 0; r < n_out; ++r) {
      const uint8_t b = codes[static_cast<size_t>(r * n_in + hot)];
      const double T = static_cast<double>(e4m3_to_float(b)) * 512.0 * q;  // exact in double
      float c = static_cast<float>(T);
      c = c * 0x1p-9f;
      c = c * a.d[0];
      EXPECT_EQ(bits(ref[static_cast<size_t>(r)]), bits(0.0f + c)) << "byte " << int(b);
    }
    force_isa(GetParam());
    ThreadPool pool(1);
    const Fp8Linear l = Fp8Linear::prepare(codes.data(), n_out, n_in);
    std::vector<float> y(static_cast<size_t>(n_out));
    l.forward(x.data(), 1, y.data(), pool);
    clear_forced_isa();
    for (int64_t r = 0; r < n_out; ++r) EXPECT_EQ(bits(y[static_cast<size_t>(r)]), bits(ref[static_cast<size_t>(r)])) << r;
  }
}

// Random layers at shapes that end mid-group, mid-unit-block and mid-256-block, windows of 1 to 9
// columns (one all zero), one and two threads: the scalar bits, and column t's bits whatever the
// window around it.
TEST_P(Fp8Q8Isa, SameBitsAsReference) {
  for (int64_t n_out : {1, 15, 16, 17, 40}) {
    for (int64_t n_in : {16, 48, 96, 256, 272, 320, 352, 784}) {
      const std::vector<uint8_t> codes = random_codes(n_out * n_in);
      for (int64_t n : {1, 2, 3, 5, 9, 17}) {  // (8 and more: the AMX form's tiles, two at 17)
        std::vector<float> x = random_x(n * n_in, 0x1p-20f);
        if (n >= 3)
          for (int64_t i = 0; i < n_in; ++i) x[static_cast<size_t>(n_in + i)] = 0.0f;  // column 1 all zero
        const std::vector<float> ref = reference(codes, n_out, n_in, x, n);
        force_isa(GetParam());
        const Fp8Linear l = Fp8Linear::prepare(codes.data(), n_out, n_in);
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          std::vector<float> y(static_cast<size_t>(n * n_out), -1.0f);
          l.forward(x.data(), n, y.data(), pool);
          for (size_t k = 0; k < y.size(); ++k)
            ASSERT_EQ(bits(y[k]), bits(ref[k])) << n_out << "x" << n_in << " n " << n << " threads " << threads << " at " << k;
          std::vector<float> y1(static_cast<size_t>(n_out));
          l.forward(x.data() + (n - 1) * n_in, 1, y1.data(), pool);
          for (int64_t r = 0; r < n_out; ++r)
            ASSERT_EQ(bits(y1[static_cast<size_t>(r)]), bits(ref[static_cast<size_t>((n - 1) * n_out + r)]));
        }
        clear_forced_isa();
      }
    }
  }
}

// The largest integers the derivation allows: every weight +-448 (byte 0x7E / 0xFE) against the
// activation at +-127 in every position of three 256-blocks, signs mixed so lanes and planes
// reach their bounds; and the result within the derived bound of float64 on random layers.
TEST_P(Fp8Q8Isa, ExtremesAndBound) {
  const int64_t n_out = 32, n_in = 768;
  std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in));
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t i = 0; i < n_in; ++i) codes[static_cast<size_t>(r * n_in + i)] = r % 2 == 0 ? 0x7E : (i % 3 ? 0xFE : 0x7E);
  std::vector<float> x(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n_in; ++i) x[static_cast<size_t>(i)] = i % 7 == 3 ? -1.0f : 1.0f;
  const std::vector<float> ref = reference(codes, n_out, n_in, x, 1);
  {  // row 0 (every weight +448) by hand: q = -127 where x = 1 (the first largest magnitude is +1), +127 where x = -1
    kern::ActQ8 a;
    kern::prepare_q8(x.data(), 1, n_in, a);
    float acc = 0.0f;
    for (int64_t b = 0; b < 3; ++b) {
      int64_t neg = 0;
      for (int64_t i = 256 * b; i < 256 * (b + 1); ++i) neg += i % 7 == 3;
      float c = static_cast<float>(int64_t{229376} * -127 * (256 - 2 * neg));
      c = c * 0x1p-9f;
      c = c * a.d[static_cast<size_t>(b)];
      acc = acc + c;
    }
    EXPECT_EQ(bits(ref[0]), bits(acc));
  }
  force_isa(GetParam());
  ThreadPool pool(2);
  const Fp8Linear l = Fp8Linear::prepare(codes.data(), n_out, n_in);
  std::vector<float> y(static_cast<size_t>(n_out));
  l.forward(x.data(), 1, y.data(), pool);
  for (int64_t r = 0; r < n_out; ++r) EXPECT_EQ(bits(y[static_cast<size_t>(r)]), bits(ref[static_cast<size_t>(r)])) << r;
  {  // the same extremes in a window of 9 columns (the AMX form's planes at their largest)
    std::vector<float> x5;
    for (int k = 0; k < 9; ++k) x5.insert(x5.end(), x.begin(), x.end());
    std::vector<float> y5(static_cast<size_t>(9 * n_out));
    l.forward(x5.data(), 9, y5.data(), pool);
    for (int64_t k = 0; k < 9 * n_out; ++k)
      EXPECT_EQ(bits(y5[static_cast<size_t>(k)]), bits(ref[static_cast<size_t>(k % n_out)])) << "window of 9 at " << k;
  }

  // The bound: |y - sum_b d_b 2^-9 T_b| <= gamma(B + 2) * sum_b |d_b| |T_b| 2^-9, in float64.
  const int64_t m_out = 24, m_in = 1040;
  const std::vector<uint8_t> rc = random_codes(m_out * m_in);
  const std::vector<float> rx = random_x(2 * m_in, 0x1p-18f);
  const Fp8Linear rl = Fp8Linear::prepare(rc.data(), m_out, m_in);
  std::vector<float> ry(static_cast<size_t>(2 * m_out));
  rl.forward(rx.data(), 2, ry.data(), pool);
  clear_forced_isa();
  kern::ActQ8 a;
  kern::prepare_q8(rx.data(), 2, m_in, a);
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t r = 0; r < m_out; ++r) {
      double exact = 0, S = 0;
      for (int64_t b = 0; b < a.blocks; ++b) {
        double T = 0;
        for (int64_t i = b * 256; i < std::min<int64_t>(m_in, (b + 1) * 256); ++i)
          T += static_cast<double>(e4m3_to_float(rc[static_cast<size_t>(r * m_in + i)])) * 512.0 * a.qg(i / 16, t)[i % 16];
        exact += a.d[static_cast<size_t>(t * a.blocks + b)] * T * 0x1p-9;
        S += std::fabs(a.d[static_cast<size_t>(t * a.blocks + b)] * T * 0x1p-9);
      }
      const double k = static_cast<double>(a.blocks + 2), g = k * 0x1p-24 / (1 - k * 0x1p-24);
      EXPECT_LE(std::fabs(ry[static_cast<size_t>(t * m_out + r)] - exact), g * S) << t << " " << r;
    }
}

// MXFP8: every E8M0 byte the loader takes (0..246) on a one-hot input against the independent
// decode, then random layers (scales 100..140) at shapes ending mid-group and mid-block, 1 to 9
// columns, one and two threads: the scalar reference's bits on every ISA.
TEST_P(Fp8Q8Isa, MxfpSameBitsAsReference) {
  {
    const int64_t n_out = 247, n_in = 64;
    std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in), 0x38), sc(static_cast<size_t>(n_out * 2));  // 0x38: 1.0
    for (int64_t r = 0; r < n_out; ++r) sc[static_cast<size_t>(2 * r)] = sc[static_cast<size_t>(2 * r + 1)] = static_cast<uint8_t>(r);
    std::vector<float> x(static_cast<size_t>(n_in), 0.0f);
    x[37] = 2.5f;
    kern::ActQ8 a;
    kern::prepare_q8(x.data(), 1, n_in, a);
    const int8_t q = a.qg(37 / 16, 0)[37 % 16];
    const kern::Fp8Q8 w = kern::Fp8Q8::prepare_mx(codes.data(), sc.data(), n_out, n_in);
    std::vector<float> ref(static_cast<size_t>(n_out));
    kern::fp8_q8_scalar(w, a, 0, n_out, ref.data());
    for (int64_t r = 0; r < n_out; ++r) {
      float f = static_cast<float>(static_cast<double>(e4m3_to_float(0x38)) * 512.0 * q);
      f = f * static_cast<float>(std::ldexp(1.0, static_cast<int>(r) - 127 - 9));
      const float s = 0.0f + f;
      float c = s * a.d[0];
      EXPECT_EQ(bits(ref[static_cast<size_t>(r)]), bits(0.0f + c)) << "e8m0 " << r;
    }
    force_isa(GetParam());
    ThreadPool pool(2);
    const Fp8Linear l = Fp8Linear::prepare_mx(codes.data(), sc.data(), n_out, n_in);
    std::vector<float> y(static_cast<size_t>(n_out));
    l.forward(x.data(), 1, y.data(), pool);
    clear_forced_isa();
    for (int64_t r = 0; r < n_out; ++r) EXPECT_EQ(bits(y[static_cast<size_t>(r)]), bits(ref[static_cast<size_t>(r)])) << r;
  }
  for (int64_t n_out : {1, 17, 40}) {
    for (int64_t n_in : {32, 96, 288, 800}) {
      const std::vector<uint8_t> codes = random_codes(n_out * n_in);
      std::vector<uint8_t> sc(static_cast<size_t>(n_out * n_in / 32));
      for (auto& e : sc) e = static_cast<uint8_t>(100 + next_rand() % 41);
      const kern::Fp8Q8 w = kern::Fp8Q8::prepare_mx(codes.data(), sc.data(), n_out, n_in);
      const Fp8Linear l = Fp8Linear::prepare_mx(codes.data(), sc.data(), n_out, n_in);
      for (int64_t n : {1, 3, 5, 9, 17, 33}) {  // (16 and more: the AMX form)
        const std::vector<float> x = window_x(n, n_in);
        kern::ActQ8 a;
        kern::prepare_q8(x.data(), n, n_in, a);
        std::vector<float> ref(static_cast<size_t>(n * n_out));
        kern::fp8_q8_scalar(w, a, 0, n_out, ref.data());
        expect_ref_bits(GetParam(), l, x, n, ref, std::to_string(n_out) + "x" + std::to_string(n_in));
      }
    }
  }
}

// FP8 with 128 x 128 block scales (DeepSeek, GLM, Kimi): a one-hot input in every row of three
// row blocks against the steps of fp8_q8.h by hand (the factor s * 2^-9 once), then random layers
// at shapes ending mid-block (n_in = 160: a 128-block and a 32-wide one; rows past a 128-row
// block), 1 to 9 columns, one and two threads: the scalar reference's bits on every ISA, and the
// float64 bound on the dequantized weights (e4m3 * s) times the quantized input.
TEST_P(Fp8Q8Isa, Block128SameBitsAsReference) {
  {
    const int64_t n_out = 300, n_in = 160;
    std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in), 0x38);  // 1.0
    const std::vector<float> sc = {0.37f, 3.0e-3f, 1.5f, 7.0e4f, 1.0e-30f, 2.0f};  // [3][2]
    std::vector<float> x(static_cast<size_t>(n_in), 0.0f);
    x[141] = -1.75f;  // in the second (32-wide) input block
    kern::ActQ8 a;
    kern::prepare_q8(x.data(), 1, n_in, a);
    const int8_t q = a.qg(141 / 16, 0)[141 % 16];
    const kern::Fp8Q8 w = kern::Fp8Q8::prepare_b128(codes.data(), sc.data(), n_out, n_in);
    std::vector<float> ref(static_cast<size_t>(n_out));
    kern::fp8_q8_scalar(w, a, 0, n_out, ref.data());
    for (int64_t r = 0; r < n_out; ++r) {
      float f = static_cast<float>(512 * q);
      f = f * (sc[static_cast<size_t>(2 * (r / 128) + 1)] * 0x1p-9f);
      const float s = 0.0f + 0.0f + 0.0f + 0.0f + f;  // four zero 32-blocks, then the one holding input 141
      const float c = s * a.d[0];
      EXPECT_EQ(bits(ref[static_cast<size_t>(r)]), bits(0.0f + c)) << "row " << r;
    }
    force_isa(GetParam());
    ThreadPool pool(2);
    const Fp8Linear l = Fp8Linear::prepare_b128(codes.data(), sc.data(), n_out, n_in);
    EXPECT_STREQ(l.form(), "b128");
    std::vector<float> y(static_cast<size_t>(n_out));
    l.forward(x.data(), 1, y.data(), pool);
    clear_forced_isa();
    for (int64_t r = 0; r < n_out; ++r) EXPECT_EQ(bits(y[static_cast<size_t>(r)]), bits(ref[static_cast<size_t>(r)])) << r;
  }
  for (int64_t n_out : {1, 17, 150}) {
    for (int64_t n_in : {32, 160, 288, 800}) {
      const std::vector<uint8_t> codes = random_codes(n_out * n_in);
      const int64_t br = (n_out + 127) / 128, bc = (n_in + 127) / 128;
      std::vector<float> sc(static_cast<size_t>(br * bc));
      for (auto& v : sc) v = std::ldexp(1.0f + static_cast<float>(next_rand() % 1000) / 999.0f, static_cast<int>(next_rand() % 20) - 14);
      const kern::Fp8Q8 w = kern::Fp8Q8::prepare_b128(codes.data(), sc.data(), n_out, n_in);
      const Fp8Linear l = Fp8Linear::prepare_b128(codes.data(), sc.data(), n_out, n_in);
      for (int64_t n : {1, 3, 5, 9, 17}) {  // (16 and more: the AMX form)
        const std::vector<float> x = window_x(n, n_in);
        kern::ActQ8 a;
        kern::prepare_q8(x.data(), n, n_in, a);
        std::vector<float> ref(static_cast<size_t>(n * n_out));
        kern::fp8_q8_scalar(w, a, 0, n_out, ref.data());
        // The bound: 32-blocks' T_j exact; float(T_j), its product, the block's sum of at most 8
        // and the block's two steps round once each: gamma(B + 11) * S over the exact terms.
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < n_out; ++r) {
            double exact = 0, S = 0;
            for (int64_t i = 0; i < n_in; ++i) {
              const double v = static_cast<double>(e4m3_to_float(codes[static_cast<size_t>(r * n_in + i)])) *
                               sc[static_cast<size_t>((r / 128) * bc + i / 128)] * a.qg(i / 16, t)[i % 16] *
                               a.d[static_cast<size_t>(t * a.blocks + i / 256)];
              exact += v;
              S += std::fabs(v);
            }
            const double k = static_cast<double>(a.blocks + 11), g = k * 0x1p-24 / (1 - k * 0x1p-24);
            ASSERT_LE(std::fabs(ref[static_cast<size_t>(t * n_out + r)] - exact), g * S) << n_out << "x" << n_in << " " << t << " " << r;
          }
        expect_ref_bits(GetParam(), l, x, n, ref, std::to_string(n_out) + "x" + std::to_string(n_in));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, Fp8Q8Isa, ::testing::ValuesIn(compiled_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });
