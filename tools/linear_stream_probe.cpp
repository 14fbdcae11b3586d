// How fast one Linear::forward streams its weights from DRAM, through the public API, the way a
// decode step calls it. Not part of the build: a measurement behind docs/BENCHMARKS.md section 15,
// run by hand against a Release build:
//   g++ -O2 -std=c++20 -Iinclude tools/linear_stream_probe.cpp build/libnvfp4_kernels.a build/libnvfp4_format.a build/libnvfp4_base.a -lpthread -o /tmp/lsp
//   /tmp/lsp N_OUT N_IN COUNT THREADS N      (e.g. 8192 2048 48 1 1; NVFP4_ISA=avx2 forces an ISA)
// It prepares COUNT copies of one random NVFP4 matrix (one huge-page arena, as a model's loader
// does: COUNT x N_OUT x N_IN x 9/16 bytes, well past the L3 of most machines), then times 7 passes
// of a16q8 forward() over all of them with N activation columns and prints each pass's rate.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "nvfp4/huge_pages.h"
#include "nvfp4/linear.h"
#include "nvfp4/matrix.h"
#include "nvfp4/thread_pool.h"

using namespace nvfp4;

int main(int argc, char** argv) {
  const int64_t n_out = argc > 1 ? std::atoi(argv[1]) : 8192, n_in = argc > 2 ? std::atoi(argv[2]) : 2048;
  const int count = argc > 3 ? std::atoi(argv[3]) : 48, threads = argc > 4 ? std::atoi(argv[4]) : 1;
  const int n = argc > 5 ? std::atoi(argv[5]) : 1;
  RowMatrix w;
  w.n_out = n_out;
  w.n_in = n_in;
  w.codes.resize(static_cast<size_t>(n_out * n_in / 2));
  w.scales.resize(static_cast<size_t>(n_out * n_in / 16));
  std::mt19937 rng(1);
  for (auto& c : w.codes) c = static_cast<uint8_t>(rng());
  for (auto& s : w.scales) s = static_cast<uint8_t>(0x30 + rng() % 8);  // one binade apart at most: narrow blocks
  auto arena = std::make_shared<HugeArena>();
  std::vector<Linear> layers;
  for (int i = 0; i < count; ++i) layers.push_back(Linear::prepare(w.view(), 0.0f, "probe", arena));
  std::vector<float> x(static_cast<size_t>(n_in * n)), y(static_cast<size_t>(n_out * n));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : x) v = u(rng);
  ThreadPool pool(threads);
  LinearScratch scratch;
  const double bytes = static_cast<double>(count) * static_cast<double>(n_out * n_in) * 9.0 / 16.0;
  std::printf("%s, %lldx%lld x %d, %d thread(s), n %d\n", layers[0].kernel_name(Mode::a16q8, n).c_str(),
              static_cast<long long>(n_out), static_cast<long long>(n_in), count, threads, n);
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& l : layers) l.forward(Mode::a16q8, x.data(), n, y.data(), pool, &scratch);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.2f GB/s  %.3f ms a matrix\n", bytes / s / 1e9, s * 1e3 / count);
  }
  return 0;
}
