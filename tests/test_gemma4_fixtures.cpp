// Gemma 4 (text) made by the real producers (fixtures/gemma4/<form>/, tools/gen_gemma4_fixtures.py):
// a tiny random gemma4 model from transformers 5.17 with sliding-window layers (window 8, head_dim
// 16, 2 KV heads, RoPE over the whole head) and global ones (head_dim 32, 1 KV head, K = V,
// proportional RoPE over 4 of 16 pairs), exported by ModelOpt and llm-compressor, and the release
// layout (float-vlm: the text model under model.language_model beside a vision tower); run against
// transformers' float32 logits on prompts longer than the window, and the integer-exact modes
// checked for the same bits under every way of stepping a prompt.
#include <filesystem>
#include <unistd.h>

#include "arch_fixtures.h"
#include "step_checks.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string root() { return fixture_path("gemma4"); }
std::string dir_of(const std::string& form) { return root() + "/" + form; }

ArchOracle oracle() { return ArchOracle("", root()); }

class Gemma4Fixture : public ::testing::Test {
 protected:
  ThreadPool pool_{2};
};

TEST_F(Gemma4Fixture, EveryFormOpensWithItsPerLayerAttention) {
  for (const char* form : {"float", "float-vlm", "modelopt-nvfp4", "ct-nvfp4"}) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(form));
    auto m = load_in(*ck, Mode::f32);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.arch, "gemma4");
    ASSERT_EQ(c.attn_layers.size(), 6u);
    for (int l = 0; l < 6; ++l) {
      const AttnLayerConfig& a = c.attn_layers[static_cast<size_t>(l)];
      const bool global = l == 2 || l == 5;
      EXPECT_EQ(a.head_dim, global ? 32 : 16) << l;
      EXPECT_EQ(a.n_kv, global ? 1 : 2) << l;
      EXPECT_EQ(a.window, global ? 0 : 8) << l;
      EXPECT_EQ(a.k_eq_v, global) << l;
      EXPECT_EQ(a.scale, 1.0f);
      ASSERT_GE(a.rope, 0);
      const RopeLayerConfig& r = c.ropes[static_cast<size_t>(a.rope)];
      EXPECT_EQ(r.head_dim, a.head_dim);
      EXPECT_EQ(r.n_rot, global ? 8 : 16) << l;  // proportional 0.25: 4 of 16 pairs; default: all
      EXPECT_DOUBLE_EQ(r.rope.theta, global ? 1e6 : 1e4);
    }
    EXPECT_EQ(c.embd_scale, 8.0f);
    EXPECT_EQ(c.final_softcap, 3.0f);
    EXPECT_EQ(c.sliding_window, 0);  // a window per layer: no bound on the context
    // A context far past the window: the sliding layers read only their window.
    Sequence seq(*m, 200);
    EXPECT_EQ(seq.n_ctx(), 200);
  }
}

TEST_F(Gemma4Fixture, F32MatchesTransformers) {
  const ArchOracle o = oracle();
  for (const char* form : {"float", "float-vlm"}) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(form));
    auto m = load_in(*ck, Mode::f32);
    expect_f32_matches_transformers(o, *m, std::string("gemma4 ") + form, pool_, Feed::stepped, 0);
  }
}

TEST_F(Gemma4Fixture, VlmReleaseSetsTheVisionTowerAside) {
  auto ck = Checkpoint::open(dir_of("float-vlm"));
  ASSERT_EQ(ck->info().set_aside.size(), 2u);
  EXPECT_NE(ck->info().set_aside[0].find("model.vision_tower."), std::string::npos) << ck->info().set_aside[0];
  EXPECT_NE(ck->info().set_aside[1].find("model.embed_vision."), std::string::npos) << ck->info().set_aside[1];
  for (const TensorEntry& e : ck->tensors()) EXPECT_EQ(e.name.find("vision"), std::string::npos) << e.name;
  EXPECT_TRUE(Checkpoint::open(dir_of("float"))->info().set_aside.empty());
}

