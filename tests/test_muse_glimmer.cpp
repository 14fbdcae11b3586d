// Muse Glimmer (text) as its release lays it out (fixtures/muse_glimmer/float,
// tools/gen_muse_glimmer_fixtures.py): transformers 5.17's MuseGlimmerForConditionalGeneration, tiny
// and random, with sliding layers (window 8, RoPE) and full NoPE ones, weightless q/k norms with q
// times qk_scale_factor, the attention's output gate, four zero-centred norms (two with eps 1e-8), a
// normed embedding and logits scaled then soft-capped; run against transformers' float32 logits on
// prompts past the window, and the integer-exact modes (weights quantized at load) checked for the
// same bits under every way of stepping a prompt.
#include <filesystem>

#include "arch_fixtures.h"
#include "io_test_util.h"
#include "llamacpp_layout_checks.h"
#include "nvfp4/convert.h"
#include "step_checks.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;

std::string root() { return fixture_path("muse_glimmer"); }
std::string dir_of(const std::string& form) { return root() + "/" + form; }
ArchOracle oracle() { return ArchOracle("", root()); }

std::unique_ptr<Model> quantized(const Checkpoint& ck, Mode mode) {
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = true;
  return Model::load(ck, lo);
}

class MuseGlimmer : public ::testing::Test {
 protected:
  ThreadPool pool_{2};
};

TEST_F(MuseGlimmer, ReleaseOpensWithItsLayersAndTheVisionTowerAside) {
  auto ck = Checkpoint::open(dir_of("float"));
  ASSERT_EQ(ck->info().set_aside.size(), 3u);
  EXPECT_NE(ck->info().set_aside[0].find("model.vision_tower."), std::string::npos) << ck->info().set_aside[0];
  for (const TensorEntry& e : ck->tensors()) EXPECT_EQ(e.name.find("vision"), std::string::npos) << e.name;
  auto m = load_in(*ck, Mode::f32);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, "muse_glimmer");
  ASSERT_EQ(c.attn_layers.size(), 6u);
  for (int l = 0; l < 6; ++l) {
    const AttnLayerConfig& a = c.attn_layers[static_cast<size_t>(l)];
    const bool full = l == 1 || l == 5;  // every 4th counted back from the last
    EXPECT_EQ(a.window, full ? 0 : 8) << l;
    EXPECT_EQ(a.rope, full ? -1 : 0) << l;  // NoPE on the full layers
    EXPECT_EQ(a.head_dim, 16);
    EXPECT_EQ(a.n_kv, 2);
  }
  EXPECT_TRUE(c.embd_norm);
  EXPECT_EQ(c.logit_scale, 0.5f);
  EXPECT_EQ(c.final_softcap, 3.0f);
  EXPECT_EQ(c.post_norm_eps, 1e-8f);
  EXPECT_FALSE(c.tied_head);
}

TEST_F(MuseGlimmer, F32MatchesTransformers) {
  const ArchOracle o = oracle();
  auto ck = Checkpoint::open(dir_of("float"));
  auto m = load_in(*ck, Mode::f32);
  Diff d;
  against_stepped(o, *m, "float", pool_, d);
  std::printf("muse_glimmer f32 vs transformers: max |diff| %.3g (|logit| <= %.3g), argmax differs %d/%d\n", d.max_abs, d.max_ref,
              d.argmax_differ, d.argmax_checked);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
  EXPECT_GT(d.max_ref, 0.5);
  for (size_t p = 0; p < o.prompts(); ++p) {
    const size_t n = greedy_agrees(*m, o.ids(p), o.greedy(p), pool_);
    std::printf("  prompt %zu: greedy equal for %zu of 16 tokens (then %s)\n", p, n, n == 16 ? "done" : "a near tie");
    EXPECT_GE(n, 1u) << "prompt " << p;
  }
}

