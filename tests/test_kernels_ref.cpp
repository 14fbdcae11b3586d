// Reference kernels (SPEC.md section 5): window invariance, hand-checkable integer cases and
// derived error bounds against the FP64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "nvfp4/codec.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/quantize.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

struct Case {
  RowMatrix w;
  std::vector<float> x;  // [n][n_in]
  int64_t n;
};

Case make_case(int64_t n_out, int64_t n_in, int64_t n, uint64_t seed) {
  test::Rng rng(seed);
  std::vector<float> wf(n_out * n_in);
  for (auto& v : wf) v = rng.gauss() * 0.05f;
  Case c{quantize(wf.data(), n_out, n_in), std::vector<float>(n * n_in), n};
  for (auto& v : c.x) v = rng.gauss();
  // Outliers as real activations have them, and one all-zero 256-block in the last column.
  for (int64_t t = 0; t < n; ++t) c.x[t * n_in + (t * 37) % n_in] = 20.0f * (t % 2 ? -1 : 1);
  if (n_in >= 512) for (int64_t i = 256; i < 512; ++i) c.x[(n - 1) * n_in + i] = 0.0f;
  return c;
}

constexpr double kU = 0x1p-24;  // float32 unit roundoff
double gamma_k(double k) { return k * kU / (1 - k * kU); }

}  // namespace

TEST(RefKernels, WindowOfNEqualsNTimesOneColumnBitForBit) {
  for (int64_t n_in : {64, 576, 1536}) {
    Case c = make_case(33, n_in, 7, n_in);
    for (Mode mode : {Mode::a16q8, Mode::w4a4, Mode::a16, Mode::f32, Mode::f64}) {
      std::vector<float> yn(c.n * 33), y1(33);
      matvec_ref(mode, c.w.view(), c.x.data(), c.n, yn.data(), 0.01f);
      for (int64_t t = 0; t < c.n; ++t) {
        matvec_ref(mode, c.w.view(), c.x.data() + t * n_in, 1, y1.data(), 0.01f);
        for (int r = 0; r < 33; ++r) {
          ASSERT_EQ(std::bit_cast<uint32_t>(yn[t * 33 + r]), std::bit_cast<uint32_t>(y1[r]))
              << mode_name(mode) << " n_in " << n_in << " t " << t << " r " << r;
        }
      }
    }
  }
}

TEST(RefKernels, A16Q8ActivationBlocksFollowTheSpec) {
  // 576 = 256 + 256 + 64: three blocks, the last short.
  std::vector<float> x(576, 0.0f);
  x[3] = 2.0f;
  x[10] = -2.0f;  // same magnitude later: m is the first one, +2
  x[300] = -4.0f;
  x[600 - 30] = 1.0f;
  Q8Activations a;
  quantize_act_q8(x.data(), 576, a);
  ASSERT_EQ(a.blocks(), 3);
  EXPECT_EQ(a.d[0], 1.0f / (-127.0f / 2.0f));
  EXPECT_EQ(a.q[3], -127);
  EXPECT_EQ(a.q[10], 127);
  EXPECT_EQ(a.q[300], -127 * -1 * -1);  // m = -4: iscale = 31.75, q = -127
  EXPECT_EQ(a.zero[2], 0);
  EXPECT_EQ(a.q[570], -127);
  std::vector<float> z(300, 0.0f);
  quantize_act_q8(z.data(), 300, a);
  EXPECT_EQ(a.zero[0], 1);
  EXPECT_EQ(a.zero[1], 1);
}

TEST(RefKernels, A16Q8IntegerCaseIsExact) {
  // x = integers with m = -127: iscale = 1 and q = x, so y = half(T * 2^-10 * 1 * scale2).
  const int64_t n_in = 256;
  test::Rng rng(3);
  RowMatrix w;
  w.n_out = 1; w.n_in = n_in; w.scale2 = 0.5f;
  w.codes.resize(n_in / 2);
  w.scales.resize(n_in / 16);
  for (auto& c : w.codes) c = static_cast<uint8_t>(rng.next());
  for (auto& s : w.scales) s = static_cast<uint8_t>(0x20 + rng.next() % 0x20);
  std::vector<float> x(n_in);
  for (auto& v : x) v = static_cast<float>(static_cast<int>(rng.next() % 255) - 127);
  x[0] = -127.0f;
  for (auto& v : x) if (v == 127.0f) v = 126.0f;  // keep m = -127 the first largest
  int64_t T = 0;
  for (int g = 0; g < 16; ++g) {
    int64_t s = 0;
    for (int j = 0; j < 16; ++j) s += e2m1_q1(w.view().code(0, g * 16 + j)) * static_cast<int64_t>(x[g * 16 + j]);
    T += s * e4m3_q9(w.scales[g]);
  }
  const float want = half_to_float(float_to_half(((static_cast<float>(T) * 0x1p-10f) * 1.0f) * 0.5f));
  float y;
  matvec_ref(Mode::a16q8, w.view(), x.data(), 1, &y);
  EXPECT_EQ(y, want);
}

