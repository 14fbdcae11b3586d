// Gated DeltaNet hybrids made by the real producers (fixtures/hybrid/<arch>/<form>/,
// tools/gen_hybrid_fixtures.py): tiny random Qwen3.5 (qwen3_5), Qwen3.5-MoE (qwen3_5_moe) and
// Qwen3-Next (qwen3_next) models from transformers 5.17, exported by ModelOpt (NVFP4, W4A16) and
// llm-compressor (NVFP4, NVFP4A16), and the releases' VLM layout (float-vlm: the text model under
// model.language_model, a vision tower and MTP layers beside it), run against transformers' and
// ModelOpt's own float32 logits (bounds as tests/test_moe_fixtures.cpp argues them), and the
// integer-exact modes checked for the same bits under every way of stepping a prompt.
#include "arch_fixtures.h"
#include "step_checks.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

constexpr double kF32Bound = 5e-5;

std::string hybrid_root() { return fixture_path("hybrid"); }
std::string dir_of(const std::string& arch, const std::string& form) { return hybrid_root() + "/" + arch + "/" + form; }

class HybridFixture : public ::testing::TestWithParam<std::string> {
 protected:
  ThreadPool pool_{2};
};

TEST_P(HybridFixture, EveryFormOpensAsItsProducerWroteIt) {
  const std::string arch = GetParam();
  for (const FormInfo& f : kForms) {
    SCOPED_TRACE(f.form);
    auto ck = Checkpoint::open(dir_of(arch, f.form));
    EXPECT_EQ(ck->info().producer, f.producer);
    EXPECT_EQ(ck->info().algorithm, f.algorithm);
    EXPECT_EQ(ck->info().has_input_scales, f.w4a4);
    EXPECT_TRUE(ck->info().set_aside.empty());
    auto m = load_in(*ck, Mode::f32);
    const ModelConfig& c = m->config();
    EXPECT_EQ(c.arch, arch);
    ASSERT_EQ(c.mixers.size(), 4u);
    for (int l = 0; l < 4; ++l)
      EXPECT_EQ(c.mixers[static_cast<size_t>(l)], l == 3 ? MixerKind::attention : MixerKind::linear_attention) << "layer " << l;
    EXPECT_EQ(c.n_rot, 4);
    EXPECT_TRUE(c.attn_out_gate);
    EXPECT_EQ(c.linear.n_k_heads, 2);
    EXPECT_EQ(c.linear.n_v_heads, 4);
    EXPECT_EQ(c.linear.conv_kernel, 4);
    EXPECT_EQ(c.n_expert, arch == "qwen3_5" ? 0 : 8);
  }
}

TEST_P(HybridFixture, F32MatchesTransformers) {
  const ArchOracle o(GetParam(), hybrid_root());
  std::vector<std::string> forms = {"float"};
  if (GetParam() != "qwen3_next") forms.push_back("float-vlm");
  for (const std::string& form : forms) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(GetParam(), form));
    auto m = load_in(*ck, Mode::f32);
    expect_f32_matches_transformers(o, *m, GetParam() + " " + form, pool_, Feed::whole, 4);
  }
}

TEST_P(HybridFixture, VlmReleaseSetsVisionAndMtpAside) {
  if (GetParam() == "qwen3_next") GTEST_SKIP() << "Qwen3-Next has no VLM release";
  auto ck = Checkpoint::open(dir_of(GetParam(), "float-vlm"));
  ASSERT_EQ(ck->info().set_aside.size(), 2u);
  EXPECT_NE(ck->info().set_aside[0].find("model.visual."), std::string::npos) << ck->info().set_aside[0];
  EXPECT_NE(ck->info().set_aside[1].find("mtp."), std::string::npos) << ck->info().set_aside[1];
  for (const TensorEntry& e : ck->tensors()) {
    EXPECT_EQ(e.name.find("visual"), std::string::npos) << e.name;
    EXPECT_EQ(e.name.find("mtp"), std::string::npos) << e.name;
  }
}

TEST_P(HybridFixture, A16MatchesModelOptFakeQuantW4A16) {
  const ArchOracle o(GetParam(), hybrid_root());
  for (const char* form : {"modelopt-w4a16", "modelopt-nvfp4"}) {
    SCOPED_TRACE(form);
    auto ck = Checkpoint::open(dir_of(GetParam(), form));
    for (Mode mode : {Mode::a16, Mode::f32}) {
      auto m = load_in(*ck, mode);
      Diff d;
      against(o, *m, "modelopt_w4a16", pool_, d);
      std::printf("%s %s %s vs modelopt_w4a16: max |diff| %.3g, argmax differs %d/%d\n", GetParam().c_str(), form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.argmax_differ, d.argmax_checked);
      // a16 sums each row in the kernel's own float order (f32 in DenseLinear's over the dequantized
      // weights): over these deeper float paths (recurrence, gates) the MoE fixture lands at 7e-5.
      EXPECT_LE(d.max_abs, mode == Mode::a16 ? 1e-4 : kF32Bound);
      EXPECT_EQ(d.argmax_differ, 0);
    }
  }
}

