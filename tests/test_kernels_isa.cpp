// Every compiled kernel variant the CPU supports, over one edge-case battery: integer-exact modes
// compared with the scalar reference with ==, float modes against FP64 with the derived bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "isa_scope.h"
#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/dense.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/layout.h"
#include "nvfp4/linear.h"
#include "nvfp4/thread_pool.h"
#include "nvfp4/quantize.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

class ForcedIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) {
      GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam()) << ": its kernels are not run here";
    }
    force_isa(GetParam());
  }
  void TearDown() override { clear_forced_isa(); }
};

// Random codes; scale bytes drawn to hit the edges: 0 (a dead group), 0x01 (smallest subnormal),
// 0x07/0x08 (the subnormal/normal seam), 0x7E (448) and anything in between, mixed inside a block.
RowMatrix edge_weights(int64_t n_out, int64_t n_in, uint64_t seed) {
  test::Rng rng(seed);
  RowMatrix w;
  w.n_out = n_out;
  w.n_in = n_in;
  w.scale2 = 0.0137f;
  w.codes.resize(n_out * n_in / 2);
  w.scales.resize(n_out * n_in / 16);
  for (auto& c : w.codes) c = static_cast<uint8_t>(rng.next());
  const uint8_t edges[] = {0x00, 0x01, 0x07, 0x08, 0x7E, 0x7E, 0x38};
  for (auto& s : w.scales) {
    const uint64_t k = rng.next() % 10;
    s = k < 7 ? edges[k] : static_cast<uint8_t>(rng.next() % 0x7F);
  }
  // Row 0: every group at the largest scale with the largest codes (the int32 bounds).
  for (int64_t i = 0; i < n_in / 2; ++i) w.codes[i] = (i % 3) ? 0x77 : 0xFF;
  for (int64_t g = 0; g < n_in / 16; ++g) w.scales[g] = 0x7E;
  // Last row: all zero codes.
  if (n_out > 1) {
    for (int64_t i = 0; i < n_in / 2; ++i) w.codes[(n_out - 1) * n_in / 2 + i] = 0;
  }
  return w;
}

// Realistic weights (ModelOpt quantizer on Gaussian rows of different magnitudes): their 256-blocks
// take the kernels' narrow exact path. kind 1; kinds 2 and 3: every group's scale 0x47 (E = 7)
// except the first of each 256-block at 0x08 (E = 0), i.e. an exponent range of exactly 7 (narrow,
// kNarrowRange: the int32 bound), or 0x4F (E = 8: range 8, the wide path); kind 4: rows 0-7 of each tile as kind
// 2 and rows 8-15 as kind 3 (the AVX2 kernel chooses per 8-row half: one narrow, one wide half in
// the same block); kind 5: whole tiles as kind 2 or 3, alternating by tile and by 256-block (the
// AVX-512 decode pairs two tiles: both narrow, or one of each in either order); kind 6: as kind 2 with
// 0x3F (E = 6) in place of 0x47, the widest range AMX's five planes take (gemm_a16q8_amx.cpp: its
// int32 bound; kind 2 is the first its tiles leave to the AVX-512 kernel); kind 0: edge_weights.
RowMatrix weights_of_kind(int kind, int64_t n_out, int64_t n_in, uint64_t seed) {
  if (kind == 0) return edge_weights(n_out, n_in, seed);
  if (kind == 1) {
    test::Rng rng(seed);
    std::vector<float> wf(n_out * n_in);
    for (int64_t r = 0; r < n_out; ++r) {
      const float mag = 0.01f * static_cast<float>(1 + r % 7);
      for (int64_t i = 0; i < n_in; ++i) wf[r * n_in + i] = rng.gauss() * mag;
    }
    return quantize(wf.data(), n_out, n_in);
  }
  RowMatrix w = edge_weights(n_out, n_in, seed);
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t g = 0; g < n_in / 16; ++g) {
      const bool narrow = kind == 2 || (kind == 4 && r % 16 < 8) || (kind == 5 && (r / 16 + g / 16) % 2 == 0);
      w.scales[r * (n_in / 16) + g] = g % 16 == 0 ? 0x08 : kind == 6 ? 0x3F : (narrow ? 0x47 : 0x4F);
    }
  }
  for (int64_t i = 0; i < n_in / 2; ++i) w.codes[i] = 0x77;  // row 0: the largest positive codes
  if (kind == 4 && n_out > 8) {  // and row 8, the first of the wide half
    for (int64_t i = 0; i < n_in / 2; ++i) w.codes[8 * n_in / 2 + i] = 0x77;
  }
  return w;
}

