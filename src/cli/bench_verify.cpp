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

namespace {

int32_t bench_token(int64_t nv, int64_t i) { return static_cast<int32_t>(100 + (i * 7919) % (nv - 200)); }

// A drafter's costs against plain decoding, timed the one way for every drafter: a plain sequence
// and a speculative one, both after the same prompt (in 64-token steps; the speculative one's
// through prefill_spec(step, first position), which runs the target and hands the drafter what it
// needs); then per repeat `steps` plain steps, and for each draft length k `steps` rounds of
// propose(history, k) (the draft) and verify(step, p0) (the target's step of the k + 1 tokens
// and the drafter's update from it; it returns the ms of that update, "observe"), every draft
// rejected and rolled back, so each round keeps one token as a plain step does.
struct DraftRounds {
  std::vector<double> plain_ms;
  std::vector<std::vector<double>> draft_ms, verify_ms, observe_ms;  // per k, per repeat
};

template <class PrefillSpec, class Propose, class Verify>
DraftRounds time_drafts(const Model& m, Sequence& plain, Sequence& spec, Workspace& ws, ThreadPool& pool, int64_t prompt,
                        const std::vector<int64_t>& ks, int steps, int reps, PrefillSpec prefill_spec, Propose propose,
                        Verify verify) {
  const int64_t nv = m.config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(nv));
  std::vector<StepToken> step;
  std::vector<int32_t> history;
  for (int64_t i = 0; i < prompt; ++i) history.push_back(bench_token(nv, i));
  for (Sequence* seq : {&plain, &spec})
    for (int64_t s = 0; s < prompt; s += 64) {
      step.clear();
      for (int64_t i = s; i < std::min(prompt, s + 64); ++i) step.push_back({history[static_cast<size_t>(i)], seq, i, i + 1 == prompt});
      if (seq == &spec) prefill_spec(step, s);
      else forward(m, step, ws, pool, logits.data());
    }
  DraftRounds d;
  d.draft_ms.resize(ks.size());
  d.verify_ms.resize(ks.size());
  d.observe_ms.resize(ks.size());
  for (int r = 0; r < reps; ++r) {
    double t0 = bench::now_ms();
    for (int s = 0; s < steps; ++s) {
      step.assign(1, {bench_token(nv, plain.pos()), &plain, plain.pos(), true});
      forward(m, step, ws, pool, logits.data());
    }
    d.plain_ms.push_back((bench::now_ms() - t0) / steps);
    for (size_t ki = 0; ki < ks.size(); ++ki) {
      double dr = 0, ve = 0, ob = 0;
      for (int s = 0; s < steps; ++s) {
        const int64_t p0 = spec.pos();
        history.resize(static_cast<size_t>(p0));
        history.push_back(bench_token(nv, p0));
        t0 = bench::now_ms();
        const std::vector<int32_t> draft = propose(history, static_cast<int>(ks[ki]));
        const double t1 = bench::now_ms();
        begin_verify(spec, draft.size());
        step.clear();
        step.push_back({history.back(), &spec, p0, true});
        for (size_t i = 0; i < draft.size(); ++i) step.push_back({draft[i], &spec, p0 + 1 + static_cast<int64_t>(i), true});
        ob += verify(step, p0);
        const double t2 = bench::now_ms();
        end_verify(spec, p0, 0);  // every draft rejected: one token a step, as the plain steps
        dr += t1 - t0;
        ve += t2 - t1;
      }
      d.draft_ms[ki].push_back(dr / steps);
      d.verify_ms[ki].push_back(ve / steps);
      d.observe_ms[ki].push_back(ob / steps);
    }
  }
  return d;
}