TEST(RefKernels, FloatModesWithinDerivedBoundOfFp64) {
  // Recursive float32 summation of k terms: |y - y64| <= gamma_k * sum|w_i x_i| (Higham 3.5);
  // the a16 nesting (16-sums, a scale product, the group sum, scale2) and the f32 weight rounding
  // add at most n_in + 3 roundings on any path, so k = n_in + 3 bounds both.
  for (int64_t n_in : {64, 576, 1536, 4096}) {
    Case c = make_case(40, n_in, 2, 100 + n_in);
    std::vector<double> wd(40 * n_in), xd(c.x.begin(), c.x.end()), y64(2 * 40);
    dequantize_f64(c.w.view(), wd.data());
    matvec_f64_ref(c.w.view(), xd.data(), 2, y64.data());
    for (Mode mode : {Mode::a16, Mode::f32}) {
      std::vector<float> y(2 * 40);
      matvec_ref(mode, c.w.view(), c.x.data(), 2, y.data());
      for (int t = 0; t < 2; ++t) {
        for (int r = 0; r < 40; ++r) {
          double mag = 0;
          for (int64_t i = 0; i < n_in; ++i) mag += std::fabs(wd[r * n_in + i] * xd[t * n_in + i]);
          EXPECT_LE(std::fabs(y[t * 40 + r] - y64[t * 40 + r]), gamma_k(n_in + 3) * mag)
              << mode_name(mode) << " n_in " << n_in;
        }
      }
    }
  }
}

TEST(RefKernels, IntegerModesWithinDerivedBoundAndReported) {
  // a16q8: each activation moves by at most half a step |m_b|/127/2, so
  //   |y - y64| <= sum_b (|m_b| / 254) * sum_{i in b} |w_i|  + float tail + half rounding,
  // the tail being (blocks + 3) roundings of float32 on sum|w x| and the half rounding 2^-11 |y|.
  // w4a4: each activation moves by at most one E2M1 step of its group (step <= 2 * e4m3(s) *
  // input_scale / 2 between codes 4 and 6), bounded the same way with the group's step.
  const int64_t n_out = 64, n_in = 1536;
  Case c = make_case(n_out, n_in, 4, 99);
  std::vector<double> wd(n_out * n_in), xd(c.x.begin(), c.x.end()), y64(4 * n_out);
  dequantize_f64(c.w.view(), wd.data());
  matvec_f64_ref(c.w.view(), xd.data(), 4, y64.data());
  double err2[2] = {0, 0}, ref2 = 0;
  for (int t = 0; t < 4; ++t) {
    const float* xt = c.x.data() + t * n_in;
    float amax = 0;
    for (int64_t i = 0; i < n_in; ++i) amax = std::max(amax, std::fabs(xt[i]));
    const float input_scale = amax / 2688.0f;
    std::vector<float> yq(n_out), y4(n_out);
    matvec_ref(Mode::a16q8, c.w.view(), xt, 1, yq.data());
    matvec_ref(Mode::w4a4, c.w.view(), xt, 1, y4.data(), input_scale);
    Fp4Activations a4;
    quantize_act_fp4(xt, n_in, input_scale, a4);
    for (int r = 0; r < n_out; ++r) {
      const double ref = y64[t * n_out + r];
      double bq = 0, b4 = 0, mag = 0;
      for (int64_t b = 0; b < n_in / 256; ++b) {
        float m = 0;
        for (int i = 0; i < 256; ++i) m = std::max(m, std::fabs(xt[b * 256 + i]));
        for (int i = 0; i < 256; ++i) bq += m / 254.0 * std::fabs(wd[r * n_in + b * 256 + i]);
      }
      for (int64_t g = 0; g < n_in / 16; ++g) {
        const double step = e4m3_to_float(a4.scales[g]) * static_cast<double>(input_scale);
        for (int j = 0; j < 16; ++j) {
          b4 += step * std::fabs(wd[r * n_in + g * 16 + j]);
          mag += std::fabs(wd[r * n_in + g * 16 + j] * xt[g * 16 + j]);
        }
      }
      const double tail = gamma_k(n_in / 256 + 3) * (mag + bq) + 0x1p-11 * (std::fabs(ref) + bq) + 0x1p-24;
      const double tail4 = gamma_k(4) * (mag + b4) + 0x1p-11 * (std::fabs(ref) + b4) + 0x1p-24;
      EXPECT_LE(std::fabs(yq[r] - ref), bq + tail) << "a16q8 row " << r;
      EXPECT_LE(std::fabs(y4[r] - ref), b4 + tail4) << "w4a4 row " << r;
      err2[0] += (yq[r] - ref) * (yq[r] - ref);
      err2[1] += (y4[r] - ref) * (y4[r] - ref);
      ref2 += ref * ref;
    }
  }
  std::printf("[ report ] relative RMS error vs FP64, %lldx%lld, gaussian x with outliers: "
              "a16q8 %.3e, w4a4 %.3e\n", (long long)n_out, (long long)n_in,
              std::sqrt(err2[0] / ref2), std::sqrt(err2[1] / ref2));
  EXPECT_LT(std::sqrt(err2[0] / ref2), 0.03);  // the outliers (20 sigma) set the q8 step
}
