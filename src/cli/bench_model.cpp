// nvfp4 bench model: end-to-end prompt (512 tokens, one pass per --batch) and generation (128
// greedy tokens) speed, median of repeats; the DRAM roofline of generation (weight bytes read per
// token / the read bandwidth measured in the same run), and the same with the KV cache's bytes a
// generated token reads; and llama.cpp through PyPI llama-cpp-python
// (tools/llama_cpp_bench.py) on the same NVFP4 GGUF and on llama.cpp's own Q4_0 of the model,
// null where unavailable; pool hand-offs per generated token. --contention: the same under a busy
// loop on every core (see run_contention). --profile: where a generated token's time goes.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <tuple>

#include "cli/bench_registry.h"
#include "cli/bench_experts.h"
#include "cli/bench_util.h"
#include "cli/bench_verify.h"
#include "cli/model_setup.h"
#include "nvfp4/huge_pages.h"

namespace nvfp4::cli {
namespace {

struct Opt {
  ModelArgs m;
  int64_t prompt = 512, gen = 128;
  int reps = 3;
  bool json = false;
  std::string peer_python, peer_q4_0_source;
  bool contention = false;
  bool profile = false;
  int peer_timeout_s = 600;
  bool peer_skip_nvfp4 = false;  // only the Q4_0 column
  int verify_drafts = 0;          // --verify-drafts K: a verify step's cost for k = 1 .. K
  std::string dflash;             // --dflash DIR: a DFlash drafter's step cost against a plain step
  std::string assistant;          // --assistant DIR: a Gemma 4 assistant's step cost against a plain step
  bool draft_quantize = false;    // --draft-quantize: that drafter's float layers quantized to NVFP4
  bool gen_varied = false;        // --gen-varied: generated inputs continue the prompt's ids, not the greedy pick
};

std::optional<nlohmann::json> peer(const Opt& o, const std::string& args, int timeout_s = 0) {
  if (o.peer_python.empty()) return std::nullopt;
  const std::string cmd = (timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : std::string()) + o.peer_python + " " + bench::repo_file("tools/llama_cpp_bench.py") + " " + args + " 2>/dev/null";
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

struct Measured {
  bench::Stats pps, tgs;
  double pp = 0, tg = 0;
  double dispatches_per_token = 0;  // pool hand-offs per generated token
  StepProfile prof;                 // --profile: one more generation pass, timed by part
  double pool_idle_pct = 0;         // --profile: the share of that pass's dispatches' time the threads stood idle
  ExpertStats prompt_experts, gen_experts;  // --experts-budget: what the timed prompts and generations did
};

// Prompt then generation, o.reps times, on a pool of `threads`.
Measured measure(const Loaded& L, const Opt& o, int threads) {
  ThreadPool pool(threads);
  ContextOptions co = context_options(o.m);
  co.n_ctx = o.prompt + o.gen;
  Context ctx(*L.model, co, pool);
  const int64_t nv = L.model->config().n_vocab;
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < o.prompt; ++i) prompt.push_back(static_cast<int32_t>(100 + (i * 7919) % (nv - 200)));
  std::vector<float> logits(static_cast<size_t>(nv));
  std::vector<double> pp_ms, tg_ms;
  uint64_t gen_dispatches = 0;
  ExpertStats pe, ge;  // summed over the repeats
  for (int r = 0; r < o.reps; ++r) {
    ctx.reset();
    const ExpertStats e0 = L.model->expert_stats();
    double t0 = bench::now_ms();
    ctx.eval(prompt.data(), o.prompt, logits.data());
    pp_ms.push_back(bench::now_ms() - t0);
    const ExpertStats e1 = L.model->expert_stats();
    const uint64_t d0 = pool.dispatches();
    t0 = bench::now_ms();
    for (int64_t g = 0; g < o.gen; ++g) {
      int32_t tok = 0;
      for (int64_t i = 1; i < nv; ++i) if (logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(tok)]) tok = static_cast<int32_t>(i);
      if (o.gen_varied) tok = static_cast<int32_t>(100 + ((o.prompt + g) * 7919) % (nv - 200));
      ctx.eval(&tok, 1, logits.data());
    }
    tg_ms.push_back(bench::now_ms() - t0);
    gen_dispatches += pool.dispatches() - d0;
    const ExpertStats e2 = L.model->expert_stats();
    for (auto [sum, a, b] : {std::tuple{&pe, &e0, &e1}, std::tuple{&ge, &e1, &e2}}) {
      const ExpertStats d = experts_delta(*a, *b);
      sum->hits += d.hits, sum->misses += d.misses, sum->prefetched += d.prefetched, sum->prefetch_used += d.prefetch_used, sum->bytes_read += d.bytes_read, sum->read_s += d.read_s;
    }
  }
  Measured m;
  m.prompt_experts = pe;
  m.gen_experts = ge;
  if (o.profile) {
    // After the timed repeats, so that the clock reads cannot touch the figures above.
    ctx.reset();
    ctx.eval(prompt.data(), o.prompt, logits.data());
    ctx.set_profile(&m.prof);
    const ThreadPool::Timing p0 = pool.timing();
    pool.set_timing(true);
    for (int64_t g = 0; g < o.gen; ++g) {
      int32_t tok = 0;
      for (int64_t i = 1; i < nv; ++i) if (logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(tok)]) tok = static_cast<int32_t>(i);
      if (o.gen_varied) tok = static_cast<int32_t>(100 + ((o.prompt + g) * 7919) % (nv - 200));
      ctx.eval(&tok, 1, logits.data());
    }
    ctx.set_profile(nullptr);
    pool.set_timing(false);
    const ThreadPool::Timing p1 = pool.timing();
    const int64_t cap = p1.capacity_ns - p0.capacity_ns;
    if (cap > 0) m.pool_idle_pct = 100.0 * (1.0 - static_cast<double>(p1.busy_ns - p0.busy_ns) / static_cast<double>(cap));
  }
  m.pps = bench::stats_of(pp_ms);
  m.tgs = bench::stats_of(tg_ms);
  m.pp = static_cast<double>(o.prompt) * 1000.0 / m.pps.median_ms;
  m.tg = static_cast<double>(o.gen) * 1000.0 / m.tgs.median_ms;
  m.dispatches_per_token = static_cast<double>(gen_dispatches) / static_cast<double>(o.gen * o.reps);
  return m;
}

