// Stepping a MoE model's three test sequences under several step compositions (tests/test_moe.cpp,
// tests/test_expert_store.cpp): every position's logits, the schedules, and the tiny models of each
// routed family (tests/moe_tiny.h).
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moe_tiny.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "models/builders.h"

namespace nvfp4::test::moe_steps {

// The tiny MoE t written to path and opened.
inline std::unique_ptr<Checkpoint> tiny_checkpoint(const std::string& path, const TinyMoe& t) {
  write_tiny_moe(path, t);
  return Checkpoint::open(path);
}

using Prompts = std::vector<std::vector<int32_t>>;
inline const Prompts kPrompts = {{5, 17, 3, 88, 41}, {9, 9, 60, 2, 71, 33, 12, 95, 4}, {44, 1, 70}};

// Logits of every position of the three sequences, stepped as `schedule` says: each step a list
// of (sequence, token count).
using Schedule = std::vector<std::vector<std::pair<int, int64_t>>>;
inline std::vector<std::vector<float>> run(const Model& m, const Schedule& sched, int threads, const Prompts& prompts = kPrompts) {
  ThreadPool pool(threads);
  const int64_t nv = m.config().n_vocab;
  std::vector<Sequence> seqs;
  for (size_t s = 0; s < prompts.size(); ++s) seqs.emplace_back(m, 96);
  Workspace ws(m, 96);
  std::vector<std::vector<float>> out(prompts.size());
  for (size_t s = 0; s < prompts.size(); ++s) out[s].resize(prompts[s].size() * static_cast<size_t>(nv));
  for (const auto& step : sched) {
    std::vector<StepToken> toks;
    std::vector<std::pair<int, int64_t>> where;  // (sequence, position) of each logits row
    for (const auto& [s, cnt] : step) {
      Sequence& q = seqs[static_cast<size_t>(s)];
      const int64_t p0 = q.pos();
      for (const StepToken& t : toks)
        if (t.seq == &q) throw std::runtime_error("schedule puts a sequence twice in a step");
      for (int64_t i = 0; i < cnt; ++i) {
        toks.push_back(StepToken{prompts[static_cast<size_t>(s)][static_cast<size_t>(p0 + i)], &q, p0 + i, true});
        where.emplace_back(s, p0 + i);
      }
    }
    std::vector<float> logits(toks.size() * static_cast<size_t>(nv));
    forward(m, toks, ws, pool, logits.data());
    for (size_t r = 0; r < where.size(); ++r)
      std::copy_n(logits.data() + r * static_cast<size_t>(nv), nv,
                  out[static_cast<size_t>(where[r].first)].data() + where[r].second * nv);
  }
  return out;
}

inline Schedule one_at_a_time(const Prompts& p = kPrompts) {
  Schedule s;
  for (size_t q = 0; q < p.size(); ++q)
    for (size_t i = 0; i < p[q].size(); ++i) s.push_back({{static_cast<int>(q), 1}});
  return s;
}
inline Schedule all_in_one() { return {{{0, 5}, {1, 9}, {2, 3}}}; }
inline Schedule mixed() { return {{{1, 4}, {0, 1}}, {{2, 3}, {0, 4}, {1, 1}}, {{1, 4}}}; }

struct Arch {
  const char* name;
  test::TinyMoe t;
};

inline std::vector<Arch> arches() {
  std::vector<Arch> a;
  a.push_back({"qwen3moe", {}});
  test::TinyMoe q2;
  q2.arch = "qwen2moe";
  q2.n_ff_shexp = 128;
  a.push_back({"qwen2moe", q2});
  test::TinyMoe ol;
  ol.arch = "olmoe";
  ol.n_used = 3;
  a.push_back({"olmoe", ol});
  test::TinyMoe mx;
  mx.arch = "llama";
  a.push_back({"mixtral", mx});
  return a;
}

}  // namespace nvfp4::test::moe_steps
