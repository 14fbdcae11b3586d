// The Gated DeltaNet token mixer (src/kernels/gated_delta.h) against transformers' own functions
// on random inputs (fixtures/gated_delta/cases.json, tools/gen_gated_delta_fixture.py): its
// token-by-token form (what transformers decodes with) and its chunked form (what it runs prompts
// with). Then what a sequence's recurrent state must allow: a snapshot taken after any token and
// restored gives the same bits as running on, and the conv window is exactly the last inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>
#include <cstring>
#include <random>

#include "nvfp4/error.h"
#include "kernels/gated_delta.h"
#include "kernels/packed.h"
#include "nvfp4/kernels.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

struct Case {
  GatedDeltaShape s;
  int64_t T = 0;
  float eps = 0;
  std::vector<float> conv_w, A_log, dt_bias, norm_w, qkv, z, a, b;
  std::vector<float> y_rec, y_chunk, state_rec, state_chunk, conv_state;
  GatedDeltaWeights weights() const { return {conv_w.data(), A_log.data(), dt_bias.data(), norm_w.data(), eps}; }
};

std::vector<Case> load() {
  std::ifstream f(test::fixture_path("gated_delta/cases.json"));
  EXPECT_TRUE(f.good()) << "missing fixtures/gated_delta/cases.json";
  const auto j = nlohmann::json::parse(f);
  std::vector<Case> out;
  for (const auto& c : j["cases"]) {
    Case k;
    k.s = {c["n_k_heads"], c["n_v_heads"], c["d_k"], c["d_v"], c["conv_kernel"]};
    k.T = c["tokens"];
    k.eps = c["eps"];
    for (auto [field, v] : {std::pair<const char*, std::vector<float>*>{"conv_w", &k.conv_w}, {"A_log", &k.A_log},
                            {"dt_bias", &k.dt_bias}, {"norm_w", &k.norm_w}, {"qkv", &k.qkv}, {"z", &k.z}, {"a", &k.a},
                            {"b", &k.b}, {"y_recurrent", &k.y_rec}, {"y_chunked", &k.y_chunk},
                            {"state_recurrent", &k.state_rec}, {"state_chunked", &k.state_chunk},
                            {"conv_state", &k.conv_state}})
      *v = c[field].get<std::vector<float>>();
    out.push_back(std::move(k));
  }
  return out;
}

struct State {
  std::vector<float> conv, ssm;
  explicit State(const GatedDeltaShape& s) : conv(s.conv_state_floats(), 0.0f), ssm(s.ssm_state_floats(), 0.0f) {}
};

// Runs tokens [t0, t1) of the case into `st`; returns their outputs [t1 - t0][value_dim].
std::vector<float> run(const Case& c, State& st, int64_t t0, int64_t t1) {
  const GatedDeltaShape& s = c.s;
  const GatedDeltaWeights w = c.weights();
  std::vector<float> y(static_cast<size_t>((t1 - t0) * s.value_dim()));
  std::vector<float> scratch(static_cast<size_t>(s.conv_dim() + s.d_v));
  for (int64_t t = t0; t < t1; ++t)
    gated_delta_token(s, w, c.qkv.data() + t * s.conv_dim(), c.z.data() + t * s.value_dim(), c.a.data() + t * s.n_v_heads,
                      c.b.data() + t * s.n_v_heads, st.conv.data(), st.ssm.data(), y.data() + (t - t0) * s.value_dim(),
                      scratch.data());
  return y;
}

// Largest |got - want| / max(1, |want|).
double worst(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double m = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    m = std::max(m, std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(static_cast<double>(want[i]))));
  return m;
}

}  // namespace

