// `nvfp4 bench attention`: decode attention alone (one token over its cache, attention_layer as
// the model calls it) for each KV cache type side by side, at given context lengths: from memory
// (as many layers as hold 8x the L3, one after another, as a model's layers are) and from cache
// (one layer again and again). The types of a case run interleaved rep by rep, so their ratio is
// taken under the same host conditions; the DRAM read roofline is measured right before each case.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/bench_registry.h"
#include "cli/bench_util.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "ops/attention.h"

namespace nvfp4::cli {
namespace {

struct Options {
  bool json = false;
  int64_t n_head = 9, n_kv = 3, head_dim = 64;  // SmolLM2's attention
  double scale = 0;  // the scores' scale; 0: 1/sqrt(head_dim)
  std::string kvs = "f16,fp8,f32";
  std::string ctxs = "512,4096";
  std::string threads = "1,2";
  std::string residency = "dram,cache";
  std::string isa;
  int reps = 9;
};

KvType kv_type(const std::string& s) {
  if (s == "f32") return KvType::f32;
  if (s == "f16") return KvType::f16;
  if (s == "fp8") return KvType::fp8;
  throw Error("", "--kv", "bad --kv entry", "f32, f16 or fp8", s);
}

// Deterministic values in about [-2, 2) (a fixed LCG: the same caches every run).
struct Lcg {
  uint64_t s = 7;
  float next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) * 0x1p-22f;
  }
};

// A cache of n_layer layers holding ctx positions: layer 0 stored from random keys and values,
// the others its copies (each layer its own memory).
KvCache make_cache(const Options& o, KvType type, int64_t n_layer, int64_t ctx) {
  KvCache kv;
  kv.init(n_layer, o.n_kv, o.head_dim, ctx, type);
  Lcg g;
  std::vector<float> k(static_cast<size_t>(o.n_kv * o.head_dim)), v(k.size());
  for (int64_t p = 0; p < ctx; ++p) {
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = g.next();
      v[i] = g.next();
    }
    kv.store(0, p, k.data(), v.data());
  }
  for (int64_t l = 1; l < n_layer; ++l) kv.copy_prefix(l, kv, 0, ctx);
  return kv;
}

