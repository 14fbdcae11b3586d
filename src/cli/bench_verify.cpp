#include "cli/bench_verify.h"

#include <algorithm>

#include "cli/bench_util.h"
#include "nvfp4/speculate.h"

namespace nvfp4::cli {

nlohmann::json verify_cost(const Model& m, KvType kv, int threads, int64_t prompt, int max_k, int steps, int reps,
                           bool profile) {
  ThreadPool pool(threads);
  const int64_t nv = m.config().n_vocab;
  const int64_t n_ctx = prompt + static_cast<int64_t>(steps) * (max_k + 1) * (reps + (profile ? 1 : 0)) + max_k + 2;
  Sequence seq(m, n_ctx, kv);
  Workspace ws(m, std::max<int64_t>(64, max_k + 1));
  std::vector<float> logits(static_cast<size_t>(nv) * static_cast<size_t>(max_k + 1));
  std::vector<StepToken> step;
  const auto token = [&](int64_t i) { return static_cast<int32_t>(100 + (i * 7919) % (nv - 200)); };
  for (int64_t s = 0; s < prompt; s += 64) {
    step.clear();
    for (int64_t i = s; i < std::min(prompt, s + 64); ++i) step.push_back({token(i), &seq, i, i + 1 == prompt});
    forward(m, step, ws, pool, logits.data());
  }
  std::vector<std::vector<double>> ms(static_cast<size_t>(max_k + 1));
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k <= max_k; ++k) {
      const double t0 = bench::now_ms();
      for (int s = 0; s < steps; ++s) {
        const int64_t p0 = seq.pos();
        begin_verify(seq, static_cast<size_t>(k));
        step.clear();
        for (int64_t i = 0; i <= k; ++i) step.push_back({token(p0 + i), &seq, p0 + i, true});
        forward(m, step, ws, pool, logits.data());
        end_verify(seq, p0, 0);  // every draft rejected: the rollback is part of the cost
      }
      ms[static_cast<size_t>(k)].push_back((bench::now_ms() - t0) / steps);
    }
  nlohmann::json parts = nlohmann::json::array();
  for (int k = 0; profile && k <= max_k; ++k) {
    StepProfile prof;
    ws.set_profile(&prof);
    double snap_ms = 0;
    for (int s = 0; s < steps; ++s) {
      const int64_t p0 = seq.pos();
      double t0 = bench::now_ms();
      begin_verify(seq, static_cast<size_t>(k));
      snap_ms += bench::now_ms() - t0;
      step.clear();
      for (int64_t i = 0; i <= k; ++i) step.push_back({token(p0 + i), &seq, p0 + i, true});
      forward(m, step, ws, pool, logits.data());
      t0 = bench::now_ms();
      end_verify(seq, p0, 0);
      snap_ms += bench::now_ms() - t0;
    }
    ws.set_profile(nullptr);
    nlohmann::json pk = nlohmann::json::object();
    double timed = 0;
    for (int i = 0; i < StepProfile::n_parts; ++i) {
      timed += prof.seconds[i];
      if (prof.seconds[i] > 0) pk[StepProfile::name(i)] = 1e3 * prof.seconds[i] / steps;
    }
    pk["snapshots"] = snap_ms / steps;
    pk["other"] = 1e3 * (prof.total - timed) / steps;
    pk["step"] = 1e3 * prof.total / steps + snap_ms / steps;
    parts.push_back(pk);
  }
  nlohmann::json j = {{"k", nlohmann::json::array()}, {"step_ms", nlohmann::json::array()}, {"vs_plain", nlohmann::json::array()},
                      {"step_ms_min", nlohmann::json::array()}, {"step_ms_max", nlohmann::json::array()}};
  const double plain = bench::stats_of(ms[0]).median_ms;
  for (int k = 0; k <= max_k; ++k) {
    const bench::Stats st = bench::stats_of(ms[static_cast<size_t>(k)]);
    j["k"].push_back(k);
    j["step_ms"].push_back(st.median_ms);
    j["step_ms_min"].push_back(st.min_ms);
    j["step_ms_max"].push_back(st.max_ms);
    j["vs_plain"].push_back(st.median_ms / plain);
  }
  if (profile) j["parts_ms"] = parts;
  return j;
}

}  // namespace nvfp4::cli
