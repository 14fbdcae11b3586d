// `nvfp4 bench fp8`: a checkpoint's FP8 layers in the forms the model runs them, on the same random
// E4M3 bytes: `exact` (Fp8Linear: the integer-exact modes a16q8 and w4a4), `float` (DenseLinear
// e4m3: a16, f32), `mx-exact` (MXFP8 in a16q8 and w4a4), `b128-exact` (128 x 128 blocks in a16q8
// and w4a4), `mxfp8` and `b128` (the scaled forms' float kernel), streaming from DRAM (rotating among copies totalling >= 8x the L3) and
// cache-resident, against the DRAM read measured before each case (issue 29's bars: N=1 at >= 85%
// of the read, N=8 within 1.5x of N=1).
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/bench_registry.h"
#include "cli/bench_util.h"
#include "nvfp4/dense.h"
#include "nvfp4/error.h"
#include "nvfp4/fp8_linear.h"
#include "nvfp4/kernels.h"

namespace nvfp4::cli {
namespace {

struct Options {
  bool json = false;
  std::string shapes = "4096x4096,512x4096,4096x14336";
  std::string forms = "exact,float";
  std::string ns = "1,2,4,8";
  std::string threads = "1,2";
  std::string residency = "dram,cache";
  std::string isa;
  int reps = 9;
};

// One prepared copy of a layer in a form: its forward, bytes and kernel name.
struct Layer {
  std::function<void(const float*, int64_t, float*, ThreadPool&)> forward;
  size_t bytes = 0;
  std::string kernel;
};

Layer make(const std::string& form, const std::vector<uint8_t>& codes, int64_t n_out, int64_t n_in) {
  if (form == "exact") {
    auto l = std::make_shared<Fp8Linear>(Fp8Linear::prepare(codes.data(), n_out, n_in));
    return {[l](const float* x, int64_t n, float* y, ThreadPool& p) { l->forward(x, n, y, p); }, l->bytes(), l->kernel_name()};
  }
  if (form == "mx-exact") {  // MXFP8 in the integer-exact modes
    std::vector<uint8_t> sc(static_cast<size_t>(n_out * n_in / 32));
    for (size_t i = 0; i < sc.size(); ++i) sc[i] = static_cast<uint8_t>(120 + i % 8);
    auto l = std::make_shared<Fp8Linear>(Fp8Linear::prepare_mx(codes.data(), sc.data(), n_out, n_in));
    return {[l](const float* x, int64_t n, float* y, ThreadPool& p) { l->forward(x, n, y, p); }, l->bytes(), l->kernel_name()};
  }
  if (form == "b128-exact") {  // 128 x 128 block scales in the integer-exact modes
    std::vector<float> sc(static_cast<size_t>(((n_out + 127) / 128) * ((n_in + 127) / 128)));
    for (size_t i = 0; i < sc.size(); ++i) sc[i] = 0.001f * static_cast<float>(1 + i % 7);
    auto l = std::make_shared<Fp8Linear>(Fp8Linear::prepare_b128(codes.data(), sc.data(), n_out, n_in));
    return {[l](const float* x, int64_t n, float* y, ThreadPool& p) { l->forward(x, n, y, p); }, l->bytes(), l->kernel_name()};
  }
  std::shared_ptr<DenseLinear> d;
  if (form == "float") {
    d = std::make_shared<DenseLinear>(DenseLinear::prepare(DType::e4m3, codes.data(), n_out, n_in));
  } else if (form == "mxfp8" || form == "b128") {
    const DType dt = form == "mxfp8" ? DType::mxfp8 : DType::fp8_b128;
    std::vector<uint8_t> sc(static_cast<size_t>(scale_bytes(dt, n_out, n_in)));
    if (dt == DType::mxfp8) {
      for (size_t i = 0; i < sc.size(); ++i) sc[i] = static_cast<uint8_t>(120 + i % 8);
    } else {
      for (size_t i = 0; i + 4 <= sc.size(); i += 4) {
        const float f = 0.001f * static_cast<float>(1 + i % 7);
        std::memcpy(sc.data() + i, &f, 4);
      }
    }
    d = std::make_shared<DenseLinear>(DenseLinear::prepare_scaled(dt, codes.data(), sc.data(), n_out, n_in));
  } else {
    throw Error("", "--forms", "bad --forms entry", "exact, float, mx-exact, mxfp8, b128-exact or b128", form);
  }
  const size_t bytes = codes.size() + static_cast<size_t>(scale_bytes(d->dtype(), n_out, n_in));
  return {[d](const float* x, int64_t n, float* y, ThreadPool& p) { d->forward(x, n, y, p); }, bytes, d->kernel_name(1)};
}

int run(const Options& o) {
  if (!o.isa.empty()) force_isa(parse_isa(o.isa));
  const int64_t dram_bytes = 8 * bench::l3_bytes();
  if (!o.json)
    std::printf("nvfp4 bench fp8: ISA %s; DRAM cases rotate among copies totalling %.0f MiB\n",
                std::string(isa_name(active_isa())).c_str(), dram_bytes / 1048576.0);
  for (const auto& shape : bench::split_list(o.shapes)) {
    const size_t xpos = shape.find('x');
    if (xpos == std::string::npos) throw Error("", "--shapes", "bad --shapes entry", "n_outxn_in, e.g. 4096x4096", shape);
    const int64_t n_out = std::stoll(shape.substr(0, xpos)), n_in = std::stoll(shape.substr(xpos + 1));
    std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in));
    uint64_t s = static_cast<uint64_t>(n_out * 131 + n_in);
    for (auto& c : codes) {  // weights as a per-tensor FP8 export spreads them: most bytes mid-range
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<uint8_t>(((s >> 33) % 56 + 40) | ((s >> 60) & 1) << 7);
    }
    for (const auto& form : bench::split_list(o.forms)) {
      std::vector<Layer> copies{make(form, codes, n_out, n_in)};
      while (static_cast<int64_t>(copies.size() * copies[0].bytes) < dram_bytes) copies.push_back(make(form, codes, n_out, n_in));
      for (const auto& ts : bench::split_list(o.threads)) {
        ThreadPool pool(std::stoi(ts));
        for (const auto& nstr : bench::split_list(o.ns)) {
          const int64_t n = std::stoll(nstr);
          std::vector<float> x(static_cast<size_t>(n * n_in)), y(static_cast<size_t>(n * n_out));
          for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>(i * 2654435761u % 193) - 96) * 0.01f;
          for (const auto& res : bench::split_list(o.residency)) {
            const bool dram = res == "dram";
            if (!dram && res != "cache") throw Error("", "--residency", "bad --residency entry", "dram or cache", res);
            const double bw = bench::dram_read_gbps(pool, int64_t{1} << 30);
            std::vector<double> ms;
            size_t rot = 0;
            if (!dram) copies[0].forward(x.data(), n, y.data(), pool);
            for (int r = 0; r < o.reps; ++r) {
              const Layer& l = dram ? copies[rot++ % copies.size()] : copies[0];
              const double t0 = bench::now_ms();
              l.forward(x.data(), n, y.data(), pool);
              ms.push_back(bench::now_ms() - t0);
            }
            const bench::Stats st = bench::stats_of(ms);
            const double gbps = static_cast<double>(copies[0].bytes) / (st.median_ms * 1e6);
            if (o.json) {
              std::cout << nlohmann::json{{"form", form}, {"kernel", copies[0].kernel}, {"n_out", n_out}, {"n_in", n_in}, {"n", n},
                                          {"threads", std::stoi(ts)}, {"residency", res}, {"bytes", copies[0].bytes},
                                          {"median_ms", st.median_ms}, {"min_ms", st.min_ms}, {"max_ms", st.max_ms},
                                          {"weight_gbps", gbps}, {"dram_gbps", bw}, {"pct_dram", 100.0 * gbps / bw}}
                               .dump()
                        << std::endl;
            } else {
              std::printf("%-6s %-20s %-11s n %2lld thr %s %-5s %8.3f ms (%.3f-%.3f) %6.1f GB/s %4.0f%% of DRAM %.1f\n", form.c_str(),
                          copies[0].kernel.c_str(), shape.c_str(), static_cast<long long>(n), ts.c_str(), res.c_str(), st.median_ms,
                          st.min_ms, st.max_ms, gbps, 100.0 * gbps / bw, bw);
              std::fflush(stdout);
            }
          }
        }
      }
    }
  }
  clear_forced_isa();
  return 0;
}

const BenchRegistrar reg("fp8", "time FP8 layers as the model runs them (integer-exact, float, MXFP8, 128x128 blocks)", [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_flag("--json", o->json, "one JSON object per case");
  app.add_option("--shapes", o->shapes, "n_outxn_in list (n_in a multiple of 128)")->capture_default_str();
  app.add_option("--forms", o->forms, "exact (a16q8, w4a4), float (a16, f32), mx-exact (MXFP8 in a16q8, w4a4), mxfp8 (MXFP8 in a16, f32), b128-exact (128x128 blocks in a16q8, w4a4), b128 (in a16, f32)")->capture_default_str();
  app.add_option("--n", o->ns, "columns per call (list)")->capture_default_str();
  app.add_option("--threads", o->threads, "thread counts (list)")->capture_default_str();
  app.add_option("--residency", o->residency, "dram,cache")->capture_default_str();
  app.add_option("--reps", o->reps, "timed calls per case")->capture_default_str();
  app.add_option("--isa", o->isa, "force scalar, avx2, avxvnni, avx512 or amx");
  return std::function<int()>([o] { return run(*o); });
});

}  // namespace
}  // namespace nvfp4::cli