// The JSON both drafters report: the plain step, then per k the draft and verify steps' medians
// and spreads, the accepted drafts a step needs to pay, and the speed-up were all accepted.
nlohmann::json drafts_json(const std::vector<int64_t>& ks, const DraftRounds& d, int64_t prompt, int steps, int reps, bool observe) {
  const bench::Stats p = bench::stats_of(d.plain_ms);
  nlohmann::json j = {{"steps", steps}, {"reps", reps}, {"prompt", prompt}, {"plain_ms", p.median_ms},
                      {"plain_ms_min", p.min_ms}, {"plain_ms_max", p.max_ms}, {"drafts", nlohmann::json::array()}};
  for (size_t ki = 0; ki < ks.size(); ++ki) {
    const bench::Stats dr = bench::stats_of(d.draft_ms[ki]), ve = bench::stats_of(d.verify_ms[ki]);
    const double cost = dr.median_ms + ve.median_ms;
    nlohmann::json e = {{"k", ks[ki]}, {"draft_ms", dr.median_ms}, {"draft_ms_min", dr.min_ms}, {"draft_ms_max", dr.max_ms},
                        {"verify_ms", ve.median_ms}, {"verify_ms_min", ve.min_ms}, {"verify_ms_max", ve.max_ms},
                        {"break_even_accepted", cost / p.median_ms - 1.0},
                        {"speedup_all_accepted", static_cast<double>(ks[ki] + 1) * p.median_ms / cost}};
    if (observe) e["observe_ms"] = bench::stats_of(d.observe_ms[ki]).median_ms;
    j["drafts"].push_back(e);
  }
  return j;
}

}  // namespace

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
  std::vector<float> logits(static_cast<size_t>(nv) * static_cast<size_t>(std::max<int64_t>(64, B)));
  std::vector<float> taps(static_cast<size_t>(std::max<int64_t>(64, B)) * nt * static_cast<size_t>(dim));
  const auto tapped = [&](const std::vector<StepToken>& step) {
    forward(m, step, ws, pool, logits.data(), nullptr, LayerTaps{d.taps(), taps.data()});
  };
  const DraftRounds r = time_drafts(
      m, plain, spec, ws, pool, prompt, ks, steps, reps,
      [&](const std::vector<StepToken>& step, int64_t p0) {
        tapped(step);
        prop.observe(p0, taps.data(), static_cast<int64_t>(step.size()), pool);
      },
      [&](const std::vector<int32_t>& history, int k) { return prop.propose(history, k, pool); },
      [&](const std::vector<StepToken>& step, int64_t p0) {
        tapped(step);
        const double t0 = bench::now_ms();
        prop.observe(p0, taps.data(), static_cast<int64_t>(step.size()), pool);
        return bench::now_ms() - t0;
      });
  nlohmann::json j = drafts_json(ks, r, prompt, steps, reps, true);
  j["block_size"] = B;
  j["drafter_mib"] = static_cast<double>(d.weight_bytes()) / (1 << 20);
  j["target_mib_per_token"] = static_cast<double>(m.bytes_per_token()) / (1 << 20);
  return j;
}

nlohmann::json assistant_cost(const Model& m, const Gemma4Assistant& a, KvType kv, int threads, int64_t prompt, int steps, int reps) {
  ThreadPool pool(threads);
  const int64_t nv = m.config().n_vocab, dim = m.config().n_embd, kmax = 4;
  const std::vector<int64_t> ks = {1, 2, 3, 4};
  const int64_t n_ctx = prompt + static_cast<int64_t>(steps) * reps * (kmax + 1) + kmax + 2;
  Sequence plain(m, n_ctx, kv), spec(m, n_ctx, kv);
  Workspace ws(m, 64);
  AssistantProposer prop(a);
  std::vector<float> logits(static_cast<size_t>(nv) * 64), hidden(static_cast<size_t>(64 * dim));
  const auto target = [&](const std::vector<StepToken>& step, int64_t p0) {
    forward(m, step, ws, pool, logits.data(), hidden.data());
    prop.observe(p0, hidden.data(), static_cast<int64_t>(step.size()));
    return 0.0;  // the hand-over is part of the verify step
  };
  const DraftRounds r = time_drafts(
      m, plain, spec, ws, pool, prompt, ks, steps, reps, target,
      [&](const std::vector<int32_t>& history, int k) { return prop.propose(history, k, spec, pool); }, target);
  nlohmann::json j = drafts_json(ks, r, prompt, steps, reps, false);
  j["assistant_mib"] = static_cast<double>(a.weight_bytes()) / (1 << 20);
  j["target_mib_per_token"] = static_cast<double>(m.bytes_per_token()) / (1 << 20);
  return j;
}

}  // namespace nvfp4::cli
