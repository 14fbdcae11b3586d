// Muse Glimmer (text) as its release lays it out (fixtures/muse_glimmer/float,
// tools/gen_muse_glimmer_fixtures.py): transformers 5.17's MuseGlimmerForConditionalGeneration, tiny
// and random, with sliding layers (window 8, RoPE) and full NoPE ones, weightless q/k norms with q
// times qk_scale_factor, the attention's output gate, four zero-centred norms (two with eps 1e-8), a
// normed embedding and logits scaled then soft-capped; run against transformers' float32 logits on
// prompts past the window, and the integer-exact modes (weights quantized at load) checked for the
// same bits under every way of stepping a prompt.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "arch_fixtures.h"
#include "io_test_util.h"
#include "llamacpp_layout_checks.h"
#include "nvfp4/convert.h"
#include "nvfp4/gguf.h"
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
  expect_f32_matches_transformers(o, *m, "muse_glimmer", pool_, Feed::stepped, 1);
}

// ModelOpt's export against transformers on its own dequantization of the exported weights
// (set modelopt_export; its fake-quantized model, set modelopt_nvfp4, departs from its export on
// this architecture by about 0.4 at a prompt's first position, so it is recorded, not checked).
TEST_F(MuseGlimmer, ModelOptExportRunsAsTransformersOnItsWeights) {
  const ArchOracle o = oracle();
  auto ck = Checkpoint::open(dir_of("modelopt-nvfp4"));
  {
    auto m = load_in(*ck, Mode::f32);
    Diff d;
    against_stepped(o, *m, "modelopt_export", pool_, d);
    std::printf("muse_glimmer modelopt-nvfp4 f32 vs transformers on the export's weights: max |diff| %.3g\n", d.max_abs);
    EXPECT_LE(d.max_abs, kF32Bound);
    EXPECT_EQ(d.argmax_differ, 0);
  }
  Diff float_vs;  // how far the float model is from the export's
  for (size_t p = 0; p < o.prompts(); ++p) float_vs.add(o.logits(p, "float"), o.logits(p, "modelopt_export"), o.ids(p).size(), o.nv);
  for (const char* form : {"modelopt-nvfp4", "ct-nvfp4"})
    for (Mode mode : {Mode::w4a4, Mode::a16q8, Mode::a16}) {
      auto m = load_in(*Checkpoint::open(dir_of(form)), mode);
      Diff d;
      against_stepped(o, *m, "modelopt_export", pool_, d);
      std::printf("muse_glimmer %s %s vs the export's weights: max |diff| %.3g, median %.3g (float model: median %.3g)\n", form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.median(), float_vs.median());
      if (std::string(form) == "modelopt-nvfp4") {
        EXPECT_LT(d.median(), float_vs.median()) << mode_name(mode);
      }
    }
}

TEST_F(MuseGlimmer, IntegerModesGiveTheSameBitsHoweverAPromptIsStepped) {
  const ArchOracle o = oracle();
  const auto ids = long_ids(o);  // 162 tokens: the sliding layers' rings wrap
  for (const auto& [form, mode] : {std::pair<const char*, Mode>{"float", Mode::a16q8}, {"modelopt-nvfp4", Mode::a16q8},
                                   {"modelopt-nvfp4", Mode::w4a4}, {"ct-nvfp4", Mode::w4a4}}) {
    SCOPED_TRACE(std::string(form) + " " + std::string(mode_name(mode)));
    auto ck = Checkpoint::open(dir_of(form));
    auto m = quantized(*ck, mode);  // (the float form's weights quantized at load)
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

// llama.cpp's GGUF layout (io/muse_layout.h), on llama.cpp's own conversion of float/
// (llamacpp-float.gguf, tools/hybrid_llamacpp.py) and ours.
TEST_F(MuseGlimmer, LlamaCppFloatGgufRunsAsTransformers) {
  const ArchOracle o = oracle();
  const std::string path = dir_of("llamacpp-float.gguf");
  {  // llama.cpp's layout: q/k norms as tensors, no qk_scale key
    const auto f = gguf::File::open(path);
    EXPECT_EQ(f.find("general.architecture")->s, "muse-glimmer");
    EXPECT_EQ(f.find("muse-glimmer.attention.qk_scale"), nullptr);
    EXPECT_NE(f.find_tensor("blk.0.attn_q_norm.weight"), nullptr);
  }
  auto ck = Checkpoint::open(path);
  auto m = load_in(*ck, Mode::f32);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.arch, "muse_glimmer");
  EXPECT_EQ(c.attn_layers[1].rope, -1);
  EXPECT_EQ(c.attn_layers[0].window, 8);
  Diff d;
  against_stepped(o, *m, "float", pool_, d);
  std::printf("muse_glimmer llama.cpp's float GGUF, f32 vs transformers: max |diff| %.3g (|logit| <= %.3g)\n", d.max_abs, d.max_ref);
  EXPECT_LE(d.max_abs, kF32Bound);
  EXPECT_EQ(d.argmax_differ, 0);
  {  // the same bits as the HF directory (q/k rows back in HF's order, the norms' 1 as transformers adds it)
    auto ch = Checkpoint::open(dir_of("float"));
    for (Mode mode : {Mode::f32, Mode::a16q8}) {
      LoadOptions lo;
      lo.mode = mode;
      lo.quantize = mode != Mode::f32;
      auto mg = Model::load(*ck, lo), mh = Model::load(*ch, lo);
      for (size_t p = 0; p < o.prompts(); ++p)
        EXPECT_TRUE(eval_all(*mg, o.ids(p), pool_, 160) == eval_all(*mh, o.ids(p), pool_, 160)) << mode_name(mode) << " prompt " << p;
    }
  }
  // What llama-cpp-python made of its own file and of ours (greedy tokens; recorded).
  std::ifstream f(dir_of("llamacpp_greedy.json"));
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j["float"]["ok"].get<bool>()) << j["float"].dump().substr(0, 300);
  ASSERT_TRUE(j["ours-float"]["ok"].get<bool>()) << j["ours-float"].dump().substr(0, 300);
  EXPECT_EQ(j["ours-float"]["greedy"], j["float"]["greedy"]);
}

