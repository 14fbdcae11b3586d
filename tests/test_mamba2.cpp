// The Mamba-2 token mixer (kernels/mamba2.h): its groups share nothing (any order gives the whole
// token's bits), the conv window slides, dt's limits clamp, and bad shapes are refused naming
// the config field. Its agreement with transformers is tests/test_nemotron_fixtures.cpp's.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/mamba2.h"
#include "kernels/mamba2_scan.h"
#include "nvfp4/kernels.h"
#include "nvfp4/error.h"

namespace nvfp4 {
namespace {

struct Layer {
  Mamba2Shape s{8, 4, 6, 2, 4};
  std::vector<float> conv_w, conv_b, A_log, dt_bias, D, norm;
  explicit Layer(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.5f);
    const auto fill = [&](std::vector<float>& v, size_t n, float base) {
      v.resize(n);
      for (float& x : v) x = base + nd(rng);
    };
    fill(conv_w, static_cast<size_t>(s.conv_dim() * s.conv_kernel), 0.0f);
    fill(conv_b, static_cast<size_t>(s.conv_dim()), 0.0f);
    fill(A_log, static_cast<size_t>(s.n_heads), 0.5f);
    fill(dt_bias, static_cast<size_t>(s.n_heads), 0.0f);
    fill(D, static_cast<size_t>(s.n_heads), 1.0f);
    fill(norm, static_cast<size_t>(s.inner()), 1.0f);
  }
  Mamba2Weights w(double dt_min = 0.0, double dt_max = 0.0) const {
    return {conv_w.data(), conv_b.data(), A_log.data(), dt_bias.data(), D.data(), norm.data(), 1e-5f, dt_min, dt_max};
  }
};

std::vector<float> tokens(const Mamba2Shape& s, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n * s.in_proj_rows()));
  for (float& x : v) x = nd(rng);
  return v;
}

// y of every token, the state after them; groups run in `order`.
std::vector<float> run(const Layer& st, const Mamba2Weights& w, const std::vector<float>& in, int n, const std::vector<int64_t>& order,
                       std::vector<float>& state) {
  const Mamba2Shape& s = st.s;
  state.assign(s.conv_state_floats() + s.ssm_state_floats(), 0.0f);
  std::vector<float> y(static_cast<size_t>(n * s.inner())), scratch(static_cast<size_t>(mamba2_scratch_floats(s)));
  for (int t = 0; t < n; ++t)
    for (const int64_t g : order)
      mamba2_group(s, w, g, in.data() + t * s.in_proj_rows(), state.data(), state.data() + s.conv_state_floats(),
                   y.data() + t * s.inner(), scratch.data());
  return y;
}

TEST(Mamba2, GroupsInAnyOrderGiveTheTokensBits) {
  const Layer st(1);
  const auto in = tokens(st.s, 12, 2);
  std::vector<float> s1, s2, s3(st.s.conv_state_floats() + st.s.ssm_state_floats(), 0.0f);
  const auto a = run(st, st.w(), in, 12, {0, 1}, s1);
  const auto b = run(st, st.w(), in, 12, {1, 0}, s2);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  ASSERT_EQ(std::memcmp(s1.data(), s2.data(), s1.size() * 4), 0);
  std::vector<float> y(static_cast<size_t>(st.s.inner())), scratch(static_cast<size_t>(mamba2_scratch_floats(st.s)));
  for (int t = 0; t < 12; ++t) {
    mamba2_token(st.s, st.w(), in.data() + t * st.s.in_proj_rows(), s3.data(), s3.data() + st.s.conv_state_floats(), y.data(), scratch.data());
    ASSERT_EQ(std::memcmp(y.data(), a.data() + t * st.s.inner(), y.size() * 4), 0) << "token " << t;
  }
  // The conv window holds the last kernel - 1 inputs of each channel, oldest first.
  for (int64_t c = 0; c < st.s.conv_dim(); ++c)
    for (int64_t k = 0; k < st.s.conv_kernel - 1; ++k)
      EXPECT_EQ(s1[static_cast<size_t>(c * (st.s.conv_kernel - 1) + k)],
                in[static_cast<size_t>((12 - (st.s.conv_kernel - 1) + k) * st.s.in_proj_rows() + st.s.inner() + c)]);
}

