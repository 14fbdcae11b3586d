// Mixture-of-experts runtime (src/models/moe_ffn.cpp) on tiny random MoE GGUFs of each routed
// family (tests/moe_tiny.h): the router's pinned choice, and tokens grouped by expert giving every
// token's logits bit-identical (a16q8, w4a4) to the same tokens one at a time, for several step
// compositions over three sequences, 1 and 2 threads and every ISA this CPU has. The loader's
// refusals for MoE checkpoints. Numerical agreement with transformers and the real exporters is
// tests/test_moe_fixtures.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "io_test_util.h"
#include "model_path.h"
#include "moe_steps.h"
#include "moe_tiny.h"
#include "isa_scope.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "models/builders.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

using test::IsaEnv;
using namespace test::moe_steps;

class MoeStep : public ::testing::TestWithParam<int> {};

TEST_P(MoeStep, GroupedByExpertEqualsOneTokenAtATime) {
  const Arch arch = arches()[static_cast<size_t>(GetParam())];
  test::ScratchDir dir;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", arch.t);
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    LoadOptions lo;
    lo.mode = mode;
    const auto m = Model::load(*ck, lo);
    ASSERT_GT(m->config().n_expert, 0);
    std::vector<std::vector<float>> ref;
    {
      IsaEnv isa(detect_isa());
      ref = run(*m, one_at_a_time(), 1);
    }
    for (Isa isa : supported_isas()) {
      if (kUnderSanitizer && isa != detect_isa()) continue;
      IsaEnv env(isa);
      for (int threads : {1, 2})
        for (const Schedule& s : {one_at_a_time(), all_in_one(), mixed()}) {
          const auto got = run(*m, s, threads);
          for (int q = 0; q < 3; ++q)
            ASSERT_TRUE(got[static_cast<size_t>(q)] == ref[static_cast<size_t>(q)])
                << arch.name << " " << mode_name(mode) << " " << isa_name(isa) << " threads " << threads << " sequence " << q;
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, MoeStep, ::testing::Range(0, 4), [](const auto& info) {
  return std::string(arches()[static_cast<size_t>(info.param)].name);
});

// A prompt long enough that experts get >= 32 tokens in one step: the expert-major GEMM path.
TEST(MoeStep, PrefillGemmPerExpertEqualsOneTokenAtATime) {
  test::ScratchDir dir;
  test::TinyMoe t;
  t.n_expert = 4;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  Prompts p(1);
  for (int i = 0; i < 80; ++i) p[0].push_back((i * 37 + 11) % 96);
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    LoadOptions lo;
    lo.mode = mode;
    const auto m = Model::load(*ck, lo);
    const auto ref = run(*m, one_at_a_time(p), 1, p);
    EXPECT_TRUE(run(*m, {{{0, 80}}}, 2, p)[0] == ref[0]) << mode_name(mode);
    EXPECT_TRUE(run(*m, {{{0, 47}}, {{0, 33}}}, 1, p)[0] == ref[0]) << mode_name(mode);
  }
}

TEST(MoeStep, FloatModeAgreesAcrossSchedules) {
  test::ScratchDir dir;
  test::TinyMoe t;
  t.n_ff_shexp = 64;
  t.arch = "qwen2moe";
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  LoadOptions lo;
  lo.mode = Mode::f32;
  const auto m = Model::load(*ck, lo);
  const auto a = run(*m, one_at_a_time(), 1), b = run(*m, all_in_one(), 2);
  for (int q = 0; q < 3; ++q)
    for (size_t i = 0; i < a[static_cast<size_t>(q)].size(); ++i)
      ASSERT_NEAR(a[static_cast<size_t>(q)][i], b[static_cast<size_t>(q)][i], 1e-4f * (1.0f + std::fabs(a[static_cast<size_t>(q)][i])));
}

TEST(MoeRoute, TopKTiesGoToTheLowerExpertAndWeightsFollowTheGating) {
  ModelConfig c;
  c.n_expert = 6;
  c.n_expert_used = 3;
  const float logits[6] = {0.5f, 2.0f, 0.5f, 2.0f, -1.0f, 0.5f};
  int32_t sel[3];
  float w[3];
  c.gating = MoeGating::softmax_all;
  c.norm_topk = false;
  route(c, logits, sel, w);
  EXPECT_EQ(sel[0], 1);
  EXPECT_EQ(sel[1], 3);
  EXPECT_EQ(sel[2], 0);  // three-way tie at 0.5: the lowest index
  double den = 0;
  for (float l : logits) den += std::exp(static_cast<double>(l) - 2.0);
  EXPECT_NEAR(w[0], 1.0 / den, 1e-7);
  EXPECT_NEAR(w[2], std::exp(-1.5) / den, 1e-7);
  c.norm_topk = true;
  route(c, logits, sel, w);
  EXPECT_NEAR(w[0] + w[1] + w[2], 1.0f, 1e-6f);
  EXPECT_EQ(w[0], w[1]);
  c.gating = MoeGating::softmax_topk;
  float w2[3];
  route(c, logits, sel, w2);
  const double z = 2.0 + std::exp(-1.5);
  EXPECT_NEAR(w2[0], 1.0 / z, 1e-7);
  EXPECT_NEAR(w2[2], std::exp(-1.5) / z, 1e-7);
  const float nan_logits[6] = {NAN, 0.0f, 1.0f, NAN, -2.0f, 0.0f};
  route(c, nan_logits, sel, w2);
  EXPECT_EQ(sel[0], 2);
  EXPECT_EQ(sel[1], 1);
  EXPECT_EQ(sel[2], 5);
}

TEST(MoeLoad, DescribesTheExpertsAndCountsActiveBytes) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  const auto m = Model::load(*ck, LoadOptions{});
  EXPECT_EQ(m->config().arch, "qwen3_moe");
  EXPECT_NE(m->describe()[0].find("8 experts of 64 (2 per token, renormalised)"), std::string::npos) << m->describe()[0];
  // Per token: 6 of the 8 experts of each layer and all but one row of the (untied) embedding
  // are not read.
  const size_t expert = 3 * (64 * 64 / 2 + 64 * 64 / 16 + 4), embd_rest = 95 * 64 * 4;
  EXPECT_EQ(m->weight_bytes() - m->bytes_per_token(), 2 * 6 * expert + embd_rest);
}

