// The Q8_0 head: quantization == PyPI gguf's bytes on real SmolLM2 rows; the integer-exact kernel
// the same bits on every compiled ISA and 1/2/3 threads, and within its derived bound of FP64; the
// float-mode and embedding paths exact dequantizations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "isa_scope.h"
#include "kernels/head_q8.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/kernels.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/q8_0.h"
#include "ops/head.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

constexpr int64_t kRowBytes(int64_t n_in) { return n_in / 32 * 34; }

// Random Q8_0 blocks: every int8 value possible (-128 included), scales ~ N(0, 0.02) as f16.
std::vector<uint8_t> random_blocks(test::Rng& rng, int64_t n_out, int64_t n_in) {
  std::vector<uint8_t> b(static_cast<size_t>(n_out * kRowBytes(n_in)));
  for (size_t k = 0; k < b.size() / 34; ++k) {
    BlockQ8_0 blk;
    blk.d = float_to_half(rng.gauss() * 0.02f);
    for (auto& q : blk.qs) q = static_cast<int8_t>(rng.next() & 0xFF);
    std::memcpy(b.data() + k * 34, &blk, 34);
  }
  return b;
}

}  // namespace

TEST(Q8_0Quant, MatchesGgufPackageOnSmolLM2Rows) {
  const auto x = test::read_fixture<float>("ggml/q8_0_quant.f32");
  const auto want = test::read_fixture<uint8_t>("ggml/q8_0_quant.blocks");
  const int64_t n_in = 576, rows = static_cast<int64_t>(x.size()) / n_in;
  ASSERT_EQ(static_cast<int64_t>(want.size()), rows * kRowBytes(n_in));
  ASSERT_GE(rows, 40);
  std::vector<uint8_t> got(want.size());
  for (int64_t r = 0; r < rows; ++r) quantize_row_q8_0(x.data() + r * n_in, n_in, got.data() + r * kRowBytes(n_in));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(0, std::memcmp(got.data() + r * kRowBytes(n_in), want.data() + r * kRowBytes(n_in), kRowBytes(n_in))) << "row " << r;
  // The decoder reads them back as ggml does (ggml_dequantize_row).
  std::vector<float> a(static_cast<size_t>(n_in)), b(a.size());
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row_q8_0(want.data() + r * kRowBytes(n_in), n_in, a.data());
    ggml_dequantize_row(ggml::Q8_0, want.data() + r * kRowBytes(n_in), b.data(), n_in);
    ASSERT_EQ(a, b) << "row " << r;
  }
}

TEST(HeadQ8, BitIdenticalAcrossIsaThreadsAndWithinBoundOfFp64) {
  test::Rng rng(13);
  for (int64_t n_in : {576, 64, 288, 1024}) {
    const int64_t n_out = 53, n = 3;  // 53: 16-row passes, an 8-row pass and a scalar tail
    const auto blocks = random_blocks(rng, n_out, n_in);
    std::vector<float> x(static_cast<size_t>(n * n_in));
    for (auto& v : x) v = rng.gauss() * 2.0f;
    x[5] = 0.0f;
    const Head h = Head::q8_0(blocks.data(), n_out, n_in, true);
    ASSERT_EQ(h.type_name(), "Q8_0");
    std::vector<float> ref(static_cast<size_t>(n * n_out));
    {
      test::IsaEnv e(Isa::scalar);
      ThreadPool p1(1);
      h.forward(Mode::a16q8, x.data(), n, ref.data(), p1);
      EXPECT_EQ(h.kernel_name(Mode::a16q8), "head_q8_ref");
    }
    // FP64 oracle of the same integer operands: the activation quantized by the reference
    // quantize_act_q8; bound gamma(J + B + 1) * S (kernels/head_q8.h).
    std::vector<float> wrow(static_cast<size_t>(n_in));
    for (int64_t t = 0; t < n; ++t) {
      Q8Activations qa;
      quantize_act_q8(x.data() + t * n_in, n_in, qa);
      const int64_t B = qa.blocks(), J = kQ8Block / 32;
      const double u = 0x1p-24, k = static_cast<double>(J + B + 1), gamma = k * u / (1 - k * u);
      for (int64_t r = 0; r < n_out; ++r) {
        double exact = 0, mag = 0;
        for (int64_t j = 0; j < n_in / 32; ++j) {
          BlockQ8_0 blk;
          std::memcpy(&blk, blocks.data() + r * kRowBytes(n_in) + j * 34, 34);
          int64_t isum = 0;
          for (int i = 0; i < 32; ++i) isum += int64_t{blk.qs[i]} * qa.q[static_cast<size_t>(j * 32 + i)];
          const double term = static_cast<double>(qa.d[static_cast<size_t>(j * 32 / kQ8Block)]) *
                              half_to_float(blk.d) * static_cast<double>(isum);
          exact += term;
          mag += std::fabs(term);
        }
        const double got = ref[static_cast<size_t>(t * n_out + r)];
        EXPECT_LE(std::fabs(got - exact), gamma * mag) << "n_in " << n_in << " t " << t << " r " << r;
      }
    }
    for (Isa isa : compiled_isas()) {
      if (!isa_supported(isa)) continue;
      test::IsaEnv e(isa);
      EXPECT_NE(h.kernel_name(Mode::a16q8).find("head_q8_"), std::string::npos);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> all(ref.size());
        h.forward(Mode::a16q8, x.data(), n, all.data(), pool);
        EXPECT_EQ(all, ref) << isa_name(isa) << " threads " << threads << " n_in " << n_in;
        for (int64_t t = 0; t < n; ++t) {  // one column at a time: the same bits
          std::vector<float> one(static_cast<size_t>(n_out));
          h.forward(Mode::w4a4, x.data() + t * n_in, 1, one.data(), pool);
          EXPECT_EQ(0, std::memcmp(one.data(), ref.data() + t * n_out, one.size() * 4)) << isa_name(isa) << " t " << t;
        }
      }
    }
  }
}

