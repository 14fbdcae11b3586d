// Linear (the runtime's entry to the kernels) equals the reference bit for bit in the integer-exact
// modes and f64, for every thread count and window size (float modes a16/f32 are bound-checked
// against FP64 on every ISA in test_kernels_isa.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <thread>
#include <vector>

#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/linear.h"
#include "nvfp4/quantize.h"
#include "ops/attention.h"
#include "isa_scope.h"
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

// Every window size from 1 to 40 (the step sizes a server's mixed steps take), every ISA, in the
// integer-exact modes: each column equals the scalar reference.
TEST(Linear, EveryWindowSizeEqualsReferenceOnEveryIsa) {
  test::Rng rng(14);
  const int64_t n_out = 96, n_in = 576;
  std::vector<float> wf(n_out * n_in);
  for (auto& v : wf) v = rng.gauss() * 0.05f;
  RowMatrix w = quantize(wf.data(), n_out, n_in);
  Linear lin = Linear::prepare(w.view(), 0.003f, "t");
  std::vector<float> x(40 * n_in);
  for (auto& v : x) v = rng.gauss();
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    std::vector<float> want(40 * n_out);
    matvec_ref(mode, w.view(), x.data(), 40, want.data(), 0.003f);
    for (Isa isa : supported_isas()) {
      force_isa(isa);
      ThreadPool pool(2);
      for (int64_t n = 1; n <= 40; ++n) {
        std::vector<float> got(n * n_out);
        lin.forward(mode, x.data(), n, got.data(), pool);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << mode_name(mode) << " " << isa_name(isa) << " n " << n << " i " << i;
      }
    }
    clear_forced_isa();
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

// forward_group (q/k/v, gate/up) gives each layer its own forward()'s bits: every mode, one
// token, a window and a prefill-sized window, layers of different heights (tiles split unevenly
// across threads).
TEST(Linear, GroupEqualsOneByOne) {
  test::Rng rng(12);
  const int64_t n_in = 576;
  std::vector<RowMatrix> ws;
  std::vector<Linear> lins;
  for (int64_t n_out : {45, 16, 100}) {
    std::vector<float> wf(n_out * n_in);
    for (auto& v : wf) v = rng.gauss() * 0.05f;
    ws.push_back(quantize(wf.data(), n_out, n_in));
    lins.push_back(Linear::prepare(ws.back().view(), 0.003f + 0.001f * static_cast<float>(lins.size()), "g"));
  }
  const Linear* ls[3] = {&lins[0], &lins[1], &lins[2]};
  for (int64_t n : {1, 3, 40}) {
    std::vector<float> x(n * n_in);
    for (auto& v : x) v = rng.gauss();
    for (Mode mode : {Mode::a16q8, Mode::a16, Mode::w4a4, Mode::f32, Mode::f64}) {
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<std::vector<float>> want(3), got(3);
        float* ys[3];
        for (int i = 0; i < 3; ++i) {
          want[i].resize(n * lins[i].n_out());
          got[i].assign(n * lins[i].n_out(), -1.0f);
          lins[i].forward(mode, x.data(), n, want[i].data(), pool);
          ys[i] = got[i].data();
        }
        Linear::forward_group(mode, ls, x.data(), n, ys, pool);
        for (int i = 0; i < 3; ++i)
          for (size_t j = 0; j < want[i].size(); ++j)
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i][j]), std::bit_cast<uint32_t>(want[i][j]))
                << mode_name(mode) << " n " << n << " threads " << threads << " layer " << i << " j " << j;
      }
    }
  }
  std::vector<float> wf(16 * 32, 0.5f);
  RowMatrix narrow = quantize(wf.data(), 16, 32);
  Linear other = Linear::prepare(narrow.view(), 0.0f, "narrow");
  const Linear* mixed[2] = {&lins[0], &other};
  std::vector<float> x(n_in, 1.0f), y0(45), y1(16);
  float* ys[2] = {y0.data(), y1.data()};
  ThreadPool pool(2);
  EXPECT_THROW(Linear::forward_group(Mode::a16q8, mixed, x.data(), 1, ys, pool), Error);
}