// Gaussian activations with outliers, a zero 256-block, all-equal columns, a block of one huge value and columns
// whose largest value comes twice with both signs (the m = first-largest rule).
std::vector<float> edge_activations(int64_t n_in, int64_t n, uint64_t seed) {
  test::Rng rng(seed);
  std::vector<float> x(n * n_in);
  for (auto& v : x) v = rng.gauss();
  for (int64_t t = 0; t < n; ++t) {
    float* xt = x.data() + t * n_in;
    xt[(t * 131) % n_in] = (t % 2 ? -1.0f : 1.0f) * 300.0f;
    if (t % 3 == 1 && n_in >= 256) for (int64_t i = 0; i < 256; ++i) xt[i] = 0.0f;
    if (t % 4 == 2) { xt[n_in - 1] = 50.0f; xt[n_in - 2] = -50.0f; }
    if (t % 5 == 3) for (int64_t i = 0; i < n_in; ++i) xt[i] = (i % 16 == 5) ? 1e-3f : 0.0f;
    // All equal: q = -127 everywhere, the largest group sums (the int32 bounds of the kernels).
    if (t % 6 == 4) for (int64_t i = 0; i < n_in; ++i) xt[i] = 1.0f;
  }
  return x;
}

struct Shape { int64_t n_out, n_in; };
// n_in: 16, 64, 256, 576 (= 256+256+64), 1536, 4096, 14352 (14336 + 16: n_in % 256 != 0);
// n_out: 1, a partial tile, a multiple of 16 plus a remainder.
const Shape kShapes[] = {{1, 16}, {17, 64}, {33, 256}, {45, 576}, {16, 1536}, {35, 4096}, {19, 14352}};

void expect_same_bits(const std::vector<float>& got, const float* want, size_t count, const char* what) {
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << what << " i " << i;
  }
}

}  // namespace

TEST_P(ForcedIsa, A16Q8AndW4A4EqualTheReferenceBitForBit) {
  constexpr int64_t kMaxN = 17;
  for (int kind = 0; kind < 6; ++kind) for (const Shape& s : kShapes) {
    if (kind > 0 && s.n_in > 4096) continue;  // keep the test short
    RowMatrix w = weights_of_kind(kind, s.n_out, s.n_in, 1000 + s.n_in);
    std::vector<float> x = edge_activations(s.n_in, kMaxN, 7 + s.n_in);
    const float input_scale = 300.0f / 2688.0f;
    std::vector<float> want_q8(kMaxN * s.n_out), want_4(kMaxN * s.n_out);
    matvec_ref(Mode::a16q8, w.view(), x.data(), kMaxN, want_q8.data());
    matvec_ref(Mode::w4a4, w.view(), x.data(), kMaxN, want_4.data(), input_scale);
    Linear lin = Linear::prepare(w.view(), input_scale, "edge");
    for (int threads = 1; threads <= 3; ++threads) {
      ThreadPool pool(threads);
      for (int64_t n = 1; n <= kMaxN; ++n) {
        // Both prefetch plans (speed only: the same bits), each on every n across the thread counts.
        const Prefetch pf = prefetch_plans()[(threads + n) % 2];
        test::PrefetchEnv pf_scope(pf);
        SCOPED_TRACE(::testing::Message() << isa_name(GetParam()) << " kind " << kind << " " << s.n_out << "x" << s.n_in
                                          << " n " << n << " threads " << threads << " prefetch " << prefetch_name(pf));
        std::vector<float> y(n * s.n_out);
        lin.forward(Mode::a16q8, x.data(), n, y.data(), pool);
        expect_same_bits(y, want_q8.data(), y.size(), lin.kernel_name(Mode::a16q8, n).c_str());
        if (n <= 5 || n == kMaxN) {  // w4a4 is a parity mode: fewer windows keep the test short
          lin.forward(Mode::w4a4, x.data(), n, y.data(), pool);
          expect_same_bits(y, want_4.data(), y.size(), lin.kernel_name(Mode::w4a4, n).c_str());
        }
      }
    }
  }
}