TEST_F(MuseGlimmer, IntegerModesGiveTheSameBitsHoweverAPromptIsStepped) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);  // 162 tokens: the sliding layers' rings wrap
  auto ck = Checkpoint::open(dir_of("float"));
  for (Mode mode : {Mode::a16q8}) {  // (w4a4 needs calibrated activation scales: the exported forms)
    SCOPED_TRACE(std::string(mode_name(mode)));
    auto m = quantized(*ck, mode);
    ThreadPool one(1);
    const int64_t n = static_cast<int64_t>(ids.size());
    const auto ref = stepped(*m, ids, {n}, one);
    EXPECT_TRUE(same_bits(stepped(*m, ids, {n}, pool_), ref)) << "2 threads";
    EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_), ref)) << "token by token";
    EXPECT_TRUE(same_bits(stepped(*m, ids, {7, 3, 11, 1, 5, 16}, pool_), ref)) << "chunks";
    EXPECT_TRUE(same_bits(stepped(*m, ids, {9, 2, 100}, one, 3 * n), ref)) << "a longer context";
    EXPECT_TRUE(same_bits(stepped_beside_others(*m, ids, pool_, {.max_step = 12, .b_stop = 50, .c_stop = 20}), ref))
        << "beside other sequences";
  }
}

TEST_F(MuseGlimmer, SpeculativeRollbackLeavesThePlainState) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);
  auto ck = Checkpoint::open(dir_of("float"));
  auto m = quantized(*ck, Mode::a16q8);
  const auto ref = stepped(*m, ids, {1}, pool_);
  for (int64_t start : {5, 20, 100, 140})
    for (size_t kept : {0u, 2u, 5u}) expect_rollback_leaves_plain_state(*m, ids, ref, start, kept, pool_);
}

// config.json edited: `key` of text_config set to `v` (null: removed), in a copy of the release.
std::string edited_config(const ScratchDir& tmp, const std::string& key, const nlohmann::json& v) {
  namespace fs = std::filesystem;
  const std::string out = tmp.path + "/muse";
  fs::create_directories(out);
  for (const auto& f : fs::directory_iterator(dir_of("float"))) fs::copy_file(f.path(), out + "/" + f.path().filename().string());
  std::ifstream in(out + "/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  in.close();
  if (v.is_null()) j["text_config"].erase(key);
  else j["text_config"][key] = v;
  std::ofstream(out + "/config.json") << j.dump();
  return out;
}

TEST(MuseGlimmerBadInput, RefusedNamingTheField) {
  {  // RoPE on a full layer: transformers reads the list as on or off, llama.cpp by layer type
    ScratchDir tmp;
    const Error e = refused([&] { Checkpoint::open(edited_config(tmp, "layer_rope_theta", {10000.0, 10000.0, 10000.0, 10000.0, 10000.0, 0})); });
    EXPECT_NE(std::string(e.what()).find("layer_rope_theta[1]"), std::string::npos) << e.what();
  }
  {  // another theta on a sliding layer: transformers would ignore it
    ScratchDir tmp;
    const Error e = refused([&] { Checkpoint::open(edited_config(tmp, "layer_rope_theta", {500.0, 0, 10000.0, 10000.0, 10000.0, 0})); });
    EXPECT_NE(std::string(e.what()).find("layer_rope_theta[0]"), std::string::npos) << e.what();
  }
  {
    ScratchDir tmp;
    const Error e = refused([&] { Checkpoint::open(edited_config(tmp, "attention_bias", true)); });
    EXPECT_NE(std::string(e.what()).find("attention_bias"), std::string::npos) << e.what();
  }
  {  // GGUF output: llama.cpp's muse-glimmer layout is not written yet
    ScratchDir tmp;
    const Error e = refused([&] { convert(dir_of("float"), tmp.path + "/out.gguf", ConvertOptions{}); });
    EXPECT_EQ(e.tensor(), "general.architecture") << e.what();
    EXPECT_FALSE(std::filesystem::exists(tmp.path + "/out.gguf"));
  }
}

}  // namespace
