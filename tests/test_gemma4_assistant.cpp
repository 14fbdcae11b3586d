// Gemma 4's assistant drafter (issue 35; include/nvfp4/gemma4_assistant.h): two tiny random
// gemma4_assistant drafters (fixtures/gemma4_assistant: with the centroid-masked embedder and
// with the whole lm_head) for the float Gemma 4 fixture, against transformers' own assistant
// forward over chained draft steps (tools/gen_gemma4_assistant_reference.py: reference.json /
// .f32); `--spec mtp` with it giving the tokens of plain decoding; what it cannot draft for refused.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "arch_fixtures.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/generate.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string dir() { return fixture_path("gemma4_assistant"); }

// f throws nvfp4::Error whose message holds `what`.
template <class F>
void expect_error(F f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming: " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

std::unique_ptr<Model> load_target(const Checkpoint& ck, Mode mode, bool quantize = false) {
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = quantize;
  return Model::load(ck, lo);
}

TEST(Gemma4Assistant, ChainedDraftsMatchTransformers) {
  std::ifstream jf(dir() + "/reference.json");
  ASSERT_TRUE(jf);
  const nlohmann::json j = nlohmann::json::parse(jf);
  std::ifstream bf(dir() + "/reference.f32", std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  std::vector<float> ref(raw.size() / 4);
  std::memcpy(ref.data(), raw.data(), ref.size() * 4);
  ThreadPool pool(2);
  // Each assistant's target: the Gemma 4 fixture, or the unified one (Gemma 4 12B's layout).
  std::map<std::string, std::unique_ptr<Checkpoint>> cks;
  std::map<std::string, std::unique_ptr<Model>> targets;
  for (const char* t : {"gemma4", "gemma4-unified"}) {
    cks[t] = Checkpoint::open(fixture_path(std::string(t) + "/float"));
    targets[t] = load_target(*cks[t], Mode::f32);
  }
  const int64_t nv = j["n_vocab"].get<int64_t>(), d = targets["gemma4"]->config().n_embd;
  ASSERT_EQ(targets["gemma4"]->config().n_vocab, nv);
  std::map<std::string, std::unique_ptr<Gemma4Assistant>> as;
  for (const auto& [name, t] : j["targets"].items())
    as[name] = std::make_unique<Gemma4Assistant>(dir() + "/" + name, *targets[t.get<std::string>()]);
  EXPECT_NE(as["assistant"]->describe().find("(gemma4_assistant): 2 layers (1 sliding, 1 full) of 48, reading target layers 4 and 5, ordered embeddings (top 16 of 503 centroids), BF16"),
            std::string::npos)
      << as["assistant"]->describe();
  EXPECT_NE(as["assistant-unified"]->describe().find("(gemma4_unified_assistant)"), std::string::npos) << as["assistant-unified"]->describe();
  double worst = 0, first = 0, max_ref = 0;
  int cases = 0, kept_checked = 0;
  for (const auto& c : j["cases"]) {
    const std::string name = c["assistant"].get<std::string>();
    SCOPED_TRACE(name + " P=" + std::to_string(c["P"].get<int64_t>()));
    ++cases;
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const int64_t P = c["P"].get<int64_t>();
    ASSERT_EQ(static_cast<int64_t>(ids.size()), P);
    const Model& m = *targets[j["targets"][name].get<std::string>()];
    Sequence seq(m, 64);
    Workspace ws(m, 64);
    std::vector<StepToken> step;
    for (int64_t t = 0; t < P; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, t + 1 == P});
    std::vector<float> logits(static_cast<size_t>(nv)), hidden(static_cast<size_t>(P * d));
    forward(m, step, ws, pool, logits.data(), hidden.data());
    AssistantProposer p(*as[name]);
    p.observe(0, hidden.data(), P);
    std::vector<int32_t> history = ids;
    history.push_back(c["token"].get<int32_t>());
    const int steps = j["steps"].get<int>();
    const std::vector<int32_t> drafts = p.propose(history, steps, seq, pool);
    EXPECT_EQ(drafts, c["drafts"].get<std::vector<int32_t>>());
    ASSERT_EQ(p.last_logits().size(), static_cast<size_t>(steps * nv));
    for (int s = 0; s < steps; ++s) {
      const float* got = p.last_logits().data() + s * nv;
      const float* want = ref.data() + c["offsets"][static_cast<size_t>(s)].get<size_t>() / 4;
      // The masked embedder: the same tokens kept (those above transformers' fill), their logits close.
      const float fill = *std::min_element(want, want + nv);
      for (int64_t i = 0; i < nv; ++i) {
        const bool kept = want[i] > fill, ours = got[i] > *std::min_element(got, got + nv);
        if (name != "assistant-plain") {
          ASSERT_EQ(ours, kept) << "token " << i << " step " << s;
          kept_checked += kept;
        }
        if (kept || name == "assistant-plain") {
          worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
          if (s < 2) first = std::max(first, std::fabs(static_cast<double>(got[i]) - want[i]));
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
        }
      }
    }
  }
  EXPECT_EQ(cases, 12);
  EXPECT_EQ(kept_checked, 2 * 4 * 4 * 16);  // 2 ordered assistants x 4 cases x 4 steps x 16 centroids of one token
  // The first two steps within 1e-4; the chain then amplifies rounding on this random model (one
  // case's third and fourth steps: transformers' own float32 logits differ from its float64 ones
  // by 3.5e-4 and 8.2e-4 there, ours from its float32 by 3.4e-4 and 7.8e-4). The first two steps
  // measured under 5e-5 on AVX-512 and 5.29e-5 on a Zen 3 core's AVX2 float kernels (8-lane sums:
  // another rounding order, 2e-5 of max |ref| 2.8).
  EXPECT_LT(first, 1e-4) << "max |ref| " << max_ref;
  EXPECT_LT(worst, 2e-3) << "max |ref| " << max_ref;
  std::printf("  gemma4 assistant: logits max |diff| %.3g in the first two steps, %.3g in all four (max |ref| %.3g), %d cases\n",
              first, worst, max_ref, cases);
}

TEST(Gemma4Assistant, SpeculationIsPlainDecoding) {
  for (const auto& [target, name] : {std::pair<const char*, const char*>{"gemma4", "assistant"}, {"gemma4", "assistant-plain"},
                                     {"gemma4-unified", "assistant-unified"}}) {
    auto ck = Checkpoint::open(fixture_path(std::string(target) + "/float"));
    for (const bool sampled : {false, true}) {
      for (const int threads : {1, 2}) {
        SCOPED_TRACE(std::string(name) + (sampled ? " sampled" : " greedy") + ", threads " + std::to_string(threads));
        ThreadPool pool(threads);
        auto m = load_target(*ck, Mode::a16q8, true);
        Gemma4Assistant a(dir() + "/" + name, *m);
        // Past the sliding window (8) and its ring's slack, so that drafts read a wrapped ring.
        std::vector<int32_t> prompt;
        for (int i = 0; i < 90; ++i) prompt.push_back(static_cast<int32_t>(3 + (i * 37 + i * i) % 490));
        GenerateOptions g;
        g.n_predict = 40;
        if (sampled) {
          g.sampling.temperature = 0.8f;
          g.sampling.seed = 7;
        }
        const auto run = [&](AssistantProposer* p) {
          Sequence seq(*m, 160);
          Workspace ws(*m, 16);
          GenerateOptions o = g;
          o.speculative = p != nullptr;
          o.assistant = p;
          o.backoff = false;
          o.draft_max = 3;
          return generate(*m, seq, ws, pool, prompt, o, [](int32_t) { return false; }, nullptr);
        };
        const GenerateResult plain = run(nullptr);
        AssistantProposer p(a);
        const GenerateResult spec = run(&p);
        EXPECT_EQ(spec.tokens, plain.tokens);
        EXPECT_GT(spec.drafted, 0);
        EXPECT_GT(p.evaluated(), 0);
        const GenerateResult again = run(&p);
        EXPECT_EQ(again.tokens, plain.tokens);
        EXPECT_EQ(again.drafted, spec.drafted);
        EXPECT_EQ(again.accepted, spec.accepted);
      }
    }
  }
}

// serve's slots: asks of several sequences drafting in one pass give each the drafts it gets alone.
TEST(Gemma4Assistant, BatchedAsksDraftAsEachAlone) {
  ThreadPool pool(2);
  auto ck = Checkpoint::open(fixture_path("gemma4/float"));
  auto m = load_target(*ck, Mode::a16q8, true);
  Gemma4Assistant a(dir() + "/assistant", *m);
  const int64_t d = m->config().n_embd;
  const std::vector<std::vector<int32_t>> hist = {{5, 17, 99, 4, 250, 31}, {7, 7, 300, 41, 2, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}};
  std::vector<Sequence> seqs;
  AssistantProposer both(a, 2);
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < hist.size(); ++i) {
    seqs.emplace_back(*m, 64);
    Workspace ws(*m, 64);
    const int64_t P = static_cast<int64_t>(hist[i].size()) - 1;
    std::vector<StepToken> step;
    for (int64_t t = 0; t < P; ++t) step.push_back({hist[i][static_cast<size_t>(t)], &seqs.back(), t, t + 1 == P});
    std::vector<float> logits(static_cast<size_t>(m->config().n_vocab)), hidden(static_cast<size_t>(P * d));
    forward(*m, step, ws, pool, logits.data(), hidden.data());
    AssistantProposer one(a);
    one.observe(0, hidden.data(), P);
    alone.push_back(one.propose(hist[i], 4, seqs.back(), pool));
    // --draft-p-min: a prefix of the drafts, cut at the first below it (over the kept tokens' softmax).
    AssistantProposer picky(a);
    picky.p_min = 0.5f;
    picky.observe(0, hidden.data(), P);
    const std::vector<int32_t> cut = picky.propose(hist[i], 4, seqs.back(), pool);
    ASSERT_LE(cut.size(), alone.back().size());
    EXPECT_TRUE(std::equal(cut.begin(), cut.end(), alone.back().begin()));
    picky.p_min = 1e-9f;
    EXPECT_EQ(picky.propose(hist[i], 4, seqs.back(), pool), alone.back());
    both.observe(static_cast<int>(i), 0, hidden.data(), P);
  }
  std::vector<std::vector<int32_t>> out(2);
  const std::vector<AssistantProposer::Ask> asks = {{0, hist[0], &seqs[0], 4, &out[0]}, {1, hist[1], &seqs[1], 2, &out[1]}};
  both.propose(asks, pool);
  EXPECT_EQ(out[0], alone[0]);
  EXPECT_EQ(out[1], std::vector<int32_t>(alone[1].begin(), alone[1].begin() + 2));
}