TEST(GatedDelta, MatchesTransformersTokenByTokenAndChunked) {
  const auto cases = load();
  ASSERT_EQ(cases.size(), 3u);
  for (const Case& c : cases) {
    State st(c.s);
    const auto y = run(c, st, 0, c.T);
    // The float32 reference and ours differ in summation order and in where they round (our
    // norms and gates are computed in double): a few float ulps per step, compounded over T.
    EXPECT_LT(worst(y, c.y_rec), 5e-5) << "recurrent, d_k " << c.s.d_k;
    EXPECT_LT(worst(y, c.y_chunk), 5e-5) << "chunked, d_k " << c.s.d_k;
    EXPECT_LT(worst(st.ssm, c.state_rec), 5e-5);
    EXPECT_LT(worst(st.ssm, c.state_chunk), 5e-5);
    EXPECT_EQ(st.conv, c.conv_state);  // the window holds the last kernel - 1 inputs, exactly
  }
}

TEST(GatedDelta, ASnapshotAfterAnyTokenResumesToTheSameBits) {
  for (const Case& c : load()) {
    State whole(c.s);
    const auto all = run(c, whole, 0, c.T);
    for (int64_t cut = 0; cut <= c.T; ++cut) {
      State st(c.s);
      const auto head = run(c, st, 0, cut);
      const State snap = st;  // what a verify step keeps to roll back to
      const auto tail = run(c, st, cut, c.T);
      std::vector<float> joined = head;
      joined.insert(joined.end(), tail.begin(), tail.end());
      EXPECT_EQ(joined, all) << "cut at " << cut;
      EXPECT_EQ(st.ssm, whole.ssm);
      State back = snap;  // restored: the rejected tokens leave no trace
      EXPECT_EQ(run(c, back, cut, c.T), tail);
    }
  }
}

TEST(GatedDelta, ShapesItCannotRunAreRefusedByField) {
  auto msg = [](GatedDeltaShape s) {
    try {
      s.check("blk.0 (config.json)");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(msg({2, 4, 16, 16, 4}), "");
  EXPECT_NE(msg({2, 3, 16, 16, 4}).find("linear_num_value_heads"), std::string::npos);
  EXPECT_NE(msg({0, 4, 16, 16, 4}).find("linear_num_key_heads"), std::string::npos);
  EXPECT_NE(msg({2, 4, 0, 16, 4}).find("linear_key_head_dim"), std::string::npos);
  EXPECT_NE(msg({2, 4, 16, 0, 4}).find("linear_value_head_dim"), std::string::npos);
  EXPECT_NE(msg({2, 4, 16, 16, 1}).find("linear_conv_kernel_dim"), std::string::npos);
  EXPECT_NE(msg({2, 4, 16, 16, 1}).find("blk.0 (config.json)"), std::string::npos);
}

// The delta rule's vector forms (gated_delta_avx2.cpp, gated_delta_avx512.cpp) against the scalar
// one, with ==, on every ISA this machine runs, at Qwen3.6's head size and at odd ones.
TEST(GatedDelta, EveryIsaGivesTheScalarBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.7f);
  for (const auto& [dk, dv] : std::vector<std::pair<int64_t, int64_t>>{{128, 128}, {16, 16}, {20, 37}, {3, 5}, {128, 136}, {7, 64}, {9, 200}, {5, 8}, {4, 24}}) {
    std::vector<float> S0(static_cast<size_t>(dk * dv)), k(static_cast<size_t>(dk)), q(k.size()), v(static_cast<size_t>(dv));
    for (auto* vec : {&S0, &k, &q, &v})
      for (float& x : *vec) x = nd(rng);
    std::vector<float> S_ref = S0, mem(v.size()), o_ref(v.size());
    kern::table(Isa::scalar).delta_head(S_ref.data(), k.data(), q.data(), v.data(), 0.93f, 0.61f, mem.data(), o_ref.data(), dk, dv, nullptr);
    for (Isa isa : compiled_isas()) {
      if (!isa_supported(isa)) continue;
      SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(dk) + "x" + std::to_string(dv));
      std::vector<float> S = S0, o(v.size()), next(S0.size(), 1.0f);
      kern::table(isa).delta_head(S.data(), k.data(), q.data(), v.data(), 0.93f, 0.61f, mem.data(), o.data(), dk, dv, next.data());
      EXPECT_EQ(std::memcmp(S.data(), S_ref.data(), S.size() * 4), 0);
      EXPECT_EQ(std::memcmp(o.data(), o_ref.data(), o.size() * 4), 0);
    }
  }
}