TEST(HeadQ8, FloatModesAndRowsAreExactDequantizations) {
  test::Rng rng(17);
  const int64_t n_out = 21, n_in = 96;
  const auto blocks = random_blocks(rng, n_out, n_in);
  std::vector<float> w(static_cast<size_t>(n_out * n_in));
  for (int64_t r = 0; r < n_out; ++r) dequantize_row_q8_0(blocks.data() + r * kRowBytes(n_in), n_in, w.data() + r * n_in);
  const Head hi = Head::q8_0(blocks.data(), n_out, n_in, true);
  const Head hf = Head::q8_0(blocks.data(), n_out, n_in, false);
  std::vector<float> row(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    for (const Head* h : {&hi, &hf}) {
      h->row(r, row.data());
      EXPECT_EQ(0, std::memcmp(row.data(), w.data() + r * n_in, static_cast<size_t>(n_in) * 4)) << "row " << r;
    }
  }
  // Float modes: PinnedDense over the dequantized weights, bit for bit.
  const PinnedDense pd = PinnedDense::from_f32(w, n_out, n_in);
  std::vector<float> x(static_cast<size_t>(2 * n_in));
  for (auto& v : x) v = rng.gauss();
  ThreadPool pool(2);
  std::vector<float> a(static_cast<size_t>(2 * n_out)), b(a.size());
  hf.forward(Mode::f32, x.data(), 2, a.data(), pool);
  pd.forward(x.data(), 2, b.data(), pool);
  EXPECT_EQ(a, b);
  EXPECT_EQ(hf.kernel_name(Mode::f32).find("q8_0 dequantized"), 0u);
}

// The row-interleaved layout: the reference equals the pinned order recomputed here from the GGUF
// blocks row-major (so the layout loses nothing), and every compiled kernel equals the reference
// for row counts around the 16-row group (padding), 1..16 columns, and row ranges that start and
// end inside a group.
TEST(HeadQ8, InterleavedLayoutEveryColumnCountAndRowRange) {
  test::Rng rng(29);
  for (int64_t n_in : {64, 288, 2048}) {
    for (int64_t n_out : {1, 15, 16, 17, 40}) {
      const auto blocks = random_blocks(rng, n_out, n_in);
      const kern::HeadQ8 w = kern::HeadQ8::prepare(blocks.data(), n_out, n_in);
      ASSERT_EQ(w.rows % 16, 0);
      ASSERT_GE(w.rows, n_out);
      for (int64_t n = 1; n <= 16; ++n) {
        std::vector<float> x(static_cast<size_t>(n * n_in));
        for (auto& v : x) v = rng.gauss();
        kern::ActQ8 a;
        kern::prepare_q8(x.data(), n, n_in, a);
        std::vector<float> ref(static_cast<size_t>(n * n_out), -1.0f);
        kern::head_q8_scalar(w, a, 0, n_out, ref.data());
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t r = 0; r < n_out; ++r) {
            float acc = 0.0f;
            for (int64_t b = 0; b < a.blocks; ++b) {
              float s = 0.0f;
              for (int64_t j = b * 8; j < std::min(n_in / 32, (b + 1) * 8); ++j) {
                BlockQ8_0 blk;
                std::memcpy(&blk, blocks.data() + r * kRowBytes(n_in) + j * 34, 34);
                int32_t isum = 0;
                for (int i = 0; i < 32; ++i) isum += int32_t{blk.qs[i]} * a.qg(2 * j + i / 16, t)[i % 16];
                const float p = half_to_float(blk.d) * static_cast<float>(isum);
                s = s + p;
              }
              const float p = a.d[static_cast<size_t>(t * a.blocks + b)] * s;
              acc = acc + p;
            }
            ASSERT_EQ(0, std::memcmp(&acc, &ref[static_cast<size_t>(t * n_out + r)], 4)) << "n_in " << n_in << " r " << r;
          }
        }
        for (Isa isa : compiled_isas()) {
          if (!isa_supported(isa)) continue;
          const kern::HeadQ8Fn fn = kern::table(isa).head_q8;
          std::vector<float> all(ref.size(), -2.0f), parts(ref.size(), -3.0f);
          fn(w, a, 0, n_out, all.data());
          EXPECT_EQ(all, ref) << isa_name(isa) << " n_in " << n_in << " n_out " << n_out << " n " << n;
          const int64_t c1 = std::min<int64_t>(n_out, 7), c2 = std::min<int64_t>(n_out, 23);
          fn(w, a, 0, c1, parts.data());
          fn(w, a, c1, c2, parts.data());
          fn(w, a, c2, n_out, parts.data());
          EXPECT_EQ(parts, ref) << isa_name(isa) << " split, n_in " << n_in << " n_out " << n_out << " n " << n;
        }
      }
    }
  }
}