TEST(Gemma4Assistant, WhatItCannotDraftForIsRefused) {
  ThreadPool pool(1);
  {  // a target of another family
    auto ck = Checkpoint::open(fixture_path("arch/qwen3/float"));
    auto m = load_target(*ck, Mode::f32);
    expect_error([&] { Gemma4Assistant a(dir() + "/assistant", *m); }, "a Gemma 4 assistant drafts for a Gemma 4 target");
  }
  {  // a Gemma 4 target of another width (E2B-like fixture: hidden 64, but its layers' KV shapes match; change the backbone)
    const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "nvfp4_g4a_bad";
    std::filesystem::remove_all(tmp);
    std::filesystem::copy(dir() + "/assistant-plain", tmp);
    std::ifstream in(tmp / "config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    in.close();
    c["backbone_hidden_size"] = 32;
    std::ofstream(tmp / "config.json") << c.dump(1);
    auto ck = Checkpoint::open(fixture_path("gemma4/float"));
    auto m = load_target(*ck, Mode::f32);
    expect_error([&] { Gemma4Assistant a(tmp.string(), *m); }, "backbone_hidden_size");
    c["backbone_hidden_size"] = 64;
    c["text_config"]["per_layer_config"]["1"]["head_dim"] = 16;
    std::ofstream(tmp / "config.json") << c.dump(1);
    expect_error([&] { Gemma4Assistant a(tmp.string(), *m); }, "the head size and KV heads of the target layer 5");
    std::filesystem::remove_all(tmp);
  }
  EXPECT_TRUE(is_gemma4_assistant(dir() + "/assistant"));
  EXPECT_FALSE(is_gemma4_assistant(fixture_path("gemma4/float")));
}

}  // namespace
