// PinnedDense: the same bits for every ISA, thread count and batch size, and close to FP64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "isa_scope.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "kernels/pinned_dense.h"
#include "nvfp4/kernels.h"
#include "nvfp4/kernels.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
using test::IsaEnv;
bool supported(const char* isa) { return isa_supported(parse_isa(isa)); }
}  // namespace

TEST(PinnedDense, BitIdenticalAcrossIsaThreadsBatch) {
  test::Rng rng(11);
  for (int64_t n_in : {576, 1536, 40, 45, 7}) {  // 40, 45, 7: tails of 8, 13 and 7 lanes
    // Batches of 2-9 columns: the kernels take tokens in groups (AVX-512 up to 4, AVX2 up to 3),
    // whole and ragged, beside the one-column path below.
    const int64_t n_out = 37, n = n_in == 576 ? 5 : n_in == 1536 ? 4 : n_in == 40 ? 3 : n_in == 45 ? 2 : 9;
    std::vector<float> w(static_cast<size_t>(n_out * n_in)), x(static_cast<size_t>(n * n_in));
    std::vector<uint16_t> h(w.size()), b(w.size());
    for (size_t i = 0; i < w.size(); ++i) { w[i] = rng.gauss(); h[i] = float_to_half(w[i]); b[i] = float_to_bf16(w[i]); }
    for (auto& v : x) v = rng.gauss() * 3.0f;
    for (const DType dt : {DType::f32, DType::f16, DType::bf16}) {
      const bool f16 = dt == DType::f16, bf16 = dt == DType::bf16;
      const PinnedDense d = PinnedDense::prepare(dt, f16 ? static_cast<const void*>(h.data())
                                                     : bf16 ? static_cast<const void*>(b.data())
                                                            : static_cast<const void*>(w.data()), n_out, n_in);
      EXPECT_EQ(d.bytes(), static_cast<size_t>(n_out * n_in) * (dt == DType::f32 ? 4 : 2));
      std::vector<float> ref(static_cast<size_t>(n * n_out));
      {
        IsaEnv e("scalar");
        ThreadPool p1(1);
        d.forward(x.data(), n, ref.data(), p1);
      }
      // FP64 bound: |err| <= n_in * 2^-24 * sum|w x| (loose, sequential-sum style).
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < n_out; ++r) {
          double exact = 0, mag = 0;
          for (int64_t i = 0; i < n_in; ++i) {
            const size_t k = static_cast<size_t>(r * n_in + i);
            const double wv = f16 ? half_to_float(h[k]) : bf16 ? bf16_to_float(b[k]) : w[k];
            exact += wv * x[static_cast<size_t>(t * n_in + i)];
            mag += std::fabs(wv * x[static_cast<size_t>(t * n_in + i)]);
          }
          EXPECT_LE(std::fabs(ref[static_cast<size_t>(t * n_out + r)] - exact), mag * static_cast<double>(n_in) * 0x1p-24);
        }
      if (bf16) {  // BF16 read as stored gives the bits of the same weights widened to F32 first
        std::vector<float> wide(w.size());
        for (size_t i = 0; i < w.size(); ++i) wide[i] = bf16_to_float(b[i]);
        const PinnedDense f = PinnedDense::prepare(DType::f32, wide.data(), n_out, n_in);
        std::vector<float> want(ref.size());
        IsaEnv e("scalar");
        ThreadPool p1(1);
        f.forward(x.data(), n, want.data(), p1);
        EXPECT_EQ(0, std::memcmp(want.data(), ref.data(), ref.size() * 4)) << "n_in " << n_in;
        std::vector<float> row(static_cast<size_t>(n_in));
        d.row(n_out - 1, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), wide.data() + (n_out - 1) * n_in, row.size() * 4));
      }
      for (const char* isa : {"scalar", "avx2", "avxvnni", "avx512"}) {
        if (!supported(isa)) continue;
        IsaEnv e(isa);
        EXPECT_EQ(isa_name(active_isa()), std::string_view(isa));
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          std::vector<float> all(ref.size());
          d.forward(x.data(), n, all.data(), pool);
          EXPECT_EQ(all, ref) << isa << " threads " << threads << " n_in " << n_in;
          for (int64_t t = 0; t < n; ++t) {  // one column at a time
            std::vector<float> one(static_cast<size_t>(n_out));
            d.forward(x.data() + t * n_in, 1, one.data(), pool);
            EXPECT_EQ(0, std::memcmp(one.data(), ref.data() + t * n_out, one.size() * 4)) << isa;
          }
        }
      }
    }
  }
}

// gather() and forward_rows() (Gemma 4's assistant scores the rows of its top centroids): a row of
// the gathered matrix, computed alone over any run of rows, is the bits forward() gives that row
// in the original, on every ISA the machine has.
TEST(PinnedDense, GatheredRowsAloneGiveForwardsBits) {
  test::Rng rng(12);
  const int64_t n_out = 29, n_in = 45;
  std::vector<uint16_t> b(static_cast<size_t>(n_out * n_in));
  for (auto& v : b) v = float_to_bf16(rng.gauss());
  std::vector<float> x(static_cast<size_t>(n_in));
  for (auto& v : x) v = rng.gauss();
  const PinnedDense d = PinnedDense::prepare(DType::bf16, b.data(), n_out, n_in);
  std::vector<int32_t> order(static_cast<size_t>(n_out));
  for (int64_t i = 0; i < n_out; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + 3) % n_out);
  const PinnedDense g = d.gather(order);
  EXPECT_EQ(g.n_out(), n_out);
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (!supported(isa)) continue;
    IsaEnv e(isa);
    ThreadPool pool(2);
    std::vector<float> whole(static_cast<size_t>(n_out)), rows(static_cast<size_t>(n_out), -1.0f);
    d.forward(x.data(), 1, whole.data(), pool);
    g.forward_rows(x.data(), 5, 17, rows.data());
    for (int64_t i = 0; i < n_out; ++i) {
      if (i < 5 || i >= 17) {
        EXPECT_EQ(rows[static_cast<size_t>(i)], -1.0f) << "row " << i << " written";
        continue;
      }
      const float want = whole[static_cast<size_t>(order[static_cast<size_t>(i)])];
      EXPECT_EQ(std::memcmp(&rows[static_cast<size_t>(i)], &want, 4), 0) << isa << " row " << i;
    }
  }
  EXPECT_THROW(d.gather({0, 29}), nvfp4::Error);
}