TEST_F(Gemma4Fixture, QuantizedFormsRunNearModelOptFakeQuant) {
  const ArchOracle o = oracle();
  Diff float_vs;  // how far the float model is from ModelOpt's fake-quantized one
  for (size_t p = 0; p < o.prompts(); ++p) float_vs.add(o.logits(p, "float"), o.logits(p, "modelopt_nvfp4"), o.ids(p).size(), o.nv);
  for (const char* form : {"modelopt-nvfp4", "ct-nvfp4"}) {
    auto ck = Checkpoint::open(dir_of(form));
    for (Mode mode : {Mode::w4a4, Mode::a16q8, Mode::a16, Mode::f32}) {
      auto m = load_in(*ck, mode);
      Diff d;
      against_stepped(o, *m, "modelopt_nvfp4", pool_, d);
      std::printf("gemma4 %s %s vs modelopt_nvfp4: max |diff| %.3g, median %.3g, first positions %.3g (float model: median %.3g)\n", form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.median(), d.first_max, float_vs.median());
      if (std::string(form) == "modelopt-nvfp4" && mode == Mode::w4a4) {
        // The same arithmetic as ModelOpt's fake quantization: each prompt's first position (no
        // attention over earlier ones) within float noise; later positions drift apart through
        // the random model's sharp attention (unscaled scores of normed q and k), less than the
        // float model's.
        EXPECT_LT(d.first_max, 5e-3);
        EXPECT_LT(d.median(), float_vs.median());
      }
    }
  }
}

TEST_F(Gemma4Fixture, UnsupportedVariantsAreRefusedNamingTheField) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("nvfp4_gemma4_refuse_" + std::to_string(::getpid()));
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"hidden_size_per_layer_input", -1}, {"enable_moe_block", true}, {"num_kv_shared_layers", -2},
           {"use_double_wide_mlp", 1}, {"hidden_activation", "silu"}, {"use_bidirectional_attention", "all"}}) {
    SCOPED_TRACE(field);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    for (const auto& e : fs::directory_iterator(dir_of("float"))) fs::copy(e.path(), tmp / e.path().filename());
    std::ifstream in(tmp / "config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    in.close();
    cfg[field] = value;
    std::ofstream(tmp / "config.json") << cfg.dump(1);
    try {
      auto ck = Checkpoint::open(tmp.string());
      auto m = load_in(*ck, Mode::f32);
      ADD_FAILURE() << "loaded";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("config.json"), std::string::npos) << w;
      EXPECT_NE(w.find(field), std::string::npos) << w;
    }
  }
  fs::remove_all(tmp);
}

// ---- the integer-exact modes: the same bits however a prompt is stepped ---------------------

TEST_F(Gemma4Fixture, SlidingLayersHoldARingOfTheirWindow) {
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  auto m = load_in(*ck, Mode::a16q8);
  Sequence small(*m, 200), large(*m, 2000), tiny(*m, 30);
  const int64_t ring = 8 - 1 + kSlidingSlack;
  for (int64_t l = 0; l < 6; ++l) {
    const bool global = l == 2 || l == 5;
    EXPECT_EQ(small.layer(l).kind(), global ? StateKind::full_attention : StateKind::sliding_window) << l;
    if (global) {
      EXPECT_GT(large.layer(l).bytes(), 9 * small.layer(l).bytes()) << l;  // the whole context
    } else {
      EXPECT_EQ(large.layer(l).bytes(), small.layer(l).bytes()) << l;  // bounded by the window, not the context
      EXPECT_NE(small.layer(l).shape().find(std::to_string(ring) + " positions"), std::string::npos) << small.layer(l).shape();
      EXPECT_NE(tiny.layer(l).shape().find("30 positions"), std::string::npos) << tiny.layer(l).shape();
    }
  }
  EXPECT_EQ(small.max_draft(), kSlidingSlack);
  EXPECT_TRUE(tiny.can_truncate());  // a ring of the whole context: any prefix
  EXPECT_FALSE(small.can_truncate());
  // 150 positions: back to 86 .. 150 (the window before the new end still held) or 0, not between.
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);
  Workspace ws(*m, 64);
  ThreadPool pool(1);
  for (int64_t p = 0; p < 150;) {
    std::vector<StepToken> step;
    for (int64_t i = 0; i < 50; ++i, ++p) step.push_back({ids[static_cast<size_t>(p)], &small, p, false});
    forward(*m, step, ws, pool, nullptr);
  }
  EXPECT_EQ(small.keepable(140), 140);
  EXPECT_EQ(small.keepable(150 - kSlidingSlack), 150 - kSlidingSlack);
  EXPECT_EQ(small.keepable(150 - kSlidingSlack - 1), 0);
  EXPECT_EQ(small.keepable(10), 0);
  try {
    small.truncate(40);
    ADD_FAILURE() << "truncated past the ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding window"), std::string::npos) << e.what();
  }
  Sequence copy(*m, 200);
  EXPECT_THROW(copy.copy_prefix(small, 40), Error);
  copy.copy_prefix(small, 120);
  EXPECT_EQ(copy.pos(), 120);
  small.truncate(0);
  EXPECT_EQ(small.pos(), 0);
}