TEST_P(ForcedIsa, PrefillWindowEqualsTheReference) {
  // n >= 32 takes the GEMM path; at n_in 14352 its column blocks hold 72 columns (AVX-512) or 32
  // (AVX2), so n = 80 runs two or three blocks, the last a partial one. n = 33 and 40 end in a
  // partial window of 8. Edge weights (mostly wide blocks), realistic ones (narrow), kind 2 (narrow
  // at the int32 bound: with a column of +1s and one of -1s, AVX2's unsigned activations reach
  // |A| = 16 * 255 * 12 * 1920 per group, gemm_a16q8_avx2_signed.h) and kind 4 (a narrow and a
  // wide half in each block); kind 6 (AMX's widest, at its int32 bound).
  for (const Shape s : {Shape{37, 576}, Shape{17, 14352}}) {
    for (int kind : {0, 1, 2, 4, 6}) {
      RowMatrix w = weights_of_kind(kind, s.n_out, s.n_in, 5);
      Linear lin = Linear::prepare(w.view());
      for (const int64_t n : {int64_t{33}, s.n_in > 1000 ? int64_t{80} : int64_t{40}}) {
        std::vector<float> x = edge_activations(s.n_in, n, 6);
        std::fill_n(x.begin() + 9 * s.n_in, s.n_in, 1.0f);
        std::fill_n(x.begin() + 10 * s.n_in, s.n_in, -1.0f);
        std::vector<float> want(n * s.n_out), y(n * s.n_out);
        matvec_ref(Mode::a16q8, w.view(), x.data(), n, want.data());
        for (int threads : {1, 2}) {
          const Prefetch pf = prefetch_plans()[(threads + n) % 2];
          test::PrefetchEnv pf_scope(pf);
          SCOPED_TRACE(::testing::Message() << isa_name(GetParam()) << " kind " << kind << " " << s.n_out << "x"
                                            << s.n_in << " n " << n << " threads " << threads << " prefetch "
                                            << prefetch_name(pf));
          ThreadPool pool(threads);
          lin.forward(Mode::a16q8, x.data(), n, y.data(), pool);
          expect_same_bits(y, want.data(), y.size(), lin.kernel_name(Mode::a16q8, n).c_str());
        }
      }
    }
  }
}

namespace {
constexpr double kU = 0x1p-24;
double gamma_k(double k) { return k * kU / (1 - k * kU); }
}  // namespace

TEST_P(ForcedIsa, FloatModesWithinDerivedBoundOfFp64) {
  // Any summation order of the same nesting: per product at most n_in + 3 roundings on its path
  // (FMA only removes some), so |y - y64| <= gamma_{n_in+3} * sum |w x| (Higham 3.5), as for the
  // reference. The test also fails if a kernel drops or repeats a term (errors far beyond it).
  for (const Shape& s : {Shape{33, 64}, Shape{45, 576}, Shape{17, 4096}}) {
    test::Rng rng(s.n_in);
    std::vector<float> wf(s.n_out * s.n_in);
    for (auto& v : wf) v = rng.gauss() * 0.05f;
    RowMatrix w = quantize(wf.data(), s.n_out, s.n_in);
    const int64_t n = 6;
    std::vector<float> x = edge_activations(s.n_in, n, 3);
    std::vector<double> wd(s.n_out * s.n_in), xd(x.begin(), x.end()), y64(n * s.n_out);
    dequantize_f64(w.view(), wd.data());
    matvec_f64_ref(w.view(), xd.data(), n, y64.data());
    Linear lin = Linear::prepare(w.view());
    ThreadPool pool(2);
    for (Mode mode : {Mode::a16, Mode::f32}) {
      std::vector<float> y(n * s.n_out);
      lin.forward(mode, x.data(), n, y.data(), pool);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t r = 0; r < s.n_out; ++r) {
          double mag = 0;
          for (int64_t i = 0; i < s.n_in; ++i) mag += std::fabs(wd[r * s.n_in + i] * xd[t * s.n_in + i]);
          ASSERT_LE(std::fabs(y[t * s.n_out + r] - y64[t * s.n_out + r]), gamma_k(s.n_in + 3) * mag)
              << lin.kernel_name(mode, n) << " " << s.n_out << "x" << s.n_in << " t " << t << " r " << r;
        }
      }
    }
  }
}

