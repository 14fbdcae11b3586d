// Linear (the runtime's entry to the kernels) equals the reference bit for bit in the integer-exact
// modes and f64, for every thread count and window size (float modes a16/f32 are bound-checked
// against FP64 on every ISA in test_kernels_isa.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "nvfp4/error.h"
#include "nvfp4/linear.h"
#include "nvfp4/quantize.h"
#include "test_util.h"

using namespace nvfp4;

TEST(Linear, EqualsReferenceForEveryModeThreadCountAndWindow) {
  test::Rng rng(11);
  const int64_t n_out = 45, n_in = 576;
  std::vector<float> wf(n_out * n_in);
  for (auto& v : wf) v = rng.gauss() * 0.05f;
  RowMatrix w = quantize(wf.data(), n_out, n_in);
  Linear lin = Linear::prepare(w.view(), 0.003f, "t");
  for (int64_t n : {1, 3, 16}) {
    std::vector<float> x(n * n_in);
    for (auto& v : x) v = rng.gauss();
    for (Mode mode : {Mode::a16q8, Mode::w4a4, Mode::f64}) {
      std::vector<float> want(n * n_out);
      matvec_ref(mode, w.view(), x.data(), n, want.data(), 0.003f);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> got(n * n_out);
        lin.forward(mode, x.data(), n, got.data(), pool);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << mode_name(mode) << " n " << n << " threads " << threads << " i " << i;
        }
      }
    }
  }
}

TEST(Linear, W4A4WithoutInputScaleIsRefused) {
  std::vector<float> wf(32, 0.5f);
  RowMatrix w = quantize(wf.data(), 2, 16);
  Linear lin = Linear::prepare(w.view(), 0.0f, "model.layers.0.mlp.down_proj");
  ThreadPool pool(1);
  std::vector<float> x(16, 1.0f), y(2);
  EXPECT_THROW(lin.forward(Mode::w4a4, x.data(), 1, y.data(), pool), Error);
}

TEST(ThreadPool, PartitionCoversEveryItemOnce) {
  for (int64_t count : {0, 1, 7, 64, 1000}) {
    for (int parts : {1, 2, 3, 8}) {
      for (int64_t align : {1, 16}) {
        std::vector<int> seen(count, 0);
        for (int i = 0; i < parts; ++i) {
          int64_t b, e;
          partition(count, parts, i, align, b, e);
          for (int64_t k = b; k < e; ++k) seen[k]++;
          if (b < e && e < count) {
            EXPECT_EQ(e % align, 0);
          }
        }
        for (int64_t k = 0; k < count; ++k) EXPECT_EQ(seen[k], 1);
      }
    }
  }
}
