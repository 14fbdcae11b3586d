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

nlohmann::json dflash_cost(const Model& m, const DflashDrafter& d, KvType kv, int threads, int64_t prompt, int steps, int reps) {
  ThreadPool pool(threads);
  const int64_t nv = m.config().n_vocab, B = d.block_size(), dim = m.config().n_embd;
  const size_t nt = d.taps().size();
  // Draft lengths timed: 3, 7, 15 .. up to the block's (a block of k + 1 rows each).
  std::vector<int64_t> ks;
  for (int64_t k = 3; k < B - 1; k = 2 * k + 1) ks.push_back(k);
  ks.push_back(B - 1);
  const int64_t n_ctx = prompt + static_cast<int64_t>(steps) * reps * static_cast<int64_t>(ks.size() + 1) + B + 2;
  Sequence plain(m, n_ctx, kv), spec(m, n_ctx, kv);
  Workspace ws(m, std::max<int64_t>(64, B));
  DflashProposer prop(d, n_ctx, kv);
  std::vector<float> logits(static_cast<size_t>(nv) * static_cast<size_t>(B));
  std::vector<float> taps(static_cast<size_t>(std::max<int64_t>(64, B)) * nt * static_cast<size_t>(dim));
  std::vector<StepToken> step;
  const auto token = [&](int64_t i) { return static_cast<int32_t>(100 + (i * 7919) % (nv - 200)); };
  std::vector<int32_t> history;
  for (int64_t i = 0; i < prompt; ++i) history.push_back(token(i));
  for (Sequence* seq : {&plain, &spec})
    for (int64_t s = 0; s < prompt; s += 64) {
      step.clear();
      for (int64_t i = s; i < std::min(prompt, s + 64); ++i) step.push_back({token(i), seq, i, i + 1 == prompt});
      const int64_t n = static_cast<int64_t>(step.size());
      if (seq == &spec) {
        forward(m, step, ws, pool, logits.data(), nullptr, LayerTaps{d.taps(), taps.data()});
        prop.observe(s, taps.data(), n, pool);
      } else {
        forward(m, step, ws, pool, logits.data());
      }
    }
  std::vector<double> plain_ms;
  std::vector<std::vector<double>> draft_ms(ks.size()), verify_ms(ks.size()), observe_ms(ks.size());
  for (int r = 0; r < reps; ++r) {
    double t0 = bench::now_ms();
    for (int s = 0; s < steps; ++s) {
      step.assign(1, {token(plain.pos()), &plain, plain.pos(), true});
      forward(m, step, ws, pool, logits.data());
    }
    plain_ms.push_back((bench::now_ms() - t0) / steps);
    for (size_t ki = 0; ki < ks.size(); ++ki) {
      double dr = 0, ve = 0, ob = 0;
      for (int s = 0; s < steps; ++s) {
        const int64_t p0 = spec.pos();
        history.resize(static_cast<size_t>(p0));
        history.push_back(token(p0));
        t0 = bench::now_ms();
        const std::vector<int32_t> draft = prop.propose(history, static_cast<int>(ks[ki]), pool);
        const double t1 = bench::now_ms();
        begin_verify(spec, draft.size());
        step.clear();
        step.push_back({history.back(), &spec, p0, true});
        for (size_t i = 0; i < draft.size(); ++i) step.push_back({draft[i], &spec, p0 + 1 + static_cast<int64_t>(i), true});
        forward(m, step, ws, pool, logits.data(), nullptr, LayerTaps{d.taps(), taps.data()});
        const double t2 = bench::now_ms();
        prop.observe(p0, taps.data(), static_cast<int64_t>(step.size()), pool);
        const double t3 = bench::now_ms();
        end_verify(spec, p0, 0);  // every draft rejected: one token a step, as the plain steps
        dr += t1 - t0;
        ve += t3 - t1;
        ob += t3 - t2;
      }
      draft_ms[ki].push_back(dr / steps);
      verify_ms[ki].push_back(ve / steps);
      observe_ms[ki].push_back(ob / steps);
    }
  }
  const bench::Stats p = bench::stats_of(plain_ms);
  nlohmann::json j = {{"block_size", B}, {"steps", steps}, {"reps", reps}, {"prompt", prompt},
                      {"plain_ms", p.median_ms}, {"plain_ms_min", p.min_ms}, {"plain_ms_max", p.max_ms},
                      {"drafter_mib", static_cast<double>(d.weight_bytes()) / (1 << 20)},
                      {"target_mib_per_token", static_cast<double>(m.bytes_per_token()) / (1 << 20)},
                      {"drafts", nlohmann::json::array()}};
  for (size_t ki = 0; ki < ks.size(); ++ki) {
    const bench::Stats dr = bench::stats_of(draft_ms[ki]), ve = bench::stats_of(verify_ms[ki]), ob = bench::stats_of(observe_ms[ki]);
    const double cost = dr.median_ms + ve.median_ms;
    nlohmann::json e = {{"k", ks[ki]}, {"draft_ms", dr.median_ms}, {"draft_ms_min", dr.min_ms}, {"draft_ms_max", dr.max_ms},
                        {"verify_ms", ve.median_ms}, {"verify_ms_min", ve.min_ms}, {"verify_ms_max", ve.max_ms},
                        {"observe_ms", ob.median_ms}, {"break_even_accepted", cost / p.median_ms - 1.0},
                        {"speedup_all_accepted", static_cast<double>(ks[ki] + 1) * p.median_ms / cost}};
    j["drafts"].push_back(e);
  }
  return j;
}

