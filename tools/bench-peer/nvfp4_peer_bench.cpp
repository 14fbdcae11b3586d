// The ggml peer of `nvfp4 bench kernels`: times ggml-cpu's own NVFP4 (GGML_TYPE_NVFP4 = 40)
// mul_mat through a ggml graph (what llama.cpp runs: activations converted to Q8_0, then
// ggml_vec_dot_nvfp4_q8_0) on the weights the bench wrote (ggml blocks, n_out rows).
// Built against ggml by scripts/setup-bench-peer.sh; ggml's code is never part of this repository.
// Prints one JSON line: {"median_ms": .., "min_ms": .., "max_ms": .., "reps": ..}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char** argv) {
  std::string weights, residency = "cache";
  long long n_out = 0, n_in = 0, n = 1, threads = 1, reps = 9, dram_bytes = 1ll << 30;
  double max_s = 1e9;  // stop after 3 reps once this much time has gone
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--weights") weights = v;
    else if (k == "--n-out") n_out = std::atoll(v.c_str());
    else if (k == "--n-in") n_in = std::atoll(v.c_str());
    else if (k == "--n") n = std::atoll(v.c_str());
    else if (k == "--threads") threads = std::atoll(v.c_str());
    else if (k == "--reps") reps = std::atoll(v.c_str());
    else if (k == "--residency") residency = v;
    else if (k == "--dram-bytes") dram_bytes = std::atoll(v.c_str());
    else if (k == "--max-s") max_s = std::atof(v.c_str());
  }
  if (weights.empty() || n_out <= 0 || n_in <= 0 || n_in % 64 != 0 || n <= 0 || reps <= 0) {
    std::fprintf(stderr, "usage: nvfp4-peer-bench --weights F --n-out A --n-in B [--n N] [--threads T] "
                         "[--reps R] [--residency dram|cache] [--dram-bytes X]\n");
    return 2;
  }
  const size_t row_bytes = ggml_row_size(GGML_TYPE_NVFP4, n_in);
  const size_t wbytes = row_bytes * n_out;
  std::vector<char> w(wbytes);
  std::ifstream f(weights, std::ios::binary);
  if (!f.read(w.data(), static_cast<std::streamsize>(wbytes))) {
    std::fprintf(stderr, "cannot read %zu bytes of weights from %s\n", wbytes, weights.c_str());
    return 1;
  }
  const bool dram = residency == "dram";
  const long long copies = dram ? std::max<long long>(2, (dram_bytes + wbytes - 1) / wbytes) : 1;
  const size_t mem = copies * (wbytes + n * n_out * 4 + 4096) + n * n_in * 4 +
                     copies * (ggml_graph_overhead() + 3 * ggml_tensor_overhead()) + (1 << 20);
  ggml_init_params ip = {mem, nullptr, false};
  ggml_context* ctx = ggml_init(ip);
  if (!ctx) { std::fprintf(stderr, "ggml_init failed (%zu bytes)\n", mem); return 1; }
  ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_in, n);
  auto* xd = static_cast<float*>(x->data);
  unsigned long long s = 99;
  for (long long i = 0; i < n * n_in; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    xd[i] = static_cast<float>(static_cast<long long>(s >> 40) - (1 << 23)) * 0x1p-23f;
  }
  std::vector<ggml_cgraph*> graphs;
  for (long long k = 0; k < copies; ++k) {
    ggml_tensor* wt = ggml_new_tensor_2d(ctx, GGML_TYPE_NVFP4, n_in, n_out);
    std::memcpy(wt->data, w.data(), wbytes);
    ggml_tensor* y = ggml_mul_mat(ctx, wt, x);
    ggml_cgraph* g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    graphs.push_back(g);
  }
  ggml_cplan plan = ggml_graph_plan(graphs[0], static_cast<int>(threads), nullptr);
  std::vector<uint8_t> work(plan.work_size + 64);
  plan.work_data = work.data();
  auto now = [] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  if (!dram) ggml_graph_compute(graphs[0], &plan);  // warm
  std::vector<double> ms;
  const double start = now();
  for (long long r = 0; r < reps; ++r) {
    if (r >= 3 && now() - start > max_s * 1000) break;
    ggml_cgraph* g = graphs[r % copies];
    const double t0 = now();
    ggml_graph_compute(g, &plan);
    ms.push_back(now() - t0);
  }
  std::sort(ms.begin(), ms.end());
  const size_t k = ms.size();
  const double med = k % 2 ? ms[k / 2] : 0.5 * (ms[k / 2 - 1] + ms[k / 2]);
  std::printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"reps\": %zu}\n", med, ms.front(), ms.back(), k);
  ggml_free(ctx);
  return 0;
}
