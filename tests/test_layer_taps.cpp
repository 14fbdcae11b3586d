// Layer taps (forward(..., LayerTaps)): the residual stream between the layers, as transformers'
// output_hidden_states gives it (fixtures/taps, tools/gen_layer_taps.py), on three families whose
// steps differ (Muse Glimmer's sliding and NoPE layers, Gemma 4 E2B's KV sharing and per-layer
// embeddings, Nemotron-H's Mamba-2 / attention / MLP / MoE layers); the same bits however a
// prompt is stepped (Gemma 4's waves included) in the integer-exact modes.
#include <fstream>

#include "arch_fixtures.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

struct TapsRef {
  nlohmann::json j;
  std::vector<float> f32;
  explicit TapsRef(const std::string& name) {
    const std::string dir = fixture_path("taps");
    std::ifstream f(dir + "/" + name + ".json");
    if (!f) throw std::runtime_error("missing " + dir + "/" + name + ".json (tools/gen_layer_taps.py)");
    j = nlohmann::json::parse(f);
    std::ifstream b(dir + "/" + j["file"].get<std::string>(), std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    f32.resize(raw.size() / 4);
    std::memcpy(f32.data(), raw.data(), f32.size() * 4);
  }
};

// Every tap 0 .. n_layer of `ids` in one step: out[n][n_layer + 1][d].
std::vector<float> all_taps(const Model& m, const std::vector<int32_t>& ids, ThreadPool& pool) {
  const int64_t L = m.config().n_layer, d = m.config().n_embd, n = static_cast<int64_t>(ids.size());
  std::vector<int> layers;
  for (int l = 0; l <= L; ++l) layers.push_back(l);
  std::vector<float> out(static_cast<size_t>(n * (L + 1) * d));
  Sequence seq(m, 256);
  Workspace ws(m, 256);
  std::vector<StepToken> step;
  for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, false});
  forward(m, step, ws, pool, nullptr, nullptr, LayerTaps{layers, out.data()});
  return out;
}

class LayerTapsF32 : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerTapsF32, MatchTransformersHiddenStates) {
  const TapsRef ref(GetParam());
  auto ck = Checkpoint::open(fixture_path("..") + "/" + ref.j["model"].get<std::string>());
  auto m = load_in(*ck, Mode::f32);
  ThreadPool pool(2);
  const int64_t L = ref.j["n_layer"].get<int64_t>(), d = ref.j["n_embd"].get<int64_t>();
  ASSERT_EQ(m->config().n_layer, L);
  ASSERT_EQ(m->config().n_embd, d);
  std::vector<double> worst(static_cast<size_t>(L + 1), 0.0), scale(static_cast<size_t>(L + 1), 0.0);
  for (const auto& p : ref.j["prompts"]) {
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const int64_t n = static_cast<int64_t>(ids.size());
    const std::vector<float> got = all_taps(*m, ids, pool);
    const float* want = ref.f32.data() + p["offset"].get<size_t>();  // [L + 1][n][d]
    for (int64_t l = 0; l <= L; ++l)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < d; ++i) {
          const double w = want[(l * n + t) * d + i], g = got[static_cast<size_t>((t * (L + 1) + l) * d + i)];
          worst[static_cast<size_t>(l)] = std::max(worst[static_cast<size_t>(l)], std::fabs(g - w));
          scale[static_cast<size_t>(l)] = std::max(scale[static_cast<size_t>(l)], std::fabs(w));
        }
  }
  for (int64_t l = 0; l <= L; ++l) {
    std::printf("%s tap %lld: max |diff| %.3g (|h| <= %.3g)\n", GetParam().c_str(), static_cast<long long>(l), worst[static_cast<size_t>(l)],
                scale[static_cast<size_t>(l)]);
    EXPECT_LE(worst[static_cast<size_t>(l)], 5e-5 * std::max(1.0, scale[static_cast<size_t>(l)])) << "tap " << l;
    EXPECT_GT(scale[static_cast<size_t>(l)], 0.1);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LayerTapsF32, ::testing::Values("muse_glimmer", "gemma4_e2b", "nemotron_h"),
                         [](const auto& i) { return i.param; });

// Taps in any order, any subset: each where `layers` puts it; one out of range refused by name.
TEST(LayerTaps, ChosenLayersInTheirOrder) {
  auto ck = Checkpoint::open(fixture_path("muse_glimmer") + "/float");
  auto m = load_in(*ck, Mode::f32);
  ThreadPool pool(1);
  const std::vector<int32_t> ids = {5, 17, 99, 4, 250, 31};
  const int64_t L = m->config().n_layer, d = m->config().n_embd, n = 6;
  const std::vector<float> all = all_taps(*m, ids, pool);
  const std::vector<int> pick = {static_cast<int>(L), 1, 4};
  std::vector<float> out(static_cast<size_t>(n * 3 * d));
  Sequence seq(*m, 64);
  Workspace ws(*m, 64);
  std::vector<StepToken> step;
  for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, false});
  forward(*m, step, ws, pool, nullptr, nullptr, LayerTaps{pick, out.data()});
  for (int64_t t = 0; t < n; ++t)
    for (size_t k = 0; k < pick.size(); ++k)
      EXPECT_EQ(0, std::memcmp(out.data() + (t * 3 + static_cast<int64_t>(k)) * d, all.data() + (t * (L + 1) + pick[k]) * d, static_cast<size_t>(d) * 4));
  const std::vector<int> bad = {static_cast<int>(L) + 1};
  Sequence s2(*m, 64);
  for (auto& st : step) st.seq = &s2;
  try {
    forward(*m, step, ws, pool, nullptr, nullptr, LayerTaps{bad, out.data()});
    FAIL() << "a tap past the last layer was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LayerTaps"), std::string::npos) << e.what();
  }
}

// a16q8: a prompt's taps are the same bits in one step (Gemma 4 E2B steps 80 tokens in waves) as
// in chunks of 7 or token by token, at one and two threads.
TEST(LayerTaps, SameBitsHoweverAPromptIsStepped) {
  auto ck = Checkpoint::open(fixture_path("gemma4-e2b") + "/float");
  LoadOptions lo;
  lo.mode = Mode::a16q8;
  lo.quantize = true;
  auto m = Model::load(*ck, lo);
  const int64_t L = m->config().n_layer, d = m->config().n_embd, n = 80;
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < n; ++t) ids.push_back(static_cast<int32_t>((t * 37 + 11) % 500));
  std::vector<int> layers;
  for (int l = 0; l <= L; ++l) layers.push_back(l);
  const auto run = [&](int64_t chunk, int threads) {
    ThreadPool pool(threads);
    Sequence seq(*m, 128);
    Workspace ws(*m, 128);
    std::vector<float> out(static_cast<size_t>(n * (L + 1) * d));
    for (int64_t t0 = 0; t0 < n; t0 += chunk) {
      std::vector<StepToken> step;
      for (int64_t t = t0; t < std::min(n, t0 + chunk); ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, false});
      forward(*m, step, ws, pool, nullptr, nullptr, LayerTaps{layers, out.data() + t0 * (L + 1) * d});
    }
    return out;
  };
  const std::vector<float> one = run(n, 2);
  EXPECT_EQ(run(7, 1), one);
  EXPECT_EQ(run(1, 2), one);
}

}  // namespace