TEST_F(Gemma4Fixture, IntegerModesGiveTheSameBitsHoweverAPromptIsStepped) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);  // 162 tokens
  for (const char* form : {"modelopt-nvfp4", "ct-nvfp4"})
    for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
      SCOPED_TRACE(std::string(form) + " " + std::string(mode_name(mode)));
      auto ck = Checkpoint::open(dir_of(form));
      auto m = load_in(*ck, mode);
      ThreadPool one(1);
      const int64_t n = static_cast<int64_t>(ids.size());
      const auto ref = stepped(*m, ids, {n}, one);
      EXPECT_TRUE(same_bits(stepped(*m, ids, {n}, pool_), ref)) << "2 threads";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_), ref)) << "token by token";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {7, 3, 11, 1, 5, 16}, pool_), ref)) << "chunks";
      EXPECT_TRUE(same_bits(stepped(*m, ids, {9, 2, 100}, one, 3 * n), ref)) << "a longer context";
      // An F16 cache (run's default): its own bits, the same however stepped.
      {
        const auto f16 = stepped(*m, ids, {n}, one, 0, KvType::f16);
        EXPECT_FALSE(same_bits(f16, ref));
        EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_, 0, KvType::f16), f16)) << "F16, token by token";
        EXPECT_TRUE(same_bits(stepped(*m, ids, {5, 70, 2}, pool_, 2 * n, KvType::f16), f16)) << "F16, chunks";
        // An FP8 cache: the sliding layers' rings gather E4M3 bytes as stored.
        const auto fp8 = stepped(*m, ids, {n}, one, 0, KvType::fp8);
        EXPECT_FALSE(same_bits(fp8, f16));
        EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_, 0, KvType::fp8), fp8)) << "FP8, token by token";
        EXPECT_TRUE(same_bits(stepped(*m, ids, {5, 70, 2}, pool_, 2 * n, KvType::fp8), fp8)) << "FP8, chunks";
      }
      // A context the whole ring fits (every position held): the same bits as the ring's.
      {
        std::vector<int32_t> head(ids.begin(), ids.begin() + 60);
        const auto whole = stepped(*m, head, {60}, one, 60);  // ring of 60 = the context
        const auto ringed = stepped(*m, head, {13, 1, 30}, pool_, 200);
        EXPECT_TRUE(same_bits(whole, ringed)) << "a whole context against a ring";
      }
      // Beside other sequences, interleaved in each step: a's logits as alone.
      EXPECT_TRUE(same_bits(stepped_beside_others(*m, ids, pool_, {.max_step = 12, .b_stop = 50, .c_stop = 20}), ref))
          << "beside other sequences";
    }
}

// A verify step of k drafts past the window, then going back to an accepted prefix: the state is
// the one plain decoding of that prefix leaves, bit for bit.
TEST_F(Gemma4Fixture, SpeculativeRollbackLeavesThePlainState) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  auto m = load_in(*ck, Mode::a16q8);
  const auto ref = stepped(*m, ids, {1}, pool_);
  for (int64_t start : {5, 20, 100, 140})
    for (size_t kept : {0u, 2u, 5u}) expect_rollback_leaves_plain_state(*m, ids, ref, start, kept, pool_);
}

}  // namespace