TEST_F(MuseGlimmer, OurConvertWritesLlamaCppsLayoutAndRunsAsTheHfDirectory) {
  ScratchDir tmp;
  const std::string ours = tmp.path + "/ours.gguf";
  ConvertOptions opt;
  opt.verify = true;
  opt.keep = {"*"};
  opt.head = "f16";
  convert(dir_of("float"), ours, opt);
  const auto theirs = gguf::File::open(dir_of("llamacpp-float.gguf")), mine = gguf::File::open(ours);
  EXPECT_EQ(mine.find("general.architecture")->s, "muse-glimmer");
  for (const char* k : {"attention.sliding_window", "logit_scale", "final_logit_softcapping", "rope.freq_base", "block_count",
                        "attention.head_count", "attention.head_count_kv", "attention.key_length"}) {
    const std::string key = std::string("muse-glimmer.") + k;
    ASSERT_NE(theirs.find(key), nullptr) << key;
    ASSERT_NE(mine.find(key), nullptr) << key;
    EXPECT_EQ(theirs.find(key)->as_float(key), mine.find(key)->as_float(key)) << key;
  }
  for (const char* k : {"attention.qk_scale", "attention.post_norm_epsilon"}) EXPECT_EQ(mine.find(std::string("muse-glimmer.") + k), nullptr) << k;
  // Every tensor of llama.cpp's file in ours: its shape, type and bytes.
  expect_llamacpp_tensors(theirs, mine);
  const ArchOracle o = oracle();
  auto ck_hf = Checkpoint::open(dir_of("float")), ck_gguf = Checkpoint::open(ours);
  for (Mode mode : {Mode::f32}) {
    auto mh = load_in(*ck_hf, mode), mg = load_in(*ck_gguf, mode);
    for (size_t p = 0; p < o.prompts(); ++p)
      EXPECT_TRUE(eval_all(*mh, o.ids(p), pool_, 160) == eval_all(*mg, o.ids(p), pool_, 160)) << "prompt " << p;
  }
  {  // the NVFP4 export: ModelOpt's bytes kept, the same bits as its directory in the integer modes
    const std::string q = tmp.path + "/q.gguf";
    ConvertOptions qo;
    qo.verify = true;
    qo.head = "f16";
    convert(dir_of("modelopt-nvfp4"), q, qo);
    auto cq = Checkpoint::open(q), cd = Checkpoint::open(dir_of("modelopt-nvfp4"));
    for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
      auto mq = load_in(*cq, mode), md = load_in(*cd, mode);
      for (size_t p = 0; p < o.prompts(); ++p)
        EXPECT_TRUE(eval_all(*mq, o.ids(p), pool_, 160) == eval_all(*md, o.ids(p), pool_, 160)) << mode_name(mode) << " prompt " << p;
    }
  }
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
  {  // llama.cpp's converter writes an NVFP4 checkpoint without the q/k norms (its NVFP4 path skips
     // the synthesis), which llama.cpp itself then refuses: so do we, naming the tensor
    const Error e = refused([&] { load_in(*Checkpoint::open(dir_of("llamacpp-modelopt-nvfp4.gguf")), Mode::a16q8); });
    EXPECT_EQ(e.tensor(), "blk.0.attn_q_norm.weight") << e.what();
  }
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
  {  // GGUF output of post norms with another eps: llama.cpp's graph has 1e-8
    ScratchDir tmp;
    const std::string dir = edited_config(tmp, "post_norm_eps", 1e-6);
    EXPECT_NO_THROW(Checkpoint::open(dir));  // runs here
    const Error e = refused([&] { convert(dir, tmp.path + "/out.gguf", ConvertOptions{}); });
    EXPECT_EQ(e.tensor(), "muse-glimmer.attention.post_norm_epsilon") << e.what();
    EXPECT_FALSE(std::filesystem::exists(tmp.path + "/out.gguf"));
  }
}

}  // namespace
