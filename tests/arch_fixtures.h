// Shared by tests/test_arch_fixtures*.cpp: the oracles of fixtures/arch/<arch>/ (written by
// tools/gen_arch_fixtures.py) and small helpers to run a checkpoint on a prompt.
#pragma once
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "test_util.h"

namespace nvfp4::test {

// fixtures/arch, or $NVFP4_ARCH_FIXTURES (a regenerated tree).
inline std::string arch_root() {
  if (const char* p = std::getenv("NVFP4_ARCH_FIXTURES")) return p;
  return fixture_path("arch");
}

// The producer forms every fixture architecture has (tools/gen_arch_fixtures.py,
// tools/gen_moe_fixtures.py), with what Checkpoint::open must recognise in each.
struct FormInfo {
  const char* form;
  const char* producer;
  const char* algorithm;
  bool w4a4;
};
inline constexpr FormInfo kForms[] = {
    {"float", "float", "float", false},
    {"modelopt-nvfp4", "modelopt", "NVFP4", true},
    {"modelopt-w4a16", "modelopt", "W4A16_NVFP4", false},
    {"ct-nvfp4", "compressed-tensors", "nvfp4-pack-quantized", true},
    {"ct-nvfp4a16", "compressed-tensors", "nvfp4-pack-quantized", false},
};

// logits.json + logits.f32 of one architecture.
struct ArchOracle {
  nlohmann::json j;
  std::vector<float> f32;
  int64_t nv = 0;

  explicit ArchOracle(const std::string& arch, const std::string& root = arch_root()) {
    const std::string dir = root + "/" + arch;
    std::ifstream f(dir + "/logits.json");
    if (!f) throw std::runtime_error("missing " + dir + "/logits.json");
    j = nlohmann::json::parse(f);
    nv = j["n_vocab"].get<int64_t>();
    std::ifstream b(dir + "/" + j["logits_file"].get<std::string>(), std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    f32.resize(raw.size() / 4);
    std::copy(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(f32.size() * 4), reinterpret_cast<char*>(f32.data()));
    size_t want = 0;
    for (const auto& p : j["prompts"]) want += p["ids"].size() * j["sets"].size() * static_cast<size_t>(nv);
    if (raw.size() != want * 4) throw std::runtime_error(dir + ": logits.f32 holds " + std::to_string(raw.size()) + " bytes, logits.json says " + std::to_string(want * 4));
  }
  size_t prompts() const { return j["prompts"].size(); }
  std::vector<int32_t> ids(size_t p) const { return j["prompts"][p]["ids"].get<std::vector<int32_t>>(); }
  std::vector<int32_t> greedy(size_t p) const { return j["prompts"][p]["greedy"].get<std::vector<int32_t>>(); }
  // [n_pos][n_vocab] of `set` ("float", "modelopt_w4a16", ...) for prompt p.
  const float* logits(size_t p, const std::string& set) const {
    const auto& sets = j["sets"];
    size_t k = 0;
    while (k < sets.size() && sets[k].get<std::string>() != set) ++k;
    if (k == sets.size()) throw std::runtime_error("no logit set " + set);
    const size_t n = ids(p).size();
    const size_t off = j["prompts"][p]["offset"].get<size_t>() + k * n * static_cast<size_t>(nv);
    if (off + n * static_cast<size_t>(nv) > f32.size()) throw std::runtime_error("logits.f32 too short");
    return f32.data() + off;
  }
};

inline std::vector<float> eval_all(const Model& m, const std::vector<int32_t>& ids, ThreadPool& pool, int64_t n_ctx = 64) {
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_batch = 7;  // several batches per prompt
  Context ctx(m, co, pool);
  std::vector<float> out(ids.size() * static_cast<size_t>(m.config().n_vocab));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
  return out;
}

inline int32_t argmax(const float* row, int64_t nv) {
  int32_t a = 0;
  for (int64_t i = 1; i < nv; ++i) if (row[i] > row[a]) a = static_cast<int32_t>(i);
  return a;
}

// n tokens by argmax after the prompt (no EOS stop), as the generator script does.
inline std::vector<int32_t> greedy(const Model& m, const std::vector<int32_t>& ids, int n, ThreadPool& pool,
                                   KvType kv = KvType::f32) {
  ContextOptions co;
  co.n_ctx = static_cast<int64_t>(ids.size()) + n;
  co.kv = kv;
  Context ctx(m, co, pool);
  const int64_t nv = m.config().n_vocab;
  std::vector<float> row(static_cast<size_t>(nv));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), row.data());
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t t = argmax(row.data(), nv);
    out.push_back(t);
    if (i + 1 < n) ctx.eval(&t, 1, row.data());
  }
  return out;
}

struct Diff {
  double max_abs = 0, max_ref = 0;
  int positions = 0, argmax_differ = 0, argmax_checked = 0;
  std::vector<double> pos_max;  // max |diff| of each position
  double first_max = 0;         // max |diff| over the first position of each prompt
  int within(double eps) const {
    int n = 0;
    for (double v : pos_max) n += v <= eps;
    return n;
  }
  double median() const {
    std::vector<double> v = pos_max;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  }
  void add(const float* got, const float* ref, size_t n_pos, int64_t nv) {
    for (size_t p = 0; p < n_pos; ++p) {
      const float* g = got + p * static_cast<size_t>(nv);
      const float* r = ref + p * static_cast<size_t>(nv);
      double pm = 0;
      for (int64_t i = 0; i < nv; ++i) {
        pm = std::max(pm, std::fabs(static_cast<double>(g[i]) - r[i]));
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(r[i])));
      }
      max_abs = std::max(max_abs, pm);
      pos_max.push_back(pm);
      if (p == 0) first_max = std::max(first_max, pm);
      // argmax compared where the reference's top two are clearly apart
      const int32_t a = argmax(r, nv);
      double second = -1e30;
      for (int64_t i = 0; i < nv; ++i) if (i != a) second = std::max(second, static_cast<double>(r[i]));
      if (r[a] - second > 1e-2) {
        ++argmax_checked;
        argmax_differ += argmax(g, nv) != a;
      }
      ++positions;
    }
  }
};