// --profile: per generated token, each part's time, weight bytes, and the rate at which it read
// them against the DRAM stream measured in the same run.
nlohmann::json profile_json(const StepProfile& p, double dram_gbps) {
  nlohmann::json parts = nlohmann::json::array();
  const double tok = static_cast<double>(std::max<int64_t>(p.tokens, 1));
  double timed = 0;
  for (int i = 0; i < StepProfile::n_parts; ++i) {
    timed += p.seconds[i];
    if (p.seconds[i] == 0 && p.bytes[i] == 0) continue;
    const double gbps = p.seconds[i] > 0 ? p.bytes[i] / p.seconds[i] / 1e9 : 0;
    parts.push_back({{"part", StepProfile::name(i)}, {"ms_per_token", 1e3 * p.seconds[i] / tok},
                     {"mb_per_token", p.bytes[i] / tok / 1e6}, {"gbps", gbps},
                     {"pct_of_dram", dram_gbps > 0 ? 100.0 * gbps / dram_gbps : 0}, {"pct_of_step", 100.0 * p.seconds[i] / p.total}});
  }
  parts.push_back({{"part", "other"}, {"ms_per_token", 1e3 * (p.total - timed) / tok}, {"mb_per_token", 0.0}, {"gbps", 0.0},
                   {"pct_of_dram", 0.0}, {"pct_of_step", 100.0 * (p.total - timed) / p.total}});
  double bytes = 0;
  for (int i = 0; i < StepProfile::n_parts; ++i) bytes += p.bytes[i];
  // With the KV cache's bytes counted (attention), what the whole step read against the stream.
  const double gbps = p.total > 0 ? bytes / p.total / 1e9 : 0;
  return {{"tokens", p.tokens}, {"ms_per_token", 1e3 * p.total / tok}, {"dram_gbps", dram_gbps}, {"mb_per_token", bytes / tok / 1e6},
          {"gbps", gbps}, {"pct_of_dram", dram_gbps > 0 ? 100.0 * gbps / dram_gbps : 0}, {"parts", parts}};
}