// forward_rows with SwiGLU in each chunk (the dense MLP's gate/up) equals each layer's forward()
// followed by the scalar SwiGLU over the whole output: every mode, every compiled ISA, 1-3
// threads, one token, a window and a prefill-sized window, a height with a partial last tile;
// every row is handed to exactly one rows() call.
TEST(Linear, RowsWithSwigluEqualsForwardThenSwiglu) {
  test::Rng rng(15);
  const int64_t n_in = 576, n_out = 200;
  std::vector<RowMatrix> ws;
  std::vector<Linear> lins;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> wf(n_out * n_in);
    for (auto& v : wf) v = rng.gauss() * 0.05f;
    ws.push_back(quantize(wf.data(), n_out, n_in));
    lins.push_back(Linear::prepare(ws.back().view(), 0.003f + 0.001f * static_cast<float>(i), i ? "up" : "gate"));
  }
  const Linear* ls[2] = {&lins[0], &lins[1]};
  for (int64_t n : {1, 3, 40}) {
    std::vector<float> x(n * n_in);
    for (auto& v : x) v = rng.gauss();
    for (Isa isa : supported_isas()) {
      test::IsaEnv scope(isa);
      for (Mode mode : {Mode::a16q8, Mode::a16, Mode::w4a4, Mode::f32, Mode::f64}) {
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          std::vector<float> wg(n * n_out), wu(n * n_out), gg(n * n_out, -1.0f), gu(n * n_out, -1.0f);
          lins[0].forward(mode, x.data(), n, wg.data(), pool);
          lins[1].forward(mode, x.data(), n, wu.data(), pool);
          swiglu_scalar(wg.data(), wu.data(), n * n_out);
          std::vector<std::atomic<int>> seen(static_cast<size_t>(n_out));
          float* ys[2] = {gg.data(), gu.data()};
          Linear::forward_rows(mode, ls, x.data(), n, ys, pool, nullptr, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) seen[static_cast<size_t>(r)].fetch_add(1);
            for (int64_t t = 0; t < n; ++t) swiglu_rows(gg.data() + t * n_out + r0, gu.data() + t * n_out + r0, r1 - r0);
          });
          for (int64_t r = 0; r < n_out; ++r) ASSERT_EQ(seen[static_cast<size_t>(r)].load(), 1) << "row " << r;
          for (size_t j = 0; j < wg.size(); ++j)
            ASSERT_EQ(std::bit_cast<uint32_t>(gg[j]), std::bit_cast<uint32_t>(wg[j]))
                << mode_name(mode) << " " << isa_name(isa) << " n " << n << " threads " << threads << " j " << j;
        }
      }
    }
  }
  std::vector<float> wf(16 * n_in, 0.5f);
  RowMatrix shorter = quantize(wf.data(), 16, n_in);
  Linear other = Linear::prepare(shorter.view(), 0.0f, "shorter");
  const Linear* mixed[2] = {&lins[0], &other};
  std::vector<float> x(n_in, 1.0f), y0(n_out), y1(16);
  float* ys[2] = {y0.data(), y1.data()};
  ThreadPool pool(2);
  EXPECT_THROW(Linear::forward_rows(Mode::a16q8, mixed, x.data(), 1, ys, pool, nullptr, [](int64_t, int64_t) {}), Error);
}

// forward_many (a MoE layer's experts, each over the tokens routed to it): each layer over its own
// input and column count, one of them empty, gives its own forward()'s bits in every mode. The
// widths differ (as Nemotron-H's shared down beside its experts' downs), so the dispatch's share
// of records by bytes must still run every tile of every layer once.
TEST(Linear, ManyEqualsOneByOne) {
  test::Rng rng(13);
  const int64_t n_ins[4] = {320, 256, 640, 320};
  std::vector<RowMatrix> ws;
  std::vector<Linear> lins;
  for (int64_t n_out : {64, 16, 100, 48}) {
    const int64_t n_in = n_ins[lins.size()];
    std::vector<float> wf(n_out * n_in);
    for (auto& v : wf) v = rng.gauss() * 0.05f;
    ws.push_back(quantize(wf.data(), n_out, n_in));
    lins.push_back(Linear::prepare(ws.back().view(), 0.003f + 0.001f * static_cast<float>(lins.size()), "e"));
  }
  const int64_t ns[4] = {1, 0, 37, 5};  // 37: the GEMM path beside GEMV ones
  std::vector<std::vector<float>> xs(4);
  for (int i = 0; i < 4; ++i) {
    xs[i].resize(static_cast<size_t>(std::max<int64_t>(ns[i], 1) * n_ins[i]));
    for (auto& v : xs[i]) v = rng.gauss();
  }
  const Linear* ls[4] = {&lins[0], &lins[1], &lins[2], &lins[3]};
  const float* xp[4] = {xs[0].data(), xs[1].data(), xs[2].data(), xs[3].data()};
  for (Mode mode : {Mode::a16q8, Mode::a16, Mode::w4a4, Mode::f32, Mode::f64}) {
    for (int threads : {1, 2, 3, 5}) {
      ThreadPool pool(threads);
      LinearScratch scratch;
      std::vector<std::vector<float>> want(4), got(4);
      float* ys[4];
      for (int i = 0; i < 4; ++i) {
        want[i].resize(static_cast<size_t>(ns[i] * lins[i].n_out()));
        got[i].assign(want[i].size(), -1.0f);
        lins[i].forward(mode, xp[i], ns[i], want[i].data(), pool);
        ys[i] = got[i].data();
      }
      Linear::forward_many(mode, ls, xp, ns, ys, pool, &scratch);
      for (int i = 0; i < 4; ++i)
        for (size_t j = 0; j < want[i].size(); ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i][j]), std::bit_cast<uint32_t>(want[i][j]))
              << mode_name(mode) << " threads " << threads << " layer " << i << " j " << j;
    }
  }
}