// An FP8 layer's bytes are widened exactly: every finite E4M3 byte, in every lane position of a
// vector step, comes out as e4m3_to_float gives it (a one-hot input picks it out).
TEST_P(ForcedIsa, DenseWidensEveryE4m3ByteExactly) {
  const int64_t n_in = 37;  // two AVX-512 steps and a masked tail; four AVX2 steps and a scalar tail
  std::vector<uint8_t> bytes;
  std::vector<float> want;
  for (int b = 0; b < 256; ++b)
    if ((b & 0x7F) != 0x7F) want.push_back(e4m3_to_float(static_cast<uint8_t>(b)));
  const int64_t n_out = static_cast<int64_t>(want.size());
  ThreadPool pool(2);
  for (int64_t col = 0; col < n_in; col += 5) {
    bytes.assign(static_cast<size_t>(n_out * n_in), 0);
    for (int64_t r = 0, b = 0; b < 256; ++b)
      if ((b & 0x7F) != 0x7F) bytes[static_cast<size_t>(r++ * n_in + col)] = static_cast<uint8_t>(b);
    std::vector<float> x(static_cast<size_t>(n_in), 0.0f), y(static_cast<size_t>(n_out));
    x[static_cast<size_t>(col)] = 1.0f;
    const DenseLinear d = DenseLinear::prepare(DType::e4m3, bytes.data(), n_out, n_in);
    d.forward(x.data(), 1, y.data(), pool);
    for (int64_t r = 0; r < n_out; ++r)
      ASSERT_EQ(std::bit_cast<uint32_t>(y[static_cast<size_t>(r)]), std::bit_cast<uint32_t>(want[static_cast<size_t>(r)] + 0.0f))
          << "row " << r << " column " << col;
  }
}

TEST_P(ForcedIsa, DenseWithinDerivedBoundOfFp64) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::e4m3}) {
    for (const Shape& s : {Shape{1, 7}, Shape{9, 100}, Shape{13, 576}}) {
      test::Rng rng(s.n_in + static_cast<int>(dt));
      const int64_t n = 5;
      std::vector<float> wf(s.n_out * s.n_in), x(n * s.n_in);
      for (auto& v : x) v = rng.gauss();
      std::vector<uint8_t> bytes(s.n_out * s.n_in * (dt == DType::f32 ? 4 : dt == DType::e4m3 ? 1 : 2));
      for (int64_t k = 0; k < s.n_out * s.n_in; ++k) {
        const float v = rng.gauss();
        if (dt == DType::e4m3) {  // every byte but the NaNs, subnormals and the largest included
          uint8_t b = static_cast<uint8_t>(static_cast<uint32_t>(std::fabs(v) * 97.0f + k) & 0xFF);
          if ((b & 0x7F) == 0x7F) b ^= 1;
          wf[k] = e4m3_to_float(b);
          bytes[k] = b;
        } else if (dt == DType::f32) {
          wf[k] = v;
          std::memcpy(bytes.data() + 4 * k, &v, 4);
        } else {
          const uint16_t h = dt == DType::f16 ? float_to_half(v) : float_to_bf16(v);
          wf[k] = dt == DType::f16 ? half_to_float(h) : bf16_to_float(h);
          std::memcpy(bytes.data() + 2 * k, &h, 2);
        }
      }
      DenseLinear d = DenseLinear::prepare(dt, bytes.data(), s.n_out, s.n_in);
      ThreadPool pool(3);
      std::vector<float> y(n * s.n_out);
      d.forward(x.data(), n, y.data(), pool);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t r = 0; r < s.n_out; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < s.n_in; ++i) {
            want += double(wf[r * s.n_in + i]) * x[t * s.n_in + i];
            mag += std::fabs(double(wf[r * s.n_in + i]) * x[t * s.n_in + i]);
          }
          ASSERT_LE(std::fabs(y[t * s.n_out + r] - want), gamma_k(s.n_in + 1) * mag)
              << d.kernel_name(n) << " dtype " << static_cast<int>(dt) << " " << s.n_out << "x" << s.n_in;
        }
      }
    }
  }
}