void print_profile(const nlohmann::json& pj) {
  std::printf("profile of %lld generated tokens (%.2f ms each; DRAM read %.1f GB/s):\n", pj["tokens"].get<long long>(),
              pj["ms_per_token"].get<double>(), pj["dram_gbps"].get<double>());
  std::printf("  %-26s %10s %8s %10s %9s %8s\n", "part", "ms/token", "% step", "MB/token", "GB/s", "% DRAM");
  for (const auto& r : pj["parts"])
    std::printf("  %-26s %10.3f %8.1f %10.1f %9.1f %8.0f\n", r["part"].get<std::string>().c_str(), r["ms_per_token"].get<double>(),
                r["pct_of_step"].get<double>(), r["mb_per_token"].get<double>(), r["gbps"].get<double>(), r["pct_of_dram"].get<double>());
  std::printf("  %-26s %10.3f %8.1f %10.1f %9.1f %8.0f\n", "whole step", pj["ms_per_token"].get<double>(), 100.0,
              pj["mb_per_token"].get<double>(), pj["gbps"].get<double>(), pj["pct_of_dram"].get<double>());
}

std::string peer_args(const Opt& o, int threads) {
  return " --prompt " + std::to_string(o.prompt) + " --gen " + std::to_string(o.gen) + " --threads " +
         std::to_string(threads) + " --reps " + std::to_string(o.reps) + " --kv " + o.m.kv + (o.gen_varied ? " --gen-varied" : "");
}

// --contention: generation at one thread and at the default count, without and with a fixed busy
// loop on every core (one spinning process per core, started before and stopped after each
// loaded run), and llama.cpp under the same load.
int run_contention(const Opt& o, const Loaded& L) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  nlohmann::json j;
  j["model"] = o.m.model;
  j["precision"] = std::string(mode_name(L.mode));
  j["threads"] = L.threads;
  j["busy_procs"] = cores;
  j["prompt_tokens"] = o.prompt;
  j["gen_tokens"] = o.gen;
  j["reps"] = o.reps;
  nlohmann::json rows = nlohmann::json::array();
  for (bool loaded : {false, true})
    for (int t : {1, L.threads}) {
      std::optional<bench::BusyLoad> busy;
      if (loaded) busy.emplace(cores);
      const Measured m = measure(L, o, t);
      busy.reset();
      rows.push_back({{"engine", "nvfp4"}, {"threads", t}, {"load", loaded}, {"prompt_tps", m.pp}, {"gen_tps", m.tg},
                      {"gen_tps_min", static_cast<double>(o.gen) * 1000.0 / m.tgs.max_ms},
                      {"gen_tps_max", static_cast<double>(o.gen) * 1000.0 / m.tgs.min_ms},
                      {"dispatches_per_token", m.dispatches_per_token}});
      const std::string key = std::string("gen_tps_t") + (t == 1 ? "1" : "default") + (loaded ? "_loaded" : "");
      j[key] = m.tg;
      // As each run ends (a loaded run can be slow): what it gave.
      std::fprintf(stderr, "nvfp4 bench model --contention: nvfp4 -t %d, %s: generation %.1f tok/s, %.1f hand-offs/token\n", t,
                   loaded ? "busy loop" : "alone", m.tg, m.dispatches_per_token);
    }
  for (int t : {1, L.threads}) {
    const std::string key = std::string("llama_cpp_gen_tps_t") + (t == 1 ? "1" : "default") + "_loaded";
    j[key] = nullptr;
    std::optional<bench::BusyLoad> busy(cores);
    // Bounded: under the load, a spinning peer can take very long (then its column stays null).
    if (auto r = peer(o, o.m.model + peer_args(o, t), o.peer_timeout_s); r && r->contains("gen_tps")) {
      busy.reset();
      std::fprintf(stderr, "nvfp4 bench model --contention: llama.cpp -t %d, busy loop: generation %.1f tok/s\n", t,
                   (*r)["gen_tps"].get<double>());
      j[key] = (*r)["gen_tps"];
      rows.push_back({{"engine", "llama.cpp"}, {"threads", t}, {"load", true}, {"prompt_tps", (*r)["prompt_tps"]},
                      {"gen_tps", (*r)["gen_tps"]}});
    }
  }
  j["runs"] = rows;
  // The target: under load the default thread count is no slower than one thread.
  j["loaded_default_vs_t1"] = j["gen_tps_tdefault_loaded"].get<double>() / j["gen_tps_t1_loaded"].get<double>();
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::printf("%-12s %8s %6s %12s %12s %14s\n", "engine", "threads", "load", "prompt t/s", "gen t/s", "hand-offs/tok");
  for (const auto& r : rows) {
    std::printf("%-12s %8d %6s %12.1f %12.1f", r["engine"].get<std::string>().c_str(), r["threads"].get<int>(),
                r["load"].get<bool>() ? "busy" : "none", r["prompt_tps"].get<double>(), r["gen_tps"].get<double>());
    if (r.contains("dispatches_per_token")) std::printf(" %14.1f\n", r["dispatches_per_token"].get<double>());
    else std::printf(" %14s\n", "");
  }
  std::printf("under the busy loop (%d spinning processes): -t %d gives %.2fx the -t 1 rate\n", cores, L.threads,
              j["loaded_default_vs_t1"].get<double>());
  return 0;
}