// Loads `dir` in `mode`; a runtime that does not serve the architecture yet ("unsupported
// architecture") yields nullptr and `why`; every other refusal is a failure (rethrown).
inline std::unique_ptr<Model> load_or_unsupported(const Checkpoint& ck, Mode mode, std::string& why, bool quantize = false) {
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = quantize;
  try {
    return Model::load(ck, lo);
  } catch (const Error& e) {
    const std::string w = e.what();
    if (w.find("unsupported architecture") == std::string::npos && w.find("RoPE scaling is not supported") == std::string::npos) throw;
    why = w;
    return nullptr;
  }
}

// `ck` loaded in `mode` (no other options).
inline std::unique_ptr<Model> load_in(const Checkpoint& ck, Mode mode) {
  LoadOptions lo;
  lo.mode = mode;
  return Model::load(ck, lo);
}

// Every prompt of `o` through `m` (eval_all) against the oracle's logit set `set`, into d.
inline double against(const ArchOracle& o, const Model& m, const std::string& set, ThreadPool& pool, Diff& d) {
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    const auto got = eval_all(m, ids, pool);
    d.add(got.data(), o.logits(p, set), ids.size(), o.nv);
  }
  return d.max_abs;
}

// Every prompt of `o` through `m` in steps of 7 with a context of 160 positions (Gemma 4's
// sliding ring of 71 positions wraps on the 100-token prompt), against the logit set `set`, into d.
inline void against_stepped(const ArchOracle& o, const Model& m, const std::string& set, ThreadPool& pool, Diff& d) {
  for (size_t p = 0; p < o.prompts(); ++p) {
    const auto ids = o.ids(p);
    ContextOptions co;
    co.n_ctx = 160;
    co.n_batch = 7;
    Context ctx(m, co, pool);
    std::vector<float> got(ids.size() * static_cast<size_t>(m.config().n_vocab));
    ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), got.data(), true);
    d.add(got.data(), o.logits(p, set), ids.size(), o.nv);
  }
}

// The fixture's four prompts end to end, the 100-token one first, then the 40-, 5- and 17-token
// ones: 162 tokens (a sliding ring of 71 positions wraps twice).
inline std::vector<int32_t> long_ids(const ArchOracle& o) {
  std::vector<int32_t> ids;
  for (size_t p : {3u, 2u, 0u, 1u})
    for (int32_t t : o.ids(p)) ids.push_back(t);
  return ids;
}

// Greedy tokens after the prompt compared with `want` while both are clear: the comparison ends at
// a step whose top two logits are within 1e-3 (a near tie either side may break the other way);
// returns how far it got.
inline size_t greedy_agrees(const Model& m, const std::vector<int32_t>& ids, const std::vector<int32_t>& want, ThreadPool& pool) {
  ContextOptions co;
  co.n_ctx = static_cast<int64_t>(ids.size() + want.size());
  Context ctx(m, co, pool);
  const int64_t nv = m.config().n_vocab;
  std::vector<float> row(static_cast<size_t>(nv));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), row.data());
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<float> s = row;
    std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<>());
    if (s[0] - s[1] < 1e-3f) return i;
    const int32_t t = argmax(row.data(), nv);
    EXPECT_EQ(t, want[i]) << "greedy token " << i;
    if (t != want[i]) return i;
    ctx.eval(&t, 1, row.data());
  }
  return want.size();
}

// How a check feeds each prompt: whole (eval_all) or in steps of 7 (against_stepped).
enum class Feed { whole, stepped };

// The issues' float32 check of `m` against transformers' logits (the oracle's set "float"): every
// logit within `bound`, the same argmax wherever the reference's top two are apart, logits that are
// not all near zero; then each prompt's greedy tokens compared until a near tie ends the comparison
// (greedy_agrees), at least `min_greedy` of them equal. `label` names the run in the printed line.
inline void expect_f32_matches_transformers(const ArchOracle& o, const Model& m, const std::string& label, ThreadPool& pool, Feed feed,
                                            size_t min_greedy, double bound = 5e-5) {
  Diff d;
  if (feed == Feed::stepped) {
    against_stepped(o, m, "float", pool, d);
  } else {
    against(o, m, "float", pool, d);
  }
  std::printf("%s f32 vs transformers: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n", label.c_str(), d.max_abs, d.max_ref,
              d.argmax_differ, d.argmax_checked);
  EXPECT_LE(d.max_abs, bound);
  EXPECT_EQ(d.argmax_differ, 0);
  EXPECT_GT(d.max_ref, 0.5);
  for (size_t p = 0; p < o.prompts(); ++p) {
    const size_t n = greedy_agrees(m, o.ids(p), o.greedy(p), pool);
    std::printf("  prompt %zu: greedy equal for %zu of 16 tokens (then %s)\n", p, n, n == 16 ? "done" : "a near tie");
    EXPECT_GE(n, min_greedy) << "prompt " << p;
  }
}

}  // namespace nvfp4::test