TEST(Mamba2, EveryIsaGivesTheScalarBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto& [ds, hd] : {std::pair<int64_t, int64_t>{16, 64}, {128, 64}, {7, 13}, {16, 1}, {5, 200}, {9, 136}, {3, 24}, {4, 8}}) {
    std::vector<float> S0(static_cast<size_t>(ds * hd)), x(static_cast<size_t>(hd)), B(static_cast<size_t>(ds)), C(static_cast<size_t>(ds));
    for (auto* v : {&S0, &x, &B, &C})
      for (float& f : *v) f = nd(rng);
    std::vector<float> S_ref = S0, y_ref(static_cast<size_t>(hd)), xdt(static_cast<size_t>(hd));
    kern::mamba2_scan_scalar(S_ref.data(), x.data(), B.data(), C.data(), 0.37f, 0.81f, 1.3f, xdt.data(), y_ref.data(), ds, hd, nullptr);
    int tried = 0;
    for (Isa isa : compiled_isas()) {
      if (!isa_supported(isa)) continue;
      SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::to_string(ds) + "x" + std::to_string(hd));
      std::vector<float> S = S0, y(static_cast<size_t>(hd));
      kern::mamba2_scan(isa)(S.data(), x.data(), B.data(), C.data(), 0.37f, 0.81f, 1.3f, xdt.data(), y.data(), ds, hd, S_ref.data());
      EXPECT_EQ(std::memcmp(S.data(), S_ref.data(), S.size() * 4), 0);
      EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * 4), 0);
      ++tried;
    }
    EXPECT_GE(tried, 1);
  }
  // The whole mixer under each ISA the machine has: the scalar form's bits.
  const Layer st(9);
  const auto in = tokens(st.s, 10, 10);
  std::vector<float> s_ref, s;
  force_isa(Isa::scalar);
  const auto ref = run(st, st.w(), in, 10, {0, 1}, s_ref);
  for (Isa isa : compiled_isas()) {
    if (!isa_supported(isa)) continue;
    force_isa(isa);
    const auto got = run(st, st.w(), in, 10, {0, 1}, s);
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * 4), 0) << isa_name(isa);
    EXPECT_EQ(std::memcmp(s.data(), s_ref.data(), s.size() * 4), 0) << isa_name(isa);
  }
  clear_forced_isa();
}

TEST(Mamba2, DtLimitsClamp) {
  const Layer st(3);
  const auto in = tokens(st.s, 6, 4);
  std::vector<float> s0, s1, s2;
  const auto free = run(st, st.w(), in, 6, {0, 1}, s0);
  const auto same = run(st, st.w(0.0, 1e9), in, 6, {0, 1}, s1);  // a limit no dt reaches: the same bits
  EXPECT_EQ(std::memcmp(free.data(), same.data(), free.size() * 4), 0);
  const auto tight = run(st, st.w(0.0, 1e-3), in, 6, {0, 1}, s2);  // every dt clamped: other outputs
  EXPECT_NE(std::memcmp(free.data(), tight.data(), free.size() * 4), 0);
}

TEST(Mamba2, BadShapesAreRefusedNamingTheField) {
  const auto why = [](Mamba2Shape s) {
    try {
      s.check("config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(why({8, 4, 6, 2, 4}), "");
  EXPECT_NE(why({6, 4, 6, 4, 4}).find("mamba_num_heads"), std::string::npos);
  EXPECT_NE(why({8, 4, 6, 2, 1}).find("conv_kernel"), std::string::npos);
  EXPECT_NE(why({8, 4, 0, 2, 4}).find("ssm_state_size"), std::string::npos);
  EXPECT_NE(why({8, 0, 6, 2, 4}).find("mamba_head_dim"), std::string::npos);
  EXPECT_NE(why({8, 4, 6, 0, 4}).find("n_groups"), std::string::npos);
}

}  // namespace
}  // namespace nvfp4