int run(const Opt& o) {
  Loaded L = load_model(o.m, o.json);
  if (o.contention) return run_contention(o, L);
  const Measured ms = measure(L, o, L.threads);
  // The peak so far: loading, the prompts and generations (the DRAM probe's buffer comes next).
  const double rss = peak_rss_mib();
  const double huge_mib = static_cast<double>(huge_resident_process()) / (1024.0 * 1024.0);  // before the probe's buffer too
  ThreadPool pool(L.threads);  // for the DRAM stream, after measure()'s pool is gone
  const bench::Stats pps = ms.pps, tgs = ms.tgs;
  const double pp = ms.pp, tg = ms.tg;
  // (256 MiB with an expert store: a budget near the memory cgroup's limit leaves no room for 1 GiB.)
  const double gbps = bench::dram_read_gbps(pool, L.model->expert_stats().slots > 0 ? int64_t{256} << 20 : int64_t{1} << 30);
  const double bpt = static_cast<double>(L.model->bytes_per_token());
  nlohmann::json j;
  j["model"] = o.m.model;
  j["precision"] = std::string(mode_name(L.mode));
  j["threads"] = L.threads;
  j["prompt_tokens"] = o.prompt;
  j["gen_tokens"] = o.gen;
  j["reps"] = o.reps;
  j["kv"] = o.m.kv;
  j["prompt_tps"] = pp;
  j["gen_tps"] = tg;
  // Spread: the slowest and fastest repeat.
  j["prompt_tps_min"] = static_cast<double>(o.prompt) * 1000.0 / pps.max_ms;
  j["prompt_tps_max"] = static_cast<double>(o.prompt) * 1000.0 / pps.min_ms;
  j["gen_tps_min"] = static_cast<double>(o.gen) * 1000.0 / tgs.max_ms;
  j["gen_tps_max"] = static_cast<double>(o.gen) * 1000.0 / tgs.min_ms;
  j["bytes_per_token"] = bpt;
  j["dram_gbps"] = gbps;
  j["roofline_gen_tps"] = gbps * 1e9 / bpt;
  j["roofline_pct"] = 100.0 * tg / (gbps * 1e9 / bpt);
  // Against what the issue allows (1.1x the weights and the KV cache of prompt + gen positions).
  const ModelConfig& mc = L.model->config();
  // The attention layers' KV (all layers but a hybrid's linear-attention ones), and the recurrent
  // states a token reads and writes in those (float32).
  int64_t n_attn = 0;
  for (int64_t l = 0; l < mc.n_layer; ++l) n_attn += mc.mixer(l) == MixerKind::attention;
  const double kv_per_pos = static_cast<double>(2 * n_attn * mc.kv_dim()) * (o.m.kv == "f16" ? 2.0 : o.m.kv == "fp8" ? 1.0 : 4.0);  // bytes
  double state_floats = 0;  // every recurrent layer's state (Gated DeltaNet or Mamba-2)
  for (int64_t l = 0; l < mc.n_layer; ++l) state_floats += static_cast<double>(mc.recurrent_floats(l));
  const double state_bpt = 2.0 * state_floats * 4.0;
  const double kv_mib = kv_per_pos * static_cast<double>(o.prompt + o.gen) / (1024.0 * 1024.0);
  const double w_mib = static_cast<double>(L.model->weight_bytes()) / (1024.0 * 1024.0);
  // The keys and values a generated token reads from its cache, on average over the timed
  // generation (a token at position p reads p + 1 positions; p = prompt .. prompt + gen - 1): bytes
  // the roofline above leaves out, and the attention part of --profile reads.
  const double kv_bpt = kv_per_pos * (static_cast<double>(o.prompt) + (static_cast<double>(o.gen) + 1.0) / 2.0);
  j["kv_bytes_per_token"] = kv_bpt;
  j["state_bytes_per_token"] = state_bpt;  // recurrent layers: each state read and written per token
  j["roofline_with_kv_pct"] = 100.0 * tg / (gbps * 1e9 / (bpt + kv_bpt + state_bpt));
  j["peak_rss_mb"] = rss;
  j["huge_pages_mib"] = huge_mib;
  j["thp_mode"] = thp_mode();
  j["weights_mib"] = w_mib;
  j["kv_mib"] = kv_mib;
  // A hybrid's recurrent states (one sequence, no snapshots: the timed runs do not speculate).
  const double state_mib = state_floats * 4.0 / (1024.0 * 1024.0);
  j["state_mib"] = state_mib;
  j["peak_rss_vs_weights_kv"] = rss / (w_mib + kv_mib + state_mib);
  j["dispatches_per_token"] = ms.dispatches_per_token;
  if (o.profile) {
    j["profile"] = profile_json(ms.prof, gbps);
    j["profile"]["pool_idle_pct"] = ms.pool_idle_pct;
  }
  if (const ExpertStats es = L.model->expert_stats(); es.slots > 0) {
    // The disk bound: the bytes a generated token read from the file at the file's sequential rate.
    const double disk = disk_read_gbps(es.file, int64_t{1} << 30);
    nlohmann::json ej = {{"file", es.file}, {"experts", es.experts}, {"slots", es.slots}, {"slot_mib", static_cast<double>(es.slot_bytes) / (1 << 20)},
                         {"written_mib", static_cast<double>(es.written) / (1 << 20)}, {"disk_read_gbps", disk}};
    const double sum_pp = pps.median_ms * o.reps / 1e3, sum_tg = tgs.median_ms * o.reps / 1e3;
    ej["prompt"] = experts_part_json(ms.prompt_experts, o.prompt * o.reps, sum_pp);
    ej["gen"] = experts_part_json(ms.gen_experts, o.gen * o.reps, sum_tg);
    const double dpt = ej["gen"]["disk_mb_per_token"].get<double>() * 1e6;
    ej["disk_bound_gen_tps"] = dpt > 0 && disk > 0 ? disk * 1e9 / dpt : 0.0;
    ej["gen_pct_of_disk_bound"] = dpt > 0 && disk > 0 ? 100.0 * tg / (disk * 1e9 / dpt) : 0.0;
    j["experts"] = ej;
  }
  if (o.verify_drafts > 0)
    j["verify"] = verify_cost(*L.model, context_options(o.m).kv, L.threads, o.prompt, o.verify_drafts, 16, std::max(3, o.reps),
                             o.profile);
  if (!o.dflash.empty()) {
    const DflashDrafter d(o.dflash, *L.model, o.draft_quantize);
    if (!o.json) std::cerr << "nvfp4: " << d.describe() << "\n";
    j["dflash"] = dflash_cost(*L.model, d, context_options(o.m).kv, L.threads, o.prompt, 16, std::max(3, o.reps));
    j["dflash"]["drafter"] = d.describe();
  }
  if (!o.assistant.empty()) {
    const Gemma4Assistant a(o.assistant, *L.model, o.draft_quantize);
    if (!o.json) std::cerr << "nvfp4: " << a.describe() << "\n";
    j["assistant"] = assistant_cost(*L.model, a, context_options(o.m).kv, L.threads, o.prompt, 16, std::max(3, o.reps));
    j["assistant"]["drafter"] = a.describe();
  }
  const std::string common = peer_args(o, L.threads);
  // Our weights go before llama.cpp maps the file: a model near the size of RAM would otherwise
  // push its pages out while it runs.
  L.model.reset();
  L.mtp_ck.reset();
  L.ck.reset();
  j["llama_cpp_nvfp4_prompt_tps"] = nullptr;
  j["llama_cpp_nvfp4_gen_tps"] = nullptr;
  j["llama_cpp_q4_0_prompt_tps"] = nullptr;
  j["llama_cpp_q4_0_gen_tps"] = nullptr;
  if (auto r = o.peer_skip_nvfp4 ? std::nullopt : peer(o, o.m.model + common); r && r->contains("prompt_tps")) {
    j["llama_cpp_nvfp4_prompt_tps"] = (*r)["prompt_tps"];
    j["llama_cpp_nvfp4_gen_tps"] = (*r)["gen_tps"];
    j["llama_cpp_nvfp4"] = *r;  // with its spread
    // The ratios the targets are stated in, from this one run.
    j["prompt_vs_llama_cpp_nvfp4"] = pp / (*r)["prompt_tps"].get<double>();
    j["gen_vs_llama_cpp_nvfp4"] = tg / (*r)["gen_tps"].get<double>();
  }
  if (!o.peer_q4_0_source.empty()) {
    const std::string q4 = "/tmp/nvfp4-bench-q4_0-" + std::to_string(getpid()) + ".gguf";
    if (peer(o, o.peer_q4_0_source + " --quantize-q4_0 " + q4))
      if (auto r = peer(o, q4 + common); r && r->contains("prompt_tps")) {
        j["llama_cpp_q4_0_prompt_tps"] = (*r)["prompt_tps"];
        j["llama_cpp_q4_0_gen_tps"] = (*r)["gen_tps"];
        j["llama_cpp_q4_0"] = *r;
      }
    std::remove(q4.c_str());
  }
  if (o.json) {
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  // "median (min-max)" of one side's prompt or generation tokens/s.
  auto cell = [](const nlohmann::json& r, const std::string& k) {
    if (!r.is_object() || !r.contains(k)) return std::string("n/a");
    char b[64];
    std::snprintf(b, sizeof b, "%.1f (%.1f-%.1f)", r[k].get<double>(), r[k + "_min"].get<double>(), r[k + "_max"].get<double>());
    return std::string(b);
  };
  const std::string kv = "KV " + o.m.kv;
  std::printf("%-36s %24s %24s\n", "", "prompt t/s", "gen t/s");
  std::printf("%-36s %24s %24s\n", ("nvfp4 " + std::string(mode_name(L.mode)) + ", " + kv).c_str(), cell(j, "prompt_tps").c_str(), cell(j, "gen_tps").c_str());
  const nlohmann::json none;
  const auto& ln = j.contains("llama_cpp_nvfp4") ? j["llama_cpp_nvfp4"] : none;
  const auto& lq = j.contains("llama_cpp_q4_0") ? j["llama_cpp_q4_0"] : none;
  std::printf("%-36s %24s %24s\n", ("llama.cpp, same NVFP4 GGUF, " + kv).c_str(), cell(ln, "prompt_tps").c_str(), cell(ln, "gen_tps").c_str());
  std::printf("%-36s %24s %24s\n", ("llama.cpp, its Q4_0, " + kv).c_str(), cell(lq, "prompt_tps").c_str(), cell(lq, "gen_tps").c_str());
  if (j.contains("gen_vs_llama_cpp_nvfp4"))
    std::printf("against llama.cpp on the same NVFP4 GGUF: prompt %.2fx, generation %.2fx\n",
                j["prompt_vs_llama_cpp_nvfp4"].get<double>(), j["gen_vs_llama_cpp_nvfp4"].get<double>());
  std::printf("pool hand-offs per generated token: %.1f\n", ms.dispatches_per_token);
  std::printf("roofline: %.1f MB/token at %.1f GB/s = %.1f t/s; generation at %.1f %% of it\n", bpt / 1e6, gbps,
              gbps * 1e9 / bpt, j["roofline_pct"].get<double>());
  if (state_bpt > 0)
    std::printf("with the %.1f MB of keys and values a generated token reads on average and the %.1f MB of recurrent states "
                "it reads and writes: %.1f %%\n", kv_bpt / 1e6, state_bpt / 1e6, j["roofline_with_kv_pct"].get<double>());
  else
    std::printf("with the %.1f MB of keys and values a generated token reads on average: %.1f %%\n", kv_bpt / 1e6,
                j["roofline_with_kv_pct"].get<double>());
  std::printf("peak RSS %.0f MiB = %.2fx (weights %.0f MiB + KV cache %.0f MiB%s)\n", rss, j["peak_rss_vs_weights_kv"].get<double>(),
              w_mib, kv_mib, state_mib > 0 ? (" + recurrent states " + std::to_string(static_cast<int>(state_mib + 0.5)) + " MiB").c_str() : "");
  std::printf("on 2 MiB pages: %.0f MiB (transparent huge pages: %s)\n", huge_mib, thp_mode().empty() ? "absent" : thp_mode().c_str());
  if (o.profile) {
    print_profile(j["profile"]);
    std::printf("  the threads stood idle %.1f %% of the dispatches' time (waiting for a slower thread's share, or waking)\n",
                ms.pool_idle_pct);
  }
  if (j.contains("experts")) {
    const auto& e = j["experts"];
    std::printf("experts from %s: %lld slots of %.1f MiB for %lld experts; the file reads %.2f GB/s sequentially\n",
                e["file"].get<std::string>().c_str(), e["slots"].get<long long>(), e["slot_mib"].get<double>(),
                e["experts"].get<long long>(), e["disk_read_gbps"].get<double>());
    for (const char* part : {"prompt", "gen"})
      std::printf("  %-6s hit rate %.1f %%, %lld read ahead (%lld used), %.1f MB read from disk per token, %.1f %% of the time waiting on reads\n",
                  part, 100.0 * e[part]["hit_rate"].get<double>(), e[part]["prefetched"].get<long long>(),
                  e[part]["prefetch_used"].get<long long>(), e[part]["disk_mb_per_token"].get<double>(),
                  100.0 * e[part]["read_share"].get<double>());
    if (e["disk_bound_gen_tps"].get<double>() > 0)
      std::printf("  generation at %.1f %% of the disk bound (%.2f t/s)\n", e["gen_pct_of_disk_bound"].get<double>(),
                  e["disk_bound_gen_tps"].get<double>());
  }
  if (j.contains("dflash")) {
    const auto& v = j["dflash"];
    std::printf("DFlash (block %d, plain step %.2f ms): ms per step, a block of k + 1 rows verified\n", v["block_size"].get<int>(),
                v["plain_ms"].get<double>());
    for (const auto& e : v["drafts"])
      std::printf("  k=%-3d draft %8.2f  verify %8.2f (drafter context %6.2f)  break-even at %5.2f accepted, %5.2fx if all are\n",
                  e["k"].get<int>(), e["draft_ms"].get<double>(), e["verify_ms"].get<double>(), e["observe_ms"].get<double>(),
                  e["break_even_accepted"].get<double>(), e["speedup_all_accepted"].get<double>());
  }
  if (j.contains("assistant")) {
    const auto& v = j["assistant"];
    std::printf("Gemma 4 assistant (plain step %.2f ms): ms per step, k chained drafts then the k + 1 tokens verified\n",
                v["plain_ms"].get<double>());
    for (const auto& e : v["drafts"])
      std::printf("  k=%-3d draft %8.2f  verify %8.2f  break-even at %5.2f accepted, %5.2fx if all are\n", e["k"].get<int>(),
                  e["draft_ms"].get<double>(), e["verify_ms"].get<double>(), e["break_even_accepted"].get<double>(),
                  e["speedup_all_accepted"].get<double>());
  }
  if (j.contains("verify")) {
    const auto& v = j["verify"];
    std::printf("verify step of k drafts (snapshots and rollback included) against a plain step:");
    for (size_t i = 1; i < v["k"].size(); ++i)
      std::printf(" k=%d %.2fx", v["k"][i].get<int>(), v["vs_plain"][i].get<double>());
    std::printf(" (plain %.2f ms)\n", v["step_ms"][0].get<double>());
    if (v.contains("parts_ms")) {  // --profile: where each k's step goes, ms per step
      std::printf("  verify step by part, ms (k = 0 .. %zu):\n", v["parts_ms"].size() - 1);
      for (const auto& [part, ms0] : v["parts_ms"][0].items()) {
        std::printf("  %-12s", part.c_str());
        for (const auto& pk : v["parts_ms"]) std::printf(" %8.2f", pk.contains(part) ? pk[part].get<double>() : 0.0);
        std::printf("\n");
      }
    }
  }
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
  app.add_flag("--peer-skip-nvfp4", o->peer_skip_nvfp4,
               "llama.cpp: only the Q4_0 column, not the same NVFP4 file (its NVFP4 CPU path can take minutes per repeat on a large model)");
  app.add_flag("--contention", o->contention,
               "generation at -t 1 and the default -t, without and with a busy loop on every core (and llama.cpp under it)");
  app.add_option("--peer-timeout-s", o->peer_timeout_s, "--contention: seconds each loaded llama.cpp run may take (0: no limit)")
      ->check(CLI::Range(0, 86400));
  app.add_flag("--gen-varied", o->gen_varied,
               "the timed generation feeds the prompt's id formula onward instead of the greedy pick (llama.cpp too): "
               "routing that varies as text's does (random weights' greedy picks repeat)");
  app.add_flag("--profile", o->profile,
               "after the timed runs, one more generation timed by part (attention, router, experts, mlp, head): ms, MB and GB/s per token");
  app.add_option("--verify-drafts", o->verify_drafts,
                 "speculative: also time a verify step of k = 1 .. K drafts (snapshots and rollback included) against a plain step")
      ->check(CLI::Range(0, 16));
  app.add_option("--dflash", o->dflash,
                 "speculative: also time a DFlash drafter (its directory) against plain decoding: its draft step, the verify step "
                 "of its block, and the acceptance a step must reach to pay");
  app.add_option("--assistant", o->assistant,
                 "speculative: also time a Gemma 4 assistant (its directory) against plain decoding: k = 1 .. 4 chained draft "
                 "steps, the verify step, and the acceptance a step must reach to pay");
  app.add_flag("--draft-quantize", o->draft_quantize, "--dflash / --assistant: quantize the drafter's float layers to NVFP4 at load");
  app.add_flag("--json", o->json, "one JSON object");
  return [o] { return run(*o); };
});

}  // namespace
}  // namespace nvfp4::cli