// Each refusal names its tensor or key.
TEST(MoeLoad, RefusesWhatItCannotServe) {
  test::ScratchDir dir;
  const auto expect_refusal = [&](const test::TinyMoe& t, const std::function<void(gguf::Writer&)>& edit,
                                  const std::string& rule_part) {
    const std::string path = dir.path + "/bad.gguf";
    test::write_tiny_moe(path, t);
    // Re-write with the edit applied to the metadata and tensors of the good file.
    const auto f = gguf::File::open(path);
    gguf::Writer w;
    for (const auto& [k, v] : f.metadata()) w.set(k, v);
    for (const auto& ti : f.tensors()) w.add_tensor(ti.name, ti.ne, ti.type, ti.data, static_cast<uint64_t>(ti.nbytes));
    edit(w);
    const std::string bad = dir.path + "/bad2.gguf";
    w.write(bad);
    try {
      const auto ck = Checkpoint::open(bad);
      Model::load(*ck, LoadOptions{});
      FAIL() << "accepted; expected: " << rule_part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(rule_part), std::string::npos) << e.what();
    }
  };
  test::TinyMoe t;
  expect_refusal(t, [](gguf::Writer& w) { w.set_u32("qwen3moe.expert_used_count", 9); }, "expert_used_count");
  expect_refusal(t, [](gguf::Writer& w) { w.remove("qwen3moe.expert_count"); }, "missing metadata 'qwen3moe.expert_count'");
  static const float extra[64] = {};
  expect_refusal(t, [](gguf::Writer& w) { w.add_tensor("blk.0.ffn_gate.weight", {64}, ggml::F32, extra, sizeof extra); },
                 "blk.0.ffn_gate.weight': tensor the qwen3_moe model does not use");
  expect_refusal(t, [](gguf::Writer& w) { w.set_string("general.architecture", "qwen3"); }, "missing metadata 'qwen3.");
}

}  // namespace

namespace {

// convert GGUF -> GGUF keeps llama.cpp's stacked layout, byte for byte, and the model's results.
TEST(MoeConvert, GgufRoundTripKeepsStackedExpertsAndLogits) {
  test::ScratchDir dir;
  test::TinyMoe t;
  t.arch = "qwen2moe";
  t.n_ff_shexp = 64;
  const std::string in = dir.path + "/in.gguf", out = dir.path + "/out.gguf";
  test::write_tiny_moe(in, t);
  ConvertOptions opt;
  opt.verify = true;
  opt.head = "f16";  // the float head kept as it is (the default would make it Q8_0)
  convert(in, out, opt);
  const auto a = gguf::File::open(in), b = gguf::File::open(out);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const auto& ta : a.tensors()) {
    const gguf::TensorInfo& tb = b.tensor(ta.name);
    EXPECT_EQ(ta.ne, tb.ne) << ta.name;
    EXPECT_EQ(ta.type, tb.type) << ta.name;
    ASSERT_EQ(ta.nbytes, tb.nbytes) << ta.name;
    EXPECT_EQ(std::memcmp(ta.data, tb.data, static_cast<size_t>(ta.nbytes)), 0) << ta.name;
  }
  const auto ca = Checkpoint::open(in), cb = Checkpoint::open(out);
  const auto ma = Model::load(*ca, LoadOptions{}), mb = Model::load(*cb, LoadOptions{});
  EXPECT_TRUE(run(*ma, all_in_one(), 2) == run(*mb, all_in_one(), 2));
}

}  // namespace
