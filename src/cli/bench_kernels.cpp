// `nvfp4 bench kernels`: each kernel against the DRAM read roofline measured right before it,
// streaming from DRAM (rotating among copies totalling >= 8x the L3) and cache-resident, beside
// ggml-cpu's NVFP4 matmul on the same shape and data when the peer is built.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/bench_registry.h"
#include "cli/bench_util.h"
#include "nvfp4/error.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/kernels.h"
#include "nvfp4/layout.h"
#include "nvfp4/linear.h"

namespace nvfp4::cli {
namespace {

struct Options {
  bool json = false;
  std::string shapes = "4096x4096,14336x4096,4096x14336,576x576,192x576,1536x576,576x1536,49152x576";
  std::string ns = "1,2,4,8,16,512";
  std::string threads = "1,2";
  std::string modes = "a16q8";
  std::string residency = "dram,cache";
  std::string isa;
  std::string prefetch;  // empty: active_prefetch()
  std::string peer;
  bool no_peer = false;
  int reps = 9;
  double max_case_s = 3.0;
  int64_t dram_mib = 0;  // 0: 8x L3
};

int64_t to_int(const std::string& s, const std::string& what) {
  try {
    size_t k = 0;
    const long long v = std::stoll(s, &k);
    if (k != s.size() || v <= 0) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw Error("", what, "bad " + what, "a positive integer", s);
  }
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

RowMatrix random_weights(int64_t n_out, int64_t n_in, uint64_t seed) {
  RowMatrix w;
  w.n_out = n_out;
  w.n_in = n_in;
  w.scale2 = 0.0021f;
  w.codes.resize(n_out * n_in / 2);
  w.scales.resize(n_out * n_in / 16);
  uint64_t s = seed;
  auto next = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  for (auto& c : w.codes) c = static_cast<uint8_t>(next());
  for (auto& c : w.scales) c = static_cast<uint8_t>(0x28 + next() % 24);  // realistic E4M3 scales
  return w;
}

int run(const Options& o) {
  if (!o.isa.empty()) force_isa(parse_isa(o.isa));
  const int64_t l3 = bench::l3_bytes();
  const int64_t dram_bytes = o.dram_mib > 0 ? o.dram_mib << 20 : 8 * l3;
  const int64_t bw_bytes = std::max<int64_t>(int64_t{1} << 30, 0);
  bench::Peer peer = o.no_peer ? bench::Peer{"", "ggml peer disabled (--no-peer)"} : bench::find_peer(o.peer);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  const std::string isa(isa_name(active_isa()));
  std::vector<Prefetch> plans;
  for (const auto& p : bench::split_list(o.prefetch)) plans.push_back(parse_prefetch(p));
  if (plans.empty()) plans.push_back(active_prefetch());
  if (!o.json) {
    std::printf("nvfp4 bench kernels: %s, L3 %.0f MiB, ISA %s, load %.2f %.2f %.2f\n", cpu_model().c_str(),
                l3 / 1048576.0, isa.c_str(), load[0], load[1], load[2]);
    std::printf("DRAM cases rotate among copies totalling %.0f MiB; DRAM bandwidth: %.0f MiB streamed before each case\n",
                dram_bytes / 1048576.0, bw_bytes / 1048576.0);
    std::printf("ggml peer: %s\n", peer.path.empty() ? ("unavailable: " + peer.why).c_str() : peer.path.c_str());
    std::printf("%-24s %-5s %-11s %4s %3s %-5s %9s %19s %7s %6s %9s %9s %7s\n", "kernel", "pf", "shape", "n", "thr", "res",
                "median_ms", "min-max_ms", "GB/s", "%DRAM", "ns/blk/col", "ggml_ms", "x_ggml");
  }
  std::vector<Mode> modes;
  for (const auto& m : bench::split_list(o.modes)) modes.push_back(parse_mode(m));
  const std::string wfile = "/tmp/nvfp4-bench-peer-" + std::to_string(getpid()) + ".bin";
  for (const auto& shape : bench::split_list(o.shapes)) {
    const size_t xpos = shape.find('x');
    if (xpos == std::string::npos) throw Error("", "--shapes", "bad --shapes entry", "n_outxn_in, e.g. 14336x4096", shape);
    const int64_t n_out = to_int(shape.substr(0, xpos), "n_out"), n_in = to_int(shape.substr(xpos + 1), "n_in");
    RowMatrix w = random_weights(n_out, n_in, static_cast<uint64_t>(n_out * 131 + n_in));
    Linear base = Linear::prepare(w.view(), 0.01f, shape);
    const int64_t copies_n = std::max<int64_t>(2, (dram_bytes + base.weight_bytes() - 1) / base.weight_bytes());
    std::vector<Linear> copies, copies4k;  // dram4k: the same stream on 4 KiB pages
    const auto rs = bench::split_list(o.residency);
    const auto wants = [&](const char* r) { return std::find(rs.begin(), rs.end(), r) != rs.end(); };
    // dram: the copies back to back in one arena, as a model's layers lie (each on a mapping of
    // its own would leave every copy's tail past its last 2 MiB boundary on 4 KiB pages).
    const auto arena = std::make_shared<HugeArena>();
    if (wants("dram")) for (int64_t i = 0; i < copies_n; ++i) copies.push_back(base.clone(arena));
    if (wants("dram4k")) for (int64_t i = 0; i < copies_n; ++i) copies4k.push_back(base.clone(false));
    bool peer_ok = !peer.path.empty() && n_in % 64 == 0;
    if (peer_ok) {
      GgmlMatrix g = row_to_ggml(w.view());
      std::ofstream f(wfile, std::ios::binary);
      f.write(reinterpret_cast<const char*>(g.blocks.data()), static_cast<std::streamsize>(g.blocks.size()));
      peer_ok = static_cast<bool>(f);
    }
    int64_t rot = 0;
    for (const auto& ts : bench::split_list(o.threads)) {
      const int threads = static_cast<int>(to_int(ts, "--threads"));
      ThreadPool pool(threads);
      for (const auto& nstr : bench::split_list(o.ns)) {
        const int64_t n = to_int(nstr, "--n");
        std::vector<float> x(n * n_in), y(n * n_out);
        uint64_t s = 99;
        for (auto& v : x) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) * 0x1p-23f; }
        for (Mode mode : modes) {
          for (const auto& res : bench::split_list(o.residency)) {
            const bool dram = res == "dram" || res == "dram4k";
            if (!dram && res != "cache") throw Error("", "--residency", "bad --residency entry", "dram, dram4k or cache", res);
            const std::vector<Linear>& from = res == "dram" ? copies : copies4k;
            for (Prefetch pf : plans) {
              force_prefetch(pf);
              const std::string pfn(prefetch_name(pf));
              const double bw = bench::dram_read_gbps(pool, bw_bytes);
              std::vector<double> ms;
              if (!dram) base.forward(mode, x.data(), n, y.data(), pool);  // warm the caches
              const double start = bench::now_ms();
              for (int r = 0; r < o.reps; ++r) {
                const Linear& l = dram ? from[rot++ % copies_n] : base;
                const double t0 = bench::now_ms();
                l.forward(mode, x.data(), n, y.data(), pool);
                ms.push_back(bench::now_ms() - t0);
                if (r >= 2 && bench::now_ms() - start > o.max_case_s * 1000) break;
              }
              const bench::Stats st = bench::stats_of(ms);
              std::optional<bench::Stats> gg;
              if (peer_ok && pf == plans.front()) gg = bench::run_peer(peer, wfile, n_out, n_in, n, threads, o.reps, dram, dram_bytes, o.max_case_s);
              const double gbps = base.weight_bytes() / (st.median_ms * 1e6);
              const double blocks = static_cast<double>(n_out) * n_in / 64 * n;
              const double nspb = st.median_ms * 1e6 / blocks;
              const std::string kname = base.kernel_name(mode, n);
              if (o.json) {
                nlohmann::json j = {{"kernel", kname}, {"prefetch", pfn}, {"mode", std::string(mode_name(mode))}, {"isa", isa},
                                    {"n_out", n_out}, {"n_in", n_in}, {"n", n}, {"threads", threads},
                                    {"residency", res}, {"median_ms", st.median_ms}, {"min_ms", st.min_ms},
                                    {"max_ms", st.max_ms}, {"reps", ms.size()}, {"weight_bytes", base.weight_bytes()},
                                    {"weight_gbps", gbps}, {"dram_gbps", bw}, {"pct_dram", 100.0 * gbps / bw},
                                    {"ns_per_block_col", nspb},
                                    {"ggml_median_ms", gg ? nlohmann::json(gg->median_ms) : nlohmann::json(nullptr)},
                                    {"ratio_vs_ggml", gg ? nlohmann::json(gg->median_ms / st.median_ms) : nlohmann::json(nullptr)}};
                std::cout << j.dump() << std::endl;
              } else {
                char mm[64], ggs[32], rat[32];
                std::snprintf(mm, sizeof(mm), "%.3f-%.3f", st.min_ms, st.max_ms);
                std::snprintf(ggs, sizeof(ggs), "%s", gg ? std::to_string(gg->median_ms).substr(0, 8).c_str() : "n/a");
                std::snprintf(rat, sizeof(rat), "%s", gg ? (std::to_string(gg->median_ms / st.median_ms).substr(0, 5) + "x").c_str() : "n/a");
                std::printf("%-24s %-5s %-11s %4lld %3d %-5s %9.3f %19s %7.1f %5.0f%% %9.3f %9s %7s\n", kname.c_str(), pfn.c_str(), shape.c_str(),
                            static_cast<long long>(n), threads, res.c_str(), st.median_ms, mm, gbps, 100.0 * gbps / bw, nspb,
                            ggs, rat);
                std::printf("%-24s %-5s %-11s %4s %3s %-5s DRAM read %.1f GB/s\n", "", "", "", "", "", "", bw);
                std::fflush(stdout);
              }
            }
          }
        }
      }
    }
    if (peer_ok) std::remove(wfile.c_str());
  }
  clear_forced_isa();
  clear_forced_prefetch();
  return 0;
}

const BenchRegistrar reg("kernels", "time every kernel against the DRAM roofline and ggml", [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_flag("--json", o->json, "one JSON object per case");
  app.add_option("--shapes", o->shapes, "n_outxn_in list")->capture_default_str();
  app.add_option("--n", o->ns, "activation columns per call (list)")->capture_default_str();
  app.add_option("--threads", o->threads, "thread counts (list)")->capture_default_str();
  app.add_option("--modes", o->modes, "a16q8,w4a4,a16,f32")->capture_default_str();
  app.add_option("--residency", o->residency, "dram,cache (dram4k: DRAM with the weights on 4 KiB pages, not huge pages)")->capture_default_str();
  app.add_option("--reps", o->reps, "timed calls per case (fewer when a case passes --max-case-s)")->capture_default_str();
  app.add_option("--max-case-s", o->max_case_s, "time budget per case, seconds")->capture_default_str();
  app.add_option("--dram-mib", o->dram_mib, "total size of the rotated copies (default 8x L3)");
  app.add_option("--isa", o->isa, "force scalar, avx2, avxvnni, avx512 or amx");
  app.add_option("--prefetch", o->prefetch, "software prefetch plans to time side by side, each case in turn (list of l1, l1+l2; default this CPU's)");
  app.add_option("--peer", o->peer, "path of the ggml peer (default build-peer/nvfp4-peer-bench)");
  app.add_flag("--no-peer", o->no_peer, "do not run the ggml peer");
  return std::function<int()>([o] { return run(*o); });
});

}  // namespace
}  // namespace nvfp4::cli
