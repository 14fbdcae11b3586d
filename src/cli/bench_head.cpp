// `nvfp4 bench head`: the output head in each stored form (F16 pinned, Q8_0 integer-exact, NVFP4
// Linear) on the same random weights, streaming from DRAM (rotating copies totalling >= 8x the L3)
// and cache-resident, against the DRAM read roofline measured right before each case.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/bench_registry.h"
#include "cli/bench_util.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/q8_0.h"
#include "nvfp4/quantize.h"
#include "ops/head.h"

namespace nvfp4::cli {
namespace {

struct Options {
  bool json = false;
  int64_t n_out = 49152, n_in = 576;  // SmolLM2's tied head
  std::string types = "f16,q8,nvfp4";
  std::string ns = "1,8";
  std::string threads = "1,2";
  std::string mode = "a16q8";
  std::string isa;
  int reps = 9;
};

Head make_head(const std::string& type, const std::vector<float>& w, int64_t n_out, int64_t n_in, Mode mode) {
  if (type == "f16") {
    std::vector<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) h[i] = float_to_half(w[i]);
    return Head::dense(PinnedDense::prepare(DType::f16, h.data(), n_out, n_in));
  }
  if (type == "q8") {
    std::vector<uint8_t> b(static_cast<size_t>(n_out * (n_in / 32) * 34));
    for (int64_t r = 0; r < n_out; ++r) quantize_row_q8_0(w.data() + r * n_in, n_in, b.data() + r * (n_in / 32) * 34);
    return Head::q8_0(b.data(), n_out, n_in, mode == Mode::a16q8 || mode == Mode::w4a4);
  }
  if (type == "nvfp4") return Head::nvfp4(quantize(w.data(), n_out, n_in, "output.weight"), 0.0f, "output", true, false);
  throw Error("", "--types", "bad --types entry", "f16, q8 or nvfp4", type);
}

int run(const Options& o) {
  if (!o.isa.empty()) force_isa(parse_isa(o.isa));
  const Mode mode = parse_mode(o.mode);
  std::vector<float> w(static_cast<size_t>(o.n_out * o.n_in));
  uint64_t s = 7;
  for (auto& v : w) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) * 0x1p-28f; }
  const int64_t dram_bytes = 8 * bench::l3_bytes();
  std::printf("nvfp4 bench head: %lldx%lld, mode %s, ISA %s\n", static_cast<long long>(o.n_out),
              static_cast<long long>(o.n_in), std::string(mode_name(mode)).c_str(), std::string(isa_name(active_isa())).c_str());
  for (const auto& type : bench::split_list(o.types)) {
    std::vector<Head> copies;
    copies.push_back(make_head(type, w, o.n_out, o.n_in, mode));
    const int64_t nb = static_cast<int64_t>(copies[0].bytes());
    while (static_cast<int64_t>(copies.size()) * nb < dram_bytes) copies.push_back(make_head(type, w, o.n_out, o.n_in, mode));
    for (const auto& ts : bench::split_list(o.threads)) {
      ThreadPool pool(std::stoi(ts));
      for (const auto& nstr : bench::split_list(o.ns)) {
        const int64_t n = std::stoll(nstr);
        std::vector<float> x(static_cast<size_t>(n * o.n_in), 0.25f), y(static_cast<size_t>(n * o.n_out));
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i % 97) - 48) * 0.03f;
        for (const char* res : {"dram", "cache"}) {
          const bool dram = res[0] == 'd';
          const double bw = bench::dram_read_gbps(pool, int64_t{1} << 30);
          std::vector<double> ms;
          size_t rot = 0;
          if (!dram) copies[0].forward(mode, x.data(), n, y.data(), pool);
          for (int r = 0; r < o.reps; ++r) {
            const Head& h = dram ? copies[rot++ % copies.size()] : copies[0];
            const double t0 = bench::now_ms();
            h.forward(mode, x.data(), n, y.data(), pool);
            ms.push_back(bench::now_ms() - t0);
          }
          const bench::Stats st = bench::stats_of(ms);
          const double gbps = nb / (st.median_ms * 1e6);
          const std::string k = copies[0].kernel_name(mode);
          if (o.json) {
            std::cout << nlohmann::json{{"head", type}, {"kernel", k}, {"n", n}, {"threads", ts}, {"residency", res},
                                        {"bytes", nb}, {"median_ms", st.median_ms}, {"min_ms", st.min_ms},
                                        {"max_ms", st.max_ms}, {"weight_gbps", gbps}, {"dram_gbps", bw}}
                             .dump()
                      << std::endl;
          } else {
            std::printf("%-6s %-28s n %3lld thr %s %-5s %6.1f MB %8.3f ms (%.3f-%.3f) %6.1f GB/s of DRAM %.1f\n", type.c_str(),
                        k.c_str(), static_cast<long long>(n), ts.c_str(), res, nb / 1e6, st.median_ms, st.min_ms,
                        st.max_ms, gbps, bw);
          }
        }
      }
    }
  }
  clear_forced_isa();
  return 0;
}

const BenchRegistrar reg("head", "time the output head as F16, Q8_0 and NVFP4 (DRAM and cache-resident)", [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_flag("--json", o->json, "one JSON object per case");
  app.add_option("--n-out", o->n_out, "vocabulary rows")->capture_default_str();
  app.add_option("--n-in", o->n_in, "hidden size (multiple of 64)")->capture_default_str();
  app.add_option("--types", o->types, "f16,q8,nvfp4")->capture_default_str();
  app.add_option("--n", o->ns, "columns per call (list)")->capture_default_str();
  app.add_option("--threads", o->threads, "thread counts (list)")->capture_default_str();
  app.add_option("--mode", o->mode, "a16q8, w4a4 (Q8_0 integer-exact) or a16, f32 (dequantized)")->capture_default_str();
  app.add_option("--reps", o->reps, "timed calls per case")->capture_default_str();
  app.add_option("--isa", o->isa, "force scalar, avx2, avxvnni, avx512 or amx");
  return std::function<int()>([o] { return run(*o); });
});

}  // namespace
}  // namespace nvfp4::cli