int run(const Options& o) {
  if (!o.isa.empty()) force_isa(parse_isa(o.isa));
  if (o.n_head <= 0 || o.n_kv <= 0 || o.n_head % o.n_kv != 0 || o.head_dim <= 0)
    throw Error("", "--heads/--kv-heads/--head-dim", "bad attention shape", "heads a positive multiple of KV heads",
                std::to_string(o.n_head) + "/" + std::to_string(o.n_kv));
  if (!(o.scale >= 0) || !std::isfinite(o.scale))
    throw Error("", "--scale", "bad scores' scale", "0 (1/sqrt(head-dim)) or a positive number", std::to_string(o.scale));
  std::vector<KvType> types;
  for (const auto& s : bench::split_list(o.kvs)) types.push_back(kv_type(s));
  const std::vector<std::string> names = bench::split_list(o.kvs);
  std::printf("nvfp4 bench attention: %lld heads / %lld KV heads of %lld, ISA %s; us per layer and token\n",
              static_cast<long long>(o.n_head), static_cast<long long>(o.n_kv), static_cast<long long>(o.head_dim),
              std::string(isa_name(active_isa())).c_str());
  Lcg g;
  std::vector<float> q(static_cast<size_t>(o.n_head * o.head_dim)), out(q.size()), scratch;
  for (auto& x : q) x = g.next();
  for (const auto& cs : bench::split_list(o.ctxs)) {
    const int64_t ctx = std::stoll(cs);
    if (ctx <= 0) throw Error("", "--ctx", "bad context length", "> 0", cs);
    for (const auto& res : bench::split_list(o.residency)) {
      const bool dram = res == "dram";
      if (!dram && res != "cache") throw Error("", "--residency", "bad residency", "dram or cache", res);
      // Layers per type: enough that one pass over them reads 8x the L3 (dram), or one (cache).
      std::vector<KvCache> caches;
      std::vector<int64_t> n_layer, calls;  // per type; calls: layer calls per timed pass
      for (KvType t : types) {
        KvCache probe;
        probe.init(1, o.n_kv, o.head_dim, ctx, t);
        const int64_t lb = static_cast<int64_t>(probe.layer_bytes());
        n_layer.push_back(dram ? (8 * bench::l3_bytes() + lb - 1) / lb : 1);
        calls.push_back(std::max<int64_t>(n_layer.back(), 16));
        caches.push_back(make_cache(o, t, n_layer.back(), ctx));
      }
      for (const auto& ts : bench::split_list(o.threads)) {
        ThreadPool pool(std::stoi(ts));
        const double bw = bench::dram_read_gbps(pool, int64_t{1} << 30);
        std::vector<std::vector<double>> us(types.size());
        AttnView view;
        view.head_dim = o.head_dim;
        view.n_head = o.n_head;
        view.n_kv = o.n_kv;
        view.scale = static_cast<float>(o.scale > 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(o.head_dim)));
        for (int r = -1; r < o.reps; ++r) {  // r = -1: a warm-up pass
          for (size_t i = 0; i < types.size(); ++i) {
            AttnToken tok{&caches[i], ctx - 1};
            AttnStep step;
            step.set(std::span<const AttnToken>(&tok, 1));
            const double t0 = bench::now_ms();
            for (int64_t c = 0; c < calls[i]; ++c) {
              view.layer = c % n_layer[i];
              attention_layer(view, step, q.data(), out.data(), scratch, pool);
            }
            if (r >= 0) us[i].push_back((bench::now_ms() - t0) * 1e3 / static_cast<double>(calls[i]));
          }
        }
        const double base = bench::stats_of(us[0]).median_ms;
        for (size_t i = 0; i < types.size(); ++i) {
          const bench::Stats st = bench::stats_of(us[i]);  // in us here
          const double bytes = static_cast<double>(caches[i].layer_bytes()) * static_cast<double>(ctx) /
                               static_cast<double>(caches[i].n_ctx());
          const double gbps = bytes / (st.median_ms * 1e3);
          if (o.json) {
            std::cout << nlohmann::json{{"kv", names[i]}, {"ctx", ctx}, {"threads", std::stoi(ts)}, {"residency", res},
                                        {"layers", n_layer[i]}, {"median_us", st.median_ms}, {"min_us", st.min_ms},
                                        {"max_us", st.max_ms}, {"vs_first", st.median_ms / base},
                                        {"kv_gbps", gbps}, {"dram_gbps", bw}, {"scale", view.scale}, {"isa", isa_name(active_isa())}}
                             .dump()
                      << std::endl;
          } else {
            std::printf("%-4s ctx %6lld thr %s %-5s %9.1f us (%.1f-%.1f) %5.2fx %s  %5.1f GB/s of DRAM %.1f\n",
                        names[i].c_str(), static_cast<long long>(ctx), ts.c_str(), res.c_str(), st.median_ms,
                        st.min_ms, st.max_ms, st.median_ms / base, names[0].c_str(), gbps, bw);
          }
        }
      }
    }
  }
  clear_forced_isa();
  return 0;
}

const BenchRegistrar reg("attention", "time decode attention per KV cache type (F16, FP8, F32) side by side", [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_flag("--json", o->json, "one JSON object per case");
  app.add_option("--heads", o->n_head, "query heads")->capture_default_str();
  app.add_option("--kv-heads", o->n_kv, "KV heads")->capture_default_str();
  app.add_option("--head-dim", o->head_dim, "head dimension")->capture_default_str();
  app.add_option("--scale", o->scale,
                 "the scores' scale (default 1/sqrt(head-dim); 1: Gemma 4's unscaled normed q and k, whose weights reach the subnormals)")
      ->capture_default_str();
  app.add_option("--kv", o->kvs, "cache types (list; ratios are to the first)")->capture_default_str();
  app.add_option("--ctx", o->ctxs, "positions attended (list)")->capture_default_str();
  app.add_option("--threads", o->threads, "thread counts (list)")->capture_default_str();
  app.add_option("--residency", o->residency, "dram (8x the L3 of layers), cache (one layer)")->capture_default_str();
  app.add_option("--reps", o->reps, "timed passes per case")->capture_default_str();
  app.add_option("--isa", o->isa, "force scalar, avx2, avxvnni, avx512 or amx");
  return std::function<int()>([o] { return run(*o); });
});

}  // namespace
}  // namespace nvfp4::cli
