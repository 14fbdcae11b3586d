// nvfp4 quality: teacher-forced comparison of a model with a reference over a text, as
// llama-perplexity --kl-divergence reports it. The text is cut into windows of --ctx tokens; in each,
// the predictions for the second half are scored (each has at least ctx/2 tokens of context).
// Per scored position: KL(ref || model) of the next-token distributions, whether the top tokens
// agree, and both models' log-probability of the actual next token (perplexity).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/model_setup.h"
#include "cli/registry.h"
#include "nvfp4/error.h"

namespace nvfp4::cli {
namespace {

struct QualityArgs {
  ModelArgs m;
  std::string ref, ref_precision = "f32", ref_kv, file;
  bool json = false;
};

// log-softmax of row into out (double), returns argmax.
int64_t log_softmax(const float* row, int64_t n, std::vector<double>& out) {
  int64_t am = 0;
  for (int64_t i = 1; i < n; ++i) if (row[i] > row[am]) am = i;
  const double mx = row[am];
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(row[i]) - mx);
  const double lse = mx + std::log(s);
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<double>(row[i]) - lse;
  return am;
}

int run(const QualityArgs& a) {
  Loaded M = load_model(a.m, a.json);
  ModelArgs ra = a.m;
  ra.model = a.ref;
  ra.precision = a.ref_precision;
  ra.quantize = false;
  ra.calibrate.clear();
  ra.experts_budget.clear();  // the experts' budget and file are the model's own
  ra.experts_file.clear();
  Loaded R = load_model(ra, a.json);
  const std::vector<int32_t> toks = M.tok.encode(read_text_file(a.file), false);
  if (R.tok.encode(read_text_file(a.file), false) != toks)
    throw Error(a.ref, "", "the reference tokenizes the text differently", "the same vocabulary", "other token ids");
  const int64_t ctx = a.m.n_ctx;
  if (ctx < 16) throw Error("", "--ctx", "--ctx", ">= 16", std::to_string(ctx));
  if (static_cast<int64_t>(toks.size()) < ctx)
    throw Error(a.file, "", "text too short for one window", std::to_string(ctx) + " tokens", std::to_string(toks.size()));
  const int64_t nv = M.model->config().n_vocab;
  if (R.model->config().n_vocab != nv) throw Error(a.ref, "", "vocabulary size", std::to_string(nv), std::to_string(R.model->config().n_vocab));
  ThreadPool pool(M.threads);
  ContextOptions co = context_options(a.m);
  co.n_ctx = ctx;
  ContextOptions cro = co;
  if (!a.ref_kv.empty()) cro.kv = kv_type(a.ref_kv);  // the reference's own cache (--ref-kv; default the model's --kv)
  Context cm(*M.model, co, pool), cr(*R.model, cro, pool);
  std::vector<float> lm(static_cast<size_t>(ctx * nv)), lr(lm.size());
  std::vector<double> kls, pm, pr;
  double nll = 0, nll_ref = 0;
  int64_t same = 0;
  const int64_t windows = static_cast<int64_t>(toks.size()) / ctx;
  for (int64_t w = 0; w < windows; ++w) {
    const int32_t* t = toks.data() + w * ctx;
    cm.reset();
    cr.reset();
    cm.eval(t, ctx, lm.data(), true);
    cr.eval(t, ctx, lr.data(), true);
    for (int64_t i = ctx / 2; i < ctx - 1; ++i) {
      const int64_t am = log_softmax(lm.data() + i * nv, nv, pm);
      const int64_t ar = log_softmax(lr.data() + i * nv, nv, pr);
      double kl = 0;
      for (int64_t v = 0; v < nv; ++v) {
        const double p = std::exp(pr[static_cast<size_t>(v)]);
        kl += p * (pr[static_cast<size_t>(v)] - pm[static_cast<size_t>(v)]);
      }
      kls.push_back(std::max(kl, 0.0));
      same += am == ar;
      nll -= pm[static_cast<size_t>(t[i + 1])];
      nll_ref -= pr[static_cast<size_t>(t[i + 1])];
    }
  }
  const double n = static_cast<double>(kls.size());
  double kl_sum = 0;
  for (double k : kls) kl_sum += k;
  std::vector<double> sorted = kls;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) { return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * (n - 1) + 0.5))]; };
  nlohmann::json j;
  j["model"] = a.m.model;
  j["ref"] = a.ref;
  j["precision"] = std::string(mode_name(M.mode));
  j["ref_precision"] = std::string(mode_name(R.mode));
  j["kv"] = a.m.kv;
  j["ref_kv"] = a.ref_kv.empty() ? a.m.kv : a.ref_kv;
  j["ctx"] = ctx;
  j["tokens"] = kls.size();
  j["same_top_pct"] = 100.0 * static_cast<double>(same) / n;
  j["kl_mean"] = kl_sum / n;
  j["kl_median"] = pct(0.5);
  j["kl_p99"] = pct(0.99);
  j["kl_max"] = sorted.back();
  j["ppl"] = std::exp(nll / n);
  j["ppl_ref"] = std::exp(nll_ref / n);
  j["ln_ppl_ratio"] = (nll - nll_ref) / n;
  j["peak_rss_mb"] = peak_rss_mib();
  if (a.json) {
    std::cout << j.dump(1) << "\n";
  } else {
    std::printf("scored tokens        %lld (%lld windows of %lld)\n", static_cast<long long>(kls.size()),
                static_cast<long long>(windows), static_cast<long long>(ctx));
    std::printf("precision            %s, KV %s vs reference %s, KV %s\n", mode_name(M.mode).data(), a.m.kv.c_str(),
                mode_name(R.mode).data(), (a.ref_kv.empty() ? a.m.kv : a.ref_kv).c_str());
    std::printf("same top token       %.3f %%\n", j["same_top_pct"].get<double>());
    std::printf("mean KL divergence   %.6f\n", j["kl_mean"].get<double>());
    std::printf("median KL            %.6f\n", j["kl_median"].get<double>());
    std::printf("99th percentile KL   %.6f\n", j["kl_p99"].get<double>());
    std::printf("max KL               %.6f\n", j["kl_max"].get<double>());
    std::printf("perplexity           %.4f (reference %.4f, ln ratio %+.5f)\n", j["ppl"].get<double>(),
                j["ppl_ref"].get<double>(), j["ln_ppl_ratio"].get<double>());
  }
  return 0;
}

const Registrar reg("quality", "compare a model with a reference over a text (KL, same top token, perplexity)",
                    [](CLI::App& app) {
  auto a = std::make_shared<QualityArgs>();
  a->m.add(app);
  a->m.n_ctx = 512;
  app.add_option("--ref", a->ref, "reference checkpoint (e.g. the float model)")->required();
  app.add_option("--ref-precision", a->ref_precision, "precision of the reference's NVFP4 layers")
      ->check(CLI::IsMember({"a16q8", "a16", "w4a4", "f32"}));
  app.add_option("--ref-kv", a->ref_kv, "the reference's KV cache type (default: the model's --kv; e.g. --kv fp8 --ref-kv f32 measures the FP8 cache)")
      ->check(CLI::IsMember({"f32", "f16", "fp8"}));
  app.add_option("-f,--file", a->file, "text file")->required();
  app.add_flag("--json", a->json, "print one JSON object");
  return [a] { return run(*a); };
});

}  // namespace
}  // namespace nvfp4::cli
