// nvfp4 bench model: end-to-end prompt (512 tokens, one pass per --batch) and generation (128
// greedy tokens) speed, median of repeats; the DRAM roofline of generation (weight bytes read per
// token / the read bandwidth measured in the same run); and llama.cpp through PyPI llama-cpp-python
// (tools/llama_cpp_bench.py) on the same NVFP4 GGUF and on llama.cpp's own Q4_0 of the model,
// null where unavailable.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/bench_registry.h"
#include "cli/bench_util.h"
#include "cli/model_setup.h"

namespace nvfp4::cli {
namespace {

struct Opt {
  ModelArgs m;
  int64_t prompt = 512, gen = 128;
  int reps = 3;
  bool json = false;
  std::string peer_python, peer_q4_0_source;
};

std::optional<nlohmann::json> peer(const Opt& o, const std::string& args) {
  if (o.peer_python.empty()) return std::nullopt;
  const std::string cmd = o.peer_python + " tools/llama_cpp_bench.py " + args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  if (rc != 0) {
    std::cerr << "nvfp4 bench model: llama.cpp peer: " << out;
    return std::nullopt;
  }
  try { return nlohmann::json::parse(out); } catch (...) { return std::nullopt; }
}

int run(const Opt& o) {
  Loaded L = load_model(o.m, o.json);
  ThreadPool pool(L.threads);
  ContextOptions co = context_options(o.m);
  co.n_ctx = o.prompt + o.gen;
  Context ctx(*L.model, co, pool);
  const int64_t nv = L.model->config().n_vocab;
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < o.prompt; ++i) prompt.push_back(static_cast<int32_t>(100 + (i * 7919) % (nv - 200)));
  std::vector<float> logits(static_cast<size_t>(nv));
  std::vector<double> pp_ms, tg_ms;
  for (int r = 0; r < o.reps; ++r) {
    ctx.reset();
    double t0 = bench::now_ms();
    ctx.eval(prompt.data(), o.prompt, logits.data());
    pp_ms.push_back(bench::now_ms() - t0);
    t0 = bench::now_ms();
    for (int64_t g = 0; g < o.gen; ++g) {
      int32_t tok = 0;
      for (int64_t i = 1; i < nv; ++i) if (logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(tok)]) tok = static_cast<int32_t>(i);
      ctx.eval(&tok, 1, logits.data());
    }
    tg_ms.push_back(bench::now_ms() - t0);
  }
  const double pp = static_cast<double>(o.prompt) * 1000.0 / bench::stats_of(pp_ms).median_ms;
  const double tg = static_cast<double>(o.gen) * 1000.0 / bench::stats_of(tg_ms).median_ms;
  const double gbps = bench::dram_read_gbps(pool, int64_t{1} << 30);
  const double bpt = static_cast<double>(L.model->bytes_per_token());
  nlohmann::json j;
  j["model"] = o.m.model;
  j["precision"] = std::string(mode_name(L.mode));
  j["threads"] = L.threads;
  j["prompt_tokens"] = o.prompt;
  j["gen_tokens"] = o.gen;
  j["reps"] = o.reps;
  j["prompt_tps"] = pp;
  j["gen_tps"] = tg;
  j["bytes_per_token"] = bpt;
  j["dram_gbps"] = gbps;
  j["roofline_gen_tps"] = gbps * 1e9 / bpt;
  j["roofline_pct"] = 100.0 * tg / (gbps * 1e9 / bpt);
  j["peak_rss_mb"] = peak_rss_mib();
  const std::string common = " --prompt " + std::to_string(o.prompt) + " --gen " + std::to_string(o.gen) +
                             " --threads " + std::to_string(L.threads) + " --reps " + std::to_string(o.reps);
  j["llama_cpp_nvfp4_prompt_tps"] = nullptr;
  j["llama_cpp_nvfp4_gen_tps"] = nullptr;
  j["llama_cpp_q4_0_prompt_tps"] = nullptr;
  j["llama_cpp_q4_0_gen_tps"] = nullptr;
  if (auto r = peer(o, o.m.model + common); r && r->contains("prompt_tps")) {
    j["llama_cpp_nvfp4_prompt_tps"] = (*r)["prompt_tps"];
    j["llama_cpp_nvfp4_gen_tps"] = (*r)["gen_tps"];
  }
  if (!o.peer_q4_0_source.empty()) {
    const std::string q4 = "/tmp/nvfp4-bench-q4_0-" + std::to_string(getpid()) + ".gguf";
    if (peer(o, o.peer_q4_0_source + " --quantize-q4_0 " + q4))
      if (auto r = peer(o, q4 + common); r && r->contains("prompt_tps")) {
        j["llama_cpp_q4_0_prompt_tps"] = (*r)["prompt_tps"];
        j["llama_cpp_q4_0_gen_tps"] = (*r)["gen_tps"];
      }
    std::remove(q4.c_str());
  }
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  auto num = [&](const char* k) { return j[k].is_null() ? std::string("n/a") : std::to_string(j[k].get<double>()); };
  std::printf("%-34s %12s %12s\n", "", "prompt t/s", "gen t/s");
  std::printf("%-34s %12.1f %12.1f\n", ("nvfp4 " + std::string(mode_name(L.mode))).c_str(), pp, tg);
  std::printf("%-34s %12s %12s\n", "llama.cpp, same NVFP4 GGUF", num("llama_cpp_nvfp4_prompt_tps").c_str(), num("llama_cpp_nvfp4_gen_tps").c_str());
  std::printf("%-34s %12s %12s\n", "llama.cpp, its Q4_0", num("llama_cpp_q4_0_prompt_tps").c_str(), num("llama_cpp_q4_0_gen_tps").c_str());
  std::printf("roofline: %.1f MB/token at %.1f GB/s = %.1f t/s; generation at %.1f %% of it; peak RSS %.0f MiB\n",
              bpt / 1e6, gbps, gbps * 1e9 / bpt, j["roofline_pct"].get<double>(), peak_rss_mib());
  return 0;
}

const BenchRegistrar reg("model", "end-to-end prompt and generation speed, roofline, llama.cpp beside", [](CLI::App& app) {
  auto o = std::make_shared<Opt>();
  o->m.add(app);
  o->m.n_batch = 512;
  app.add_option("--prompt-tokens", o->prompt, "prompt length")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--gen-tokens", o->gen, "generated tokens")->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--reps", o->reps, "repeats (median)")->check(CLI::Range(1, 1000));
  app.add_option("--peer-python", o->peer_python, "python with llama_cpp (PyPI llama-cpp-python) for the llama.cpp columns");
  app.add_option("--peer-q4_0-source", o->peer_q4_0_source, "GGUF that llama.cpp quantizes to Q4_0 for its own column");
  app.add_flag("--json", o->json, "one JSON object");
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace nvfp4::cli
