// Shared by the fixture tests of every family (tests/test_hybrid_fixtures.cpp,
// tests/test_gemma4_fixtures.cpp, ...): the ways of stepping a prompt through forward() whose
// logits the integer-exact modes must give bit for bit: one step, token by token, chunks, beside
// other sequences interleaved in each step, and after a verify step rolled back to an accepted prefix.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/speculate.h"

namespace nvfp4::test {

// Every position's logits of `ids`, fed in steps of the given sizes (cycled), in a sequence of
// n_ctx positions (0: the prompt's length) whose attention cache holds `kv`.
inline std::vector<float> stepped(const Model& m, const std::vector<int32_t>& ids, const std::vector<int64_t>& sizes, ThreadPool& pool,
                                  int64_t n_ctx = 0, KvType kv = KvType::f32) {
  const int64_t nv = m.config().n_vocab, n = static_cast<int64_t>(ids.size());
  Sequence seq(m, n_ctx > 0 ? n_ctx : n, kv);
  Workspace ws(m, n);
  std::vector<float> out(static_cast<size_t>(n * nv));
  std::vector<StepToken> step;
  for (int64_t p = 0, k = 0; p < n; ++k) {
    const int64_t len = std::min(sizes[static_cast<size_t>(k) % sizes.size()], n - p);
    step.clear();
    for (int64_t i = 0; i < len; ++i) step.push_back({ids[static_cast<size_t>(p + i)], &seq, p + i, true});
    forward(m, step, ws, pool, out.data() + p * nv);
    p += len;
  }
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// How stepped_beside_others mixes the other two sequences in: steps of 1..max_step of a's
// tokens, b (its own tokens, every row asking for logits) up to b_stop positions, c (every other
// row asking) up to c_stop, each joining a step at random (seed).
struct Interleave {
  int64_t max_step = 9;
  int64_t b_stop = 30;
  int64_t c_stop = 12;
  uint32_t seed = 7;
};

// a's logits for every position of `ids` when each step also carries tokens of two other
// sequences; equal to stepped()'s bits in an integer-exact mode.
inline std::vector<float> stepped_beside_others(const Model& m, const std::vector<int32_t>& ids, ThreadPool& pool, const Interleave& mix = {}) {
  const int64_t nv = m.config().n_vocab, n = static_cast<int64_t>(ids.size());
  Sequence a(m, n), b(m, n), c(m, n);
  Workspace ws(m, 3 * n);
  std::mt19937 rng(mix.seed);
  std::vector<float> got(static_cast<size_t>(n * nv)), tmp;
  for (int64_t p = 0; p < n;) {
    const int64_t len = std::min<int64_t>(1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(mix.max_step)), n - p);
    std::vector<StepToken> step;
    std::vector<int64_t> where;  // step rows of a's tokens
    int64_t next_b = b.pos(), next_c = c.pos();
    for (int64_t i = 0; i < len; ++i) {
      if (next_b < mix.b_stop && rng() % 2) {
        step.push_back({ids[static_cast<size_t>(n - 1 - next_b)], &b, next_b, true});
        ++next_b;
      }
      where.push_back(static_cast<int64_t>(step.size()));
      step.push_back({ids[static_cast<size_t>(p + i)], &a, p + i, true});
      if (next_c < mix.c_stop && rng() % 2) {
        step.push_back({ids[static_cast<size_t>((7 * next_c) % n)], &c, next_c, i % 2 == 0});
        ++next_c;
      }
    }
    tmp.assign(step.size() * static_cast<size_t>(nv), 0.0f);
    forward(m, step, ws, pool, tmp.data());
    int64_t row = 0;  // logits rows come in step order for the tokens that ask
    for (size_t k = 0; k < step.size(); ++k) {
      if (!step[k].logits) continue;
      const auto w = std::find(where.begin(), where.end(), static_cast<int64_t>(k));
      if (w != where.end()) std::memcpy(got.data() + (p + (w - where.begin())) * nv, tmp.data() + row * nv, static_cast<size_t>(nv) * 4);
      ++row;
    }
    p += len;
  }
  return got;
}

// `start` tokens of `ids` fed plainly, then a verify step of the next token and 5 drafts of which
// the first `kept` are the real ones, rolled back to that prefix: plain decoding from there gives
// `ref`'s logits (stepped(ids, {1})) bit for bit at every later position.
inline void expect_rollback_leaves_plain_state(const Model& m, const std::vector<int32_t>& ids, const std::vector<float>& ref, int64_t start,
                                               size_t kept, ThreadPool& pool) {
  SCOPED_TRACE("start " + std::to_string(start) + ", kept " + std::to_string(kept));
  const int64_t nv = m.config().n_vocab, n = static_cast<int64_t>(ids.size());
  Sequence seq(m, n);
  Workspace ws(m, n);
  std::vector<float> row(static_cast<size_t>(nv) * 8);
  std::vector<StepToken> step;
  for (int64_t p = 0; p < start; ++p) step.push_back({ids[static_cast<size_t>(p)], &seq, p, false});
  forward(m, step, ws, pool, nullptr);
  const int64_t p0 = seq.pos();
  begin_verify(seq, 5);
  step.clear();
  for (int64_t i = 0; i < 6; ++i) {
    const bool real = i <= static_cast<int64_t>(kept);
    const int32_t t = ids[static_cast<size_t>(p0 + i)];
    step.push_back({real ? t : (t + 1) % static_cast<int32_t>(nv), &seq, p0 + i, true});
  }
  forward(m, step, ws, pool, row.data());
  end_verify(seq, p0, kept);
  ASSERT_EQ(seq.pos(), p0 + 1 + static_cast<int64_t>(kept));
  for (int64_t p = seq.pos(); p < n; ++p) {
    const StepToken t{ids[static_cast<size_t>(p)], &seq, p, true};
    forward(m, std::span<const StepToken>(&t, 1), ws, pool, row.data());
    ASSERT_EQ(std::memcmp(row.data(), ref.data() + p * nv, static_cast<size_t>(nv) * 4), 0) << "position " << p;
  }
}

}  // namespace nvfp4::test