// forward_routed (a MoE layer's gate/up over the tokens routed to each expert): layer i over rows
// rows[i] of one input, consecutive layers sharing a row list, one layer empty, a row repeated and
// a window wide enough for the GEMM path: each layer's bits equal forward() of its gathered rows.
TEST(Linear, RoutedEqualsForwardOfGatheredRows) {
  test::Rng rng(17);
  const int64_t n_in = 320, n = 40;
  std::vector<RowMatrix> ws;
  std::vector<Linear> lins;
  for (int64_t n_out : {64, 48, 16, 100, 32}) {
    std::vector<float> wf(n_out * n_in);
    for (auto& v : wf) v = rng.gauss() * 0.05f;
    ws.push_back(quantize(wf.data(), n_out, n_in));
    lins.push_back(Linear::prepare(ws.back().view(), 0.003f + 0.001f * static_cast<float>(lins.size()), "e"));
  }
  std::vector<float> x(static_cast<size_t>(n * n_in));
  for (auto& v : x) v = rng.gauss();
  for (int64_t i = 0; i < 4 * n_in; ++i) x[static_cast<size_t>(7 * n_in + i)] = 0.0f;  // rows 7-10: zero blocks
  std::vector<int64_t> r0 = {3, 9, 0}, r2, r3 = {39}, r4 = {5, 5, 8};
  for (int64_t t = 0; t < n; t += 1) r2.push_back(n - 1 - t);  // 40 rows: the GEMM path
  const int64_t* rows[5] = {r0.data(), r0.data(), r2.data(), r3.data(), r4.data()};
  const int64_t ns[5] = {3, 3, n, 1, 0};
  const Linear* ls[5] = {&lins[0], &lins[1], &lins[2], &lins[3], &lins[4]};
  for (Isa isa : compiled_isas()) {
    if (!isa_supported(isa)) continue;
    test::IsaEnv env(isa);
    for (Mode mode : {Mode::a16q8, Mode::a16, Mode::w4a4, Mode::f32, Mode::f64}) {
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        LinearScratch scratch;
        std::vector<std::vector<float>> want(5), got(5);
        float* ys[5];
        for (int i = 0; i < 5; ++i) {
          std::vector<float> g(static_cast<size_t>(std::max<int64_t>(ns[i], 1) * n_in));
          for (int64_t j = 0; j < ns[i]; ++j) std::copy_n(x.data() + rows[i][j] * n_in, n_in, g.data() + j * n_in);
          want[i].resize(static_cast<size_t>(ns[i] * lins[i].n_out()));
          got[i].assign(want[i].size(), -1.0f);
          lins[i].forward(mode, g.data(), ns[i], want[i].data(), pool);
          ys[i] = got[i].data();
        }
        Linear::forward_routed(mode, ls, x.data(), n, rows, ns, ys, pool, &scratch);
        for (int i = 0; i < 5; ++i)
          for (size_t j = 0; j < want[i].size(); ++j)
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i][j]), std::bit_cast<uint32_t>(want[i][j]))
                << isa_name(isa) << " " << mode_name(mode) << " threads " << threads << " layer " << i << " j " << j;
      }
    }
  }
  ThreadPool pool(1);
  std::vector<int64_t> bad = {n};
  const int64_t* brows[1] = {bad.data()};
  const int64_t bn[1] = {1};
  std::vector<float> y(64);
  float* bys[1] = {y.data()};
  const Linear* bl[1] = {&lins[0]};
  EXPECT_THROW(Linear::forward_routed(Mode::a16q8, bl, x.data(), n, brows, bn, bys, pool), Error);
}

// The spinning hand-off: many short jobs in a row, each item run exactly once, for thread counts
// below, at and above the core count (the last sleeps instead of spinning).
TEST(ThreadPool, ManyShortJobsRunEveryItemOnce) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int threads : {2, cores, cores + 2}) {
    ThreadPool pool(threads);
    std::vector<int> hits(257);
    for (int job = 0; job < 2000; ++job) {
      const int64_t count = 1 + job % 257;
      pool.run(count, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++; });
    }
    int64_t want_total = 0, total = 0;
    for (int job = 0; job < 2000; ++job) want_total += 1 + job % 257;
    for (int h : hits) total += h;
    EXPECT_EQ(total, want_total) << threads << " threads";
    // Item i runs in every job with count > i.
    for (int64_t i = 0; i < 257; ++i) {
      int64_t want = 0;
      for (int job = 0; job < 2000; ++job) want += (1 + job % 257) > i ? 1 : 0;
      ASSERT_EQ(hits[static_cast<size_t>(i)], want) << "item " << i << ", " << threads << " threads";
    }
  }
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