TEST_P(ForcedIsa, KernelNameSaysTheIsa) {
  std::vector<float> wf(32 * 64, 0.25f);
  RowMatrix w = quantize(wf.data(), 32, 64);
  Linear lin = Linear::prepare(w.view());
  const std::string name = lin.kernel_name(Mode::a16q8, 1);
  if (GetParam() == Isa::scalar) {
    EXPECT_EQ(name, "gemv_a16q8_ref");
  }
  if (GetParam() == Isa::avx2) {
    EXPECT_EQ(name, "gemv_a16q8_avx2");
    EXPECT_EQ(lin.kernel_name(Mode::a16q8, 64), "gemm_a16q8_avx2");
  }
  if (GetParam() == Isa::avxvnni) {
    EXPECT_EQ(name, "gemv_a16q8_avxvnni");
    EXPECT_EQ(lin.kernel_name(Mode::a16q8, 64), "gemm_a16q8_avxvnni");
  }
  if (GetParam() == Isa::avx512 || GetParam() == Isa::amx) {  // (amx: the AVX-512 table but its FP8 windows and prompts)
    EXPECT_EQ(name, "gemv_a16q8_avx512vnni");
    EXPECT_EQ(lin.kernel_name(Mode::a16q8, 64), GetParam() == Isa::amx ? "gemm_a16q8_amx" : "gemm_a16q8_avx512vnni");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, ForcedIsa, ::testing::ValuesIn(compiled_isas()),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

TEST(Dispatch, NamesParseAndTheBestIsSupported) {
  for (Isa i : compiled_isas()) EXPECT_EQ(parse_isa(isa_name(i)), i);
  EXPECT_THROW(parse_isa("sse9"), Error);
  EXPECT_TRUE(isa_supported(detect_isa()));
  // Every supported ISA can be forced and is then the active one; the best is the last supported.
  const std::vector<Isa> sup = supported_isas();
  ASSERT_FALSE(sup.empty());
  EXPECT_EQ(sup.back(), detect_isa());
  for (Isa i : sup) {
    test::IsaEnv env(i);
    EXPECT_EQ(active_isa(), i) << isa_name(i);
  }
  for (Isa i : compiled_isas()) {
    if (!isa_supported(i)) {
      EXPECT_THROW(force_isa(i), Error) << isa_name(i);
    }
  }
  std::printf("best ISA on this CPU: %s\n", std::string(isa_name(detect_isa())).c_str());
}

// What the dispatcher says the CPU has, against the kernel's own account (/proc/cpuinfo's flags):
// a CPUID check that drifted would run kernels the CPU lacks, or never run the ones it has.
TEST(Dispatch, SupportAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this system";
  const auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (flags.find(std::string(" ") + n + " ") == std::string::npos) return false;
    return true;
  };
  const bool avx2 = has({"avx2", "fma", "f16c", "bmi2"});
  EXPECT_EQ(isa_supported(Isa::avx2), avx2);
  EXPECT_EQ(isa_supported(Isa::avx512),
            avx2 && has({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512vbmi"}));
  const std::vector<Isa> compiled = compiled_isas();
  if (std::find(compiled.begin(), compiled.end(), Isa::avxvnni) != compiled.end()) {
    EXPECT_EQ(isa_supported(Isa::avxvnni), avx2 && has({"avx_vnni"}));
  }
  // AMX needs the flags and the kernel's permission (arch_prctl, Linux 5.16+): without the flags,
  // never; with them, the permission decides.
  if (!(isa_supported(Isa::avx512) && has({"amx_tile", "amx_int8"}))) EXPECT_FALSE(isa_supported(Isa::amx));
}

TEST(Dispatch, PackUnpackRoundTrips) {
  RowMatrix w = edge_weights(21, 96, 4);
  kern::Packed p = kern::pack_weights(w.view());
  RowMatrix t;
  for (int64_t tile = 0; tile < p.tiles; ++tile) {
    kern::unpack_tile(p, tile, t);
    for (int r = 0; r < 16 && tile * 16 + r < 21; ++r) {
      for (int64_t i = 0; i < 96; ++i) ASSERT_EQ(t.view().code(r, i), w.view().code(tile * 16 + r, i));
      for (int64_t g = 0; g < 6; ++g) ASSERT_EQ(t.scales[r * 6 + g], w.scales[(tile * 16 + r) * 6 + g]);
    }
  }
}

// Packing from a GGUF tensor's ggml blocks (where the file maps them) gives the bytes and block
// summary that packing its row layout gives, serially and with two threads, every byte written:
// the padding rows of the last tile are zero codes and zero scales even where the memory was not.
TEST(Dispatch, PackFromGgmlBlocksEqualsPackFromRows) {
  ThreadPool two(2);
  for (int kind : {0, 1, 2, 3, 4, 5})
    for (const auto& [n_out, n_in] : std::vector<std::pair<int64_t, int64_t>>{{21, 64}, {37, 576}, {64, 128}, {5, 4096}}) {
      SCOPED_TRACE("kind " + std::to_string(kind) + ", " + std::to_string(n_out) + "x" + std::to_string(n_in));
      const RowMatrix w = weights_of_kind(kind, n_out, n_in, 7 + kind);
      const GgmlMatrix g = row_to_ggml(w.view(), "w");
      const kern::Packed want = kern::pack_weights(w.view());
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
        {  // leave dirty memory where the stream's block may come from (small blocks: the heap)
          volatile uint8_t* dirty = static_cast<uint8_t*>(::operator new(want.bytes.size(), std::align_val_t{64}));
          for (size_t i = 0; i < want.bytes.size(); ++i) dirty[i] = 0xA5;
          ::operator delete(const_cast<uint8_t*>(dirty), std::align_val_t{64});
        }
        const kern::Packed got = kern::pack_weights(g.view(), {}, pool);
        const kern::Packed rows = kern::pack_weights(w.view(), {}, pool);
        for (const kern::Packed* p : {&got, &rows}) {
          ASSERT_EQ(p->tiles, want.tiles);
          ASSERT_EQ(p->groups, want.groups);
          EXPECT_EQ(p->scale2, want.scale2);
          ASSERT_TRUE(std::equal(p->bytes.begin(), p->bytes.end(), want.bytes.begin(), want.bytes.end()));
          EXPECT_EQ(p->emin, want.emin);
          EXPECT_EQ(p->narrow, want.narrow);
        }
        const int64_t last = want.tiles - 1;
        for (int64_t gi = 0; gi < want.groups; ++gi)
          for (int r = 0; r < 16; ++r) {
            if (last * 16 + r < n_out) continue;
            const uint8_t* rec = got.tile(last) + gi * kern::kRecordBytes;
            for (int j = 0; j < 4; ++j) ASSERT_EQ(rec[4 * r + j] | rec[64 + 4 * r + j], 0);
            ASSERT_EQ(rec[128 + r], 0);
          }
      }
    }
  // A ggml tensor's width is a whole number of 64-value blocks.
  GgmlMatrix odd;
  odd.n_out = 16;
  odd.n_in = 48;
  odd.blocks.assign(16 * 48 / 64 * 36 + 36, 0);
  EXPECT_THROW(kern::pack_weights(odd.view()), Error);
}

// The per-block scale summary beside the packed stream: emin is the smallest E over the row's
// nonzero scales of the 256-block, narrow says every row of the half spans <= kNarrowRange binades,
// and q9 = M * 2^E with M = v - 8E <= 15 (the factorization the narrow kernels use) for every byte.
TEST(Dispatch, BlockSummaryMatchesTheScales) {
  for (int kind : {0, 1, 2, 3, 4, 5}) {
    const int64_t n_out = 37, n_in = 576;  // blocks of 16, 16 and 4 groups; a partial tile
    RowMatrix w = weights_of_kind(kind, n_out, n_in, 11);
    kern::Packed p = kern::pack_weights(w.view());
    ASSERT_EQ(p.blocks, 3);
    for (int64_t t = 0; t < p.tiles; ++t) {
      for (int64_t b = 0; b < p.blocks; ++b) {
        int want_narrow = 3;
        for (int r = 0; r < 16; ++r) {
          const int64_t row = t * 16 + r;
          int lo = 99, hi = -1;
          for (int64_t g = b * 16; g < std::min<int64_t>(n_in / 16, b * 16 + 16) && row < n_out; ++g) {
            const uint8_t v = w.scales[row * (n_in / 16) + g];
            const int e = kern::scale_e(v), m = v - 8 * e;
            ASSERT_LE(m, 15);
            ASSERT_EQ(e4m3_q9(v), m << e) << "byte " << int(v);
            if (v == 0) continue;
            lo = std::min(lo, e);
            hi = std::max(hi, e);
          }
          if (hi < 0) lo = hi = 0;
          ASSERT_EQ(p.emin_at(t, b)[r], lo) << "kind " << kind << " tile " << t << " block " << b << " row " << r;
          if (hi - lo > kern::kNarrowRange) want_narrow &= ~(1 << (r / 8));
        }
        ASSERT_EQ(p.narrow_at(t, b), want_narrow) << "kind " << kind << " tile " << t << " block " << b;
      }
    }
  }
}

TEST(Dispatch, VectorActivationQuantizerEqualsTheReference) {
  if (!isa_supported(Isa::avx2)) GTEST_SKIP() << "this CPU lacks avx2: no vector quantizer runs";
  for (Isa isa : {Isa::avx2, Isa::avx512}) for (int64_t n_in : {16, 64, 576, 4096, 14352}) {
    if (!isa_supported(isa)) continue;
    SCOPED_TRACE(isa_name(isa));
    const int64_t n = 9;
    std::vector<float> x = edge_activations(n_in, n, n_in);
    // Column 8: m = 127 (iscale = -1) and halves everywhere else: every q is a tie to even.
    for (int64_t i = 0; i < n_in; ++i) x[8 * n_in + i] = i == 0 ? 127.0f : static_cast<float>(i % 200 - 100) + 0.5f;
    kern::ActQ8 want, got;
    kern::prepare_q8(x.data(), n, n_in, want);
    (isa == Isa::avx2 ? kern::prepare_q8_avx2 : kern::prepare_q8_avx512)(x.data(), n, n_in, got);
    EXPECT_EQ(got.q, want.q) << n_in;
    EXPECT_EQ(got.corr, want.corr) << n_in;
    EXPECT_EQ(got.corr16, want.corr16) << n_in;
    EXPECT_EQ(got.zero, want.zero) << n_in;
    ASSERT_EQ(got.d.size(), want.d.size());
    for (size_t i = 0; i < got.d.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(got.d[i]), std::bit_cast<uint32_t>(want.d[i]));
  }
}

TEST(Dispatch, PrefetchPlansParseAndEachHasItsOwnKernels) {
  for (Prefetch p : prefetch_plans()) EXPECT_EQ(parse_prefetch(prefetch_name(p)), p);
  EXPECT_THROW(parse_prefetch("l3"), Error);
  EXPECT_EQ(prefetch_from_env_value(nullptr), detect_prefetch());
  EXPECT_EQ(prefetch_from_env_value(""), detect_prefetch());
  EXPECT_EQ(prefetch_from_env_value("l1"), Prefetch::l1);
  EXPECT_EQ(prefetch_from_env_value("l1+l2"), Prefetch::l1_l2);
  // The vendor decides: GenuineIntel in /proc/cpuinfo takes the one L1 distance.
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  bool intel = false;
  while (std::getline(f, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      intel = line.find("GenuineIntel") != std::string::npos;
      break;
    }
  }
  EXPECT_EQ(detect_prefetch(), intel ? Prefetch::l1 : Prefetch::l1_l2);
  // Each plan's table holds its own instantiation of the packed kernels (the same names); the
  // other kernels are shared.
  for (Isa i : compiled_isas()) {
    const kern::KernelTable& a = kern::table(i, Prefetch::l1);
    const kern::KernelTable& b = kern::table(i, Prefetch::l1_l2);
    EXPECT_STREQ(a.a16q8_name, b.a16q8_name);
    EXPECT_EQ(a.f32, b.f32);
    if (i == Isa::scalar) {
      EXPECT_EQ(a.a16q8, b.a16q8);
    } else {
      EXPECT_NE(a.a16q8, b.a16q8) << isa_name(i);
      EXPECT_NE(a.a16q8_gemm, b.a16q8_gemm) << isa_name(i);
      EXPECT_NE(a.w4a4, b.w4a4) << isa_name(i);
    }
  }
  force_prefetch(Prefetch::l1);  // the API call wins over the environment
  EXPECT_EQ(active_prefetch(), Prefetch::l1);
  EXPECT_EQ(&kern::table(Isa::scalar), &kern::table(Isa::scalar, Prefetch::l1));
  force_prefetch(Prefetch::l1_l2);
  EXPECT_EQ(active_prefetch(), Prefetch::l1_l2);
  clear_forced_prefetch();
  EXPECT_EQ(active_prefetch(), prefetch_from_env_value(std::getenv("NVFP4_PREFETCH")));
}

// Decode's pair passes walk tiles t, t + 2, ... (stream 0) and t + 1, t + 3, ... (stream 1) side
// by side; a lead of L bytes from a record is requested at the record L bytes on in its own
// stream wherever the tile is at least as long as the lead (one jump of the other tile: packed.h),
// and with paired_lead_short (the passes over tiles shorter than the far lead) down to half of it.
TEST(Dispatch, PairedPrefetchLeadStaysOnItsOwnStream) {
  for (int64_t groups : {1, 8, 21, 22, 36, 43, 44, 128, 256}) {
    const int64_t S = groups * kern::kRecordBytes;
    // Room for every address formed below (they are compared, never read).
    const std::vector<uint8_t> room(static_cast<size_t>(2 * (3 * S + kern::PrefetchL1L2::kFar + 2 * S)));
    const uint8_t* base = room.data();
    const auto at = [&](int u, int64_t pos) { return base + u * S + (pos / S) * 2 * S + pos % S; };
    for (int u = 0; u < 2; ++u) {
      for (int64_t pos = 0; pos < 3 * S; pos += kern::kRecordBytes) {
        const uint8_t* end = at(u, pos - pos % S) + S;
        for (int64_t lead : {kern::PrefetchL1::kNear, kern::PrefetchL1L2::kNear, kern::PrefetchL1L2::kFar, int64_t{0}, int64_t{144}}) {
          // The short form (two jumps at most): tiles down to half the lead.
          if (lead <= 2 * S)
            EXPECT_EQ(kern::paired_lead_short(at(u, pos) + lead, end, S), at(u, pos + lead))
                << "short, groups " << groups << " stream " << u << " pos " << pos << " lead " << lead;
          if (lead > S) continue;  // a tile shorter than its lead: the short form's
          EXPECT_EQ(kern::paired_lead(at(u, pos) + lead, end, S), at(u, pos + lead))
              << "groups " << groups << " stream " << u << " pos " << pos << " lead " << lead;
        }
      }
    }
  }
}

TEST(Dispatch, EnvironmentValueChoosesTheIsaAndForceWins) {
  EXPECT_EQ(isa_from_env_value("scalar"), Isa::scalar);
  EXPECT_EQ(isa_from_env_value(nullptr), detect_isa());
  EXPECT_EQ(isa_from_env_value(""), detect_isa());
  EXPECT_THROW(isa_from_env_value("sse9"), Error);
  if (isa_supported(Isa::avx2)) {
    EXPECT_EQ(isa_from_env_value("avx2"), Isa::avx2);
  }
  force_isa(Isa::scalar);  // the API call wins over the environment
  EXPECT_EQ(active_isa(), Isa::scalar);
  clear_forced_isa();
  EXPECT_EQ(active_isa(), isa_from_env_value(std::getenv("NVFP4_ISA")));
}