nlohmann::json assistant_cost(const Model& m, const Gemma4Assistant& a, KvType kv, int threads, int64_t prompt, int steps, int reps) {
  ThreadPool pool(threads);
  const int64_t nv = m.config().n_vocab, dim = m.config().n_embd, kmax = 4;
  const int64_t n_ctx = prompt + static_cast<int64_t>(steps) * reps * (kmax + 1) + kmax + 2;
  Sequence plain(m, n_ctx, kv), spec(m, n_ctx, kv);
  Workspace ws(m, 64);
  AssistantProposer prop(a);
  std::vector<float> logits(static_cast<size_t>(nv) * static_cast<size_t>(kmax + 1)), hidden(static_cast<size_t>(64 * dim));
  std::vector<StepToken> step;
  const auto token = [&](int64_t i) { return static_cast<int32_t>(100 + (i * 7919) % (nv - 200)); };
  std::vector<int32_t> history;
  for (int64_t i = 0; i < prompt; ++i) history.push_back(token(i));
  for (Sequence* seq : {&plain, &spec})
    for (int64_t s = 0; s < prompt; s += 64) {
      step.clear();
      for (int64_t i = s; i < std::min(prompt, s + 64); ++i) step.push_back({token(i), seq, i, i + 1 == prompt});
      forward(m, step, ws, pool, logits.data(), seq == &spec ? hidden.data() : nullptr);
      if (seq == &spec) prop.observe(s, hidden.data(), static_cast<int64_t>(step.size()));
    }
  std::vector<double> plain_ms;
  std::vector<std::vector<double>> draft_ms(kmax), verify_ms(kmax);
  for (int r = 0; r < reps; ++r) {
    double t0 = bench::now_ms();
    for (int s = 0; s < steps; ++s) {
      step.assign(1, {token(plain.pos()), &plain, plain.pos(), true});
      forward(m, step, ws, pool, logits.data());
    }
    plain_ms.push_back((bench::now_ms() - t0) / steps);
    for (int64_t k = 1; k <= kmax; ++k) {
      double dr = 0, ve = 0;
      for (int s = 0; s < steps; ++s) {
        const int64_t p0 = spec.pos();
        history.resize(static_cast<size_t>(p0));
        history.push_back(token(p0));
        t0 = bench::now_ms();
        const std::vector<int32_t> draft = prop.propose(history, static_cast<int>(k), spec, pool);
        const double t1 = bench::now_ms();
        begin_verify(spec, draft.size());
        step.clear();
        step.push_back({history.back(), &spec, p0, true});
        for (size_t i = 0; i < draft.size(); ++i) step.push_back({draft[i], &spec, p0 + 1 + static_cast<int64_t>(i), true});
        forward(m, step, ws, pool, logits.data(), hidden.data());
        prop.observe(p0, hidden.data(), static_cast<int64_t>(step.size()));
        const double t2 = bench::now_ms();
        end_verify(spec, p0, 0);  // every draft rejected: one token a step, as the plain steps
        dr += t1 - t0;
        ve += t2 - t1;
      }
      draft_ms[static_cast<size_t>(k - 1)].push_back(dr / steps);
      verify_ms[static_cast<size_t>(k - 1)].push_back(ve / steps);
    }
  }
  const bench::Stats p = bench::stats_of(plain_ms);
  nlohmann::json j = {{"steps", steps}, {"reps", reps}, {"prompt", prompt}, {"plain_ms", p.median_ms}, {"plain_ms_min", p.min_ms},
                      {"plain_ms_max", p.max_ms}, {"assistant_mib", static_cast<double>(a.weight_bytes()) / (1 << 20)},
                      {"target_mib_per_token", static_cast<double>(m.bytes_per_token()) / (1 << 20)}, {"drafts", nlohmann::json::array()}};
  for (int64_t k = 1; k <= kmax; ++k) {
    const bench::Stats dr = bench::stats_of(draft_ms[static_cast<size_t>(k - 1)]), ve = bench::stats_of(verify_ms[static_cast<size_t>(k - 1)]);
    const double cost = dr.median_ms + ve.median_ms;
    j["drafts"].push_back({{"k", k}, {"draft_ms", dr.median_ms}, {"draft_ms_min", dr.min_ms}, {"draft_ms_max", dr.max_ms},
                           {"verify_ms", ve.median_ms}, {"verify_ms_min", ve.min_ms}, {"verify_ms_max", ve.max_ms},
                           {"break_even_accepted", cost / p.median_ms - 1.0},
                           {"speedup_all_accepted", static_cast<double>(k + 1) * p.median_ms / cost}});
  }
  return j;
}

}  // namespace nvfp4::cli