// Head::prefix (the MTP proposer's --draft-vocab): the head of the first n rows gives, on every
// compiled ISA and in the integer and float modes, the bits of the whole head's first n logits,
// for Q8_0 (integer-exact and dequantized) and F32/F16/BF16 heads; n not a multiple of 64, past
// the head, or an NVFP4 head is refused.
TEST(HeadPrefix, FirstRowsGiveTheWholeHeadsBitsOnEveryIsa) {
  test::Rng rng(31);
  const int64_t n_out = 200, n_in = 96, n = 3;
  const auto blocks = random_blocks(rng, n_out, n_in);
  std::vector<float> wf(static_cast<size_t>(n_out * n_in));
  for (auto& v : wf) v = rng.gauss() * 0.05f;
  std::vector<uint16_t> w16(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) w16[i] = float_to_half(wf[i]);
  std::vector<Head> heads;
  heads.push_back(Head::q8_0(blocks.data(), n_out, n_in, true));
  heads.push_back(Head::q8_0(blocks.data(), n_out, n_in, false));
  heads.push_back(Head::dense(PinnedDense::prepare(DType::f32, wf.data(), n_out, n_in)));
  heads.push_back(Head::dense(PinnedDense::prepare(DType::f16, w16.data(), n_out, n_in)));
  heads.push_back(Head::dense(PinnedDense::prepare(DType::bf16, w16.data(), n_out, n_in)));
  std::vector<float> x(static_cast<size_t>(n * n_in));
  for (auto& v : x) v = rng.gauss();
  ThreadPool pool(2);
  for (const Head& h : heads) {
    SCOPED_TRACE(h.type_name());
    for (const int64_t k : {int64_t{64}, int64_t{128}, int64_t{192}}) {
      const Head p = h.prefix(k);
      EXPECT_EQ(p.n_out(), k);
      EXPECT_EQ(p.type_name(), h.type_name());
      for (Isa isa : compiled_isas()) {
        if (!isa_supported(isa)) continue;  // (a Zen 4 has AVX-512 VNNI but not AVX-VNNI)
        test::IsaEnv e(isa);
        for (const Mode mode : {Mode::a16q8, Mode::f32}) {
          std::vector<float> whole(static_cast<size_t>(n * n_out)), part(static_cast<size_t>(n * k));
          h.forward(mode, x.data(), n, whole.data(), pool);
          p.forward(mode, x.data(), n, part.data(), pool);
          for (int64_t t = 0; t < n; ++t)
            EXPECT_EQ(0, std::memcmp(part.data() + t * k, whole.data() + t * n_out, static_cast<size_t>(k) * 4))
                << "column " << t << ", " << k << " rows, " << isa_name(isa);
        }
      }
      std::vector<float> a(static_cast<size_t>(n_in)), b(a.size());
      h.row(k - 1, a.data());
      p.row(k - 1, b.data());
      EXPECT_EQ(a, b);
    }
    EXPECT_THROW(h.prefix(100), Error);
    EXPECT_THROW(h.prefix(256), Error);
    EXPECT_THROW(h.prefix(0), Error);
  }
  RowMatrix rm;
  rm.n_out = 64;
  rm.n_in = 64;
  rm.codes.assign(64 * 32, 0x11);
  rm.scales.assign(64 * 4, 0x38);
  const Head nv = Head::nvfp4(std::move(rm), 0.0f, "head", true, true);
  EXPECT_THROW(nv.prefix(64), Error);
}