TEST_P(HybridFixture, W4A4RunsNearModelOptFakeQuantNvfp4) {
  const ArchOracle o(GetParam(), hybrid_root());
  auto ck = Checkpoint::open(dir_of(GetParam(), "modelopt-nvfp4"));
  auto m = load_in(*ck, Mode::w4a4);
  Diff d, a16ref;
  against(o, *m, "modelopt_nvfp4", pool_, d);
  against(o, *m, "modelopt_w4a16", pool_, a16ref);
  std::printf("%s w4a4 vs modelopt_nvfp4: max |diff| %.3g (median position %.3g); vs W4A16 fake quant %.3g (median %.3g)\n",
              GetParam().c_str(), d.max_abs, d.median(), a16ref.max_abs, a16ref.median());
  EXPECT_LT(d.median(), a16ref.median());
  EXPECT_LT(d.max_abs, a16ref.max_abs);
}

TEST_P(HybridFixture, CompressedTensorsFormsRunInEveryModeTheyServe) {
  const ArchOracle o(GetParam(), hybrid_root());
  for (const char* form : {"ct-nvfp4", "ct-nvfp4a16"}) {
    auto ck = Checkpoint::open(dir_of(GetParam(), form));
    std::vector<Mode> modes = {Mode::a16, Mode::a16q8, Mode::f32};
    if (ck->info().has_input_scales) modes.push_back(Mode::w4a4);
    for (Mode mode : modes) {
      auto m = load_in(*ck, mode);
      Diff d, f;
      against(o, *m, "modelopt_w4a16", pool_, d);
      against(o, *m, "float", pool_, f);
      std::printf("%s %s %s vs modelopt_w4a16: max |diff| %.3g, median %.3g\n", GetParam().c_str(), form,
                  std::string(mode_name(mode)).c_str(), d.max_abs, d.median());
      EXPECT_LT(d.median(), f.median() + 0.5) << form << " " << mode_name(mode);
    }
  }
}

// ---- the integer-exact modes: the same bits however a prompt is stepped (tests/step_checks.h) ----

TEST_P(HybridFixture, IntegerModesGiveTheSameBitsHoweverAPromptIsStepped) {
  const ArchOracle o(GetParam(), hybrid_root());
  const auto ids = o.ids(2);  // 40 tokens
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    SCOPED_TRACE(mode_name(mode));
    auto ck = Checkpoint::open(dir_of(GetParam(), "modelopt-nvfp4"));
    auto m = load_in(*ck, mode);
    ThreadPool one(1);
    const auto ref = stepped(*m, ids, {40}, one);
    EXPECT_TRUE(same_bits(stepped(*m, ids, {40}, pool_), ref)) << "2 threads";
    EXPECT_TRUE(same_bits(stepped(*m, ids, {1}, pool_), ref)) << "token by token";
    EXPECT_TRUE(same_bits(stepped(*m, ids, {7, 3, 11, 1, 5}, pool_), ref)) << "chunks";
    EXPECT_TRUE(same_bits(stepped_beside_others(*m, ids, pool_), ref)) << "beside other sequences";
  }
}

// A verify step of k drafts, then going back to any accepted prefix: the state is the one plain
// decoding of that prefix leaves, bit for bit (the recurrent layers' snapshots).
TEST_P(HybridFixture, SpeculativeRollbackLeavesThePlainState) {
  const ArchOracle o(GetParam(), hybrid_root());
  const auto ids = o.ids(2);
  auto ck = Checkpoint::open(dir_of(GetParam(), "modelopt-nvfp4"));
  auto m = load_in(*ck, Mode::a16q8);
  const auto ref = stepped(*m, ids, {1}, pool_);
  for (size_t kept : {0u, 2u, 5u}) expect_rollback_leaves_plain_state(*m, ids, ref, 10, kept, pool_);
}

INSTANTIATE_TEST_SUITE_P(Hybrid, HybridFixture, ::testing::Values("qwen3_5", "qwen3_5_moe", "qwen3_next"),
                         [](const auto& i) { return i.param; });

}  // namespace
