// Experts read from disk on demand (LoadOptions::experts_budget, src/models/expert_store.h): a
// budget of two experts per layer, and of only the k a token routes to (so a step that routes to
// more runs its experts in several acquisitions), gives logits == the all-resident model's for
// every routed family of tests/moe_tiny.h, in a16q8 and w4a4, on every ISA, 1 and 2 threads and
// three step compositions; the figures count what happened; the file is reused when it holds the
// experts and rewritten when it does not; a changed file is an error naming it, never other logits;
// budgets too small for one token, and non-NVFP4 experts, are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io_test_util.h"
#include "isa_scope.h"
#include "model_path.h"
#include "moe_steps.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "test_util.h"

using namespace nvfp4;
using namespace nvfp4::test::moe_steps;

namespace {

// One tiny expert's bytes in the file and a slot: gate, up, down of [n_ff x n_embd] / [n_embd x
// n_ff], each ceil(n_out / 16) tiles x n_in / 16 records of 144 bytes (64-byte aligned; these are),
// the sum rounded up to 4 KiB.
int64_t expert_bytes(const test::TinyMoe& t) {
  const auto stream = [](int64_t n_out, int64_t n_in) { return (n_out + 15) / 16 * (n_in / 16) * 144; };
  return 2 * stream(t.n_ff_exp, t.n_embd) + stream(t.n_embd, t.n_ff_exp);
}
int64_t slot_bytes(const test::TinyMoe& t) { return (expert_bytes(t) + 4095) / 4096 * 4096; }

std::unique_ptr<Model> load(const Checkpoint& ck, Mode mode, int64_t budget = -1, const std::string& file = "",
                            bool read_ahead = true) {
  LoadOptions lo;
  lo.mode = mode;
  lo.experts_budget = budget;
  lo.experts_file = file;
  lo.experts_read_ahead = read_ahead;
  return Model::load(ck, lo);
}

class ExpertStoreStep : public ::testing::TestWithParam<int> {};

TEST_P(ExpertStoreStep, TwoExpertsPerLayerAndTheFewestGiveTheResidentLogits) {
  const Arch arch = arches()[static_cast<size_t>(GetParam())];
  test::ScratchDir dir;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", arch.t);
  const int64_t slot = slot_bytes(arch.t);
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    std::vector<std::vector<float>> ref;
    {
      test::IsaEnv isa(detect_isa());
      ref = run(*load(*ck, mode), one_at_a_time(), 1);
    }
    for (const int64_t slots : {2 * arch.t.n_layer, arch.t.n_used}) {
      const auto m = load(*ck, mode, slots * slot, dir.path + "/moe.experts", slots > arch.t.n_used);
      const ExpertStats s0 = m->expert_stats();
      ASSERT_EQ(s0.slots, slots) << arch.name;
      ASSERT_EQ(s0.experts, arch.t.n_layer * arch.t.n_expert);
      ASSERT_EQ(s0.slot_bytes, slot);
      for (Isa isa : supported_isas()) {
        if (kUnderSanitizer && isa != detect_isa()) continue;
        test::IsaEnv env(isa);
        for (int threads : {1, 2})
          for (const Schedule& s : {one_at_a_time(), all_in_one(), mixed()}) {
            const auto got = run(*m, s, threads);
            for (int q = 0; q < 3; ++q)
              ASSERT_TRUE(got[static_cast<size_t>(q)] == ref[static_cast<size_t>(q)])
                  << arch.name << " " << mode_name(mode) << " slots " << slots << " " << isa_name(isa) << " threads "
                  << threads << " sequence " << q;
          }
      }
      const ExpertStats s1 = m->expert_stats();
      EXPECT_GT(s1.misses, 0);
      if (slots > arch.t.n_used) {
        EXPECT_GT(s1.hits, 0);
      }  // (k slots: each layer's experts push out the other's)
      EXPECT_EQ(s1.bytes_read, (s1.misses + s1.prefetched) * expert_bytes(arch.t));
      EXPECT_GT(s1.read_s, 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ExpertStoreStep, ::testing::Range(0, 4), [](const auto& info) {
  return std::string(arches()[static_cast<size_t>(info.param)].name);
});

// A long prompt (experts with >= 32 tokens: the GEMM path) in one step, through k slots.
TEST(ExpertStore, PrefillThroughTheFewestSlotsGivesTheResidentLogits) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  Prompts p(1);
  for (int i = 0; i < 80; ++i) p[0].push_back((i * 37 + 11) % 96);
  const auto ref = run(*load(*ck, Mode::a16q8), {{{0, 80}}}, 2, p);
  const auto m = load(*ck, Mode::a16q8, t.n_used * slot_bytes(t), dir.path + "/e");
  EXPECT_TRUE(run(*m, {{{0, 80}}}, 2, p)[0] == ref[0]);
  EXPECT_TRUE(run(*m, {{{0, 47}}, {{0, 33}}}, 1, p)[0] == ref[0]);
}

// Hits and misses count every expert a step's layer routes to; one token's k experts per layer.
TEST(ExpertStore, FiguresCountEveryRoutedExpert) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  const auto m = load(*ck, Mode::a16q8, 2 * t.n_layer * slot_bytes(t), dir.path + "/e");
  const Prompts p = {{5, 17, 3, 88, 41, 9, 9, 60}};
  run(*m, one_at_a_time(p), 1, p);
  const ExpertStats s = m->expert_stats();
  EXPECT_EQ(s.hits + s.misses, static_cast<int64_t>(p[0].size()) * t.n_layer * t.n_used);
  EXPECT_EQ(s.bytes_read, (s.misses + s.prefetched) * expert_bytes(t));
  EXPECT_GT(s.prefetched, 0);  // one-token steps read the next layer's likely experts ahead
  EXPECT_GE(s.misses, t.n_layer * t.n_used);  // the first token's experts at least
  EXPECT_GT(s.written, 0);
}

// The file: reused as it is by a second load of the same model, rewritten for another model,
// and a byte changed under a running model is an error that names it.
TEST(ExpertStore, FileReusedRewrittenAndCheckedOnEveryRead) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const std::string a = dir.path + "/a.gguf", b = dir.path + "/b.gguf", file = dir.path + "/moe.experts";
  test::write_tiny_moe(a, t);
  test::TinyMoe t2 = t;
  t2.seed = 8;
  test::write_tiny_moe(b, t2);
  const auto ca = Checkpoint::open(a), cb = Checkpoint::open(b);
  const int64_t budget = t.n_used * slot_bytes(t);
  EXPECT_GT(load(*ca, Mode::a16q8, budget, file)->expert_stats().written, 0);
  EXPECT_EQ(load(*ca, Mode::a16q8, budget, file)->expert_stats().written, 0);
  {
    const auto mb = load(*cb, Mode::a16q8, budget, file);
    EXPECT_GT(mb->expert_stats().written, 0);  // another model: its experts written over a's
    EXPECT_TRUE(run(*mb, mixed(), 2) == run(*load(*cb, Mode::a16q8), mixed(), 2));
  }
  const auto m = load(*ca, Mode::a16q8, budget, file);
  EXPECT_GT(m->expert_stats().written, 0);  // a's experts written back over b's
  {  // every expert's bytes changed: the first read is refused
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    std::vector<char> junk(static_cast<size_t>(t.n_layer * t.n_expert * slot_bytes(t)), '\x5a');
    f.seekp(4096);
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  try {
    run(*m, one_at_a_time(), 1);
    FAIL() << "a changed experts file was read without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expert"), std::string::npos) << e.what();
  }
}

TEST(ExpertStore, RefusesABudgetBelowOneTokensExpertsAndNonNvfp4Experts) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  try {
    load(*ck, Mode::a16q8, (t.n_used - 1) * slot_bytes(t) + 100, dir.path + "/e");
    FAIL() << "a budget below the experts one token routes to was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--experts-budget"), std::string::npos) << e.what();
  }
  // A budget that holds every expert: no store, no file.
  const auto all = load(*ck, Mode::a16q8, int64_t{1} << 30, dir.path + "/none");
  EXPECT_EQ(all->expert_stats().slots, 0);
  EXPECT_FALSE(std::ifstream(dir.path + "/none").good());
  // Float experts (the float HF form of a real MoE fixture) stay in memory: refused.
  const std::string fl = test::fixture_path("moe/qwen3_moe/float");
  const auto cf = Checkpoint::open(fl);
  try {
    load(*cf, Mode::f32, 1, dir.path + "/f");
    FAIL() << "float experts were given to the store";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NVFP4"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// The families whose MoE blocks differ from the tiny ones: Gemma 4's experts beside its MLP (per-expert
// scales), Qwen3.5-MoE's beside Gated DeltaNet layers and a shared expert (ModelOpt exports), and
// Nemotron 3's squared-ReLU experts without a gate, in the latent width or not (their float
// fixtures quantized at load): k slots give the resident logits.
struct Family {
  const char* dir;
  bool quantize;
};

TEST(ExpertStore, OtherFamiliesBlocksThroughTheFewestSlotsGiveTheResidentLogits) {
  for (const Family f : {Family{"gemma4-moe/modelopt-nvfp4", false}, Family{"hybrid/qwen3_5_moe/modelopt-nvfp4", false},
                         Family{"nemotron_h/nemotron3_latent/float", true}, Family{"nemotron_h/nemotron3_moe/float", true}}) {
    test::ScratchDir dir;
    const auto ck = Checkpoint::open(test::fixture_path(f.dir));
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    lo.quantize = f.quantize;
    const auto resident = Model::load(*ck, lo);
    const ModelConfig& c = resident->config();
    const int64_t d = c.moe_latent > 0 ? c.moe_latent : c.n_embd;
    const bool gated = c.arch.find("nemotron") == std::string::npos;
    const auto stream = [](int64_t n_out, int64_t n_in) { return (n_out + 15) / 16 * (n_in / 16) * 144; };
    const int64_t expert = (gated ? 2 : 1) * stream(c.n_ff_exp, d) + stream(d, c.n_ff_exp);
    lo.experts_budget = c.n_expert_used * ((expert + 4095) / 4096 * 4096);
    lo.experts_file = dir.path + "/e";
    const auto m = Model::load(*ck, lo);
    ASSERT_EQ(m->expert_stats().slots, c.n_expert_used) << f.dir;
    const auto ref = run(*resident, mixed(), 2);
    EXPECT_TRUE(run(*m, mixed(), 2) == ref) << f.dir;
    EXPECT_TRUE(run(*m, all_in_one(), 1) == ref) << f.dir;
    EXPECT_GT(m->expert_stats().misses, 0) << f.dir;
  }
}

}  // namespace

namespace {

// Logits of one step of `tokens` on a fresh sequence (no cache), for driving the store.
void step_tokens(const Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(1);
  Sequence q(m, 96);
  Workspace ws(m, 96);
  std::vector<StepToken> toks;
  for (size_t i = 0; i < tokens.size(); ++i) toks.push_back(StepToken{tokens[i], &q, static_cast<int64_t>(i), i + 1 == tokens.size()});
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  forward(m, toks, ws, pool, logits.data());
}

// The admission policy: experts one token keeps asking for stay resident through a prompt that
// asks for every expert once (frequency beats one use), so the next such step reads nothing.
TEST(ExpertStore, APromptThatTouchesEveryExpertDoesNotPushOutTheHotOnes) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  // Room for half the experts: a token's k in each layer fit many times over, all of them do not.
  const auto m = load(*ck, Mode::a16q8, t.n_layer * t.n_expert / 2 * slot_bytes(t), dir.path + "/e", false);
  for (int i = 0; i < 6; ++i) step_tokens(*m, {5});  // token 5 alone, again and again: its experts get hot
  const ExpertStats hot = m->expert_stats();
  EXPECT_EQ(hot.misses, t.n_layer * t.n_used);  // read once, then hits
  std::vector<int32_t> prompt;
  for (int i = 0; i < 60; ++i) prompt.push_back((i * 37 + 11) % 96);
  step_tokens(*m, prompt);
  const ExpertStats after_prompt = m->expert_stats();
  EXPECT_GT(after_prompt.misses - hot.misses, 0);  // the prompt read what was not resident
  step_tokens(*m, {5});
  EXPECT_EQ(m->expert_stats().misses, after_prompt.misses) << "the prompt pushed out the hot experts";
}

// A file cut short or with a broken table is not trusted: the next load writes the experts again,
// and the logits are the resident model's.
TEST(ExpertStore, ATruncatedFileIsRewrittenAtLoad) {
  test::ScratchDir dir;
  test::TinyMoe t;
  const std::string path = dir.path + "/moe.gguf", file = dir.path + "/moe.experts";
  test::write_tiny_moe(path, t);
  const auto ck = Checkpoint::open(path);
  const int64_t budget = t.n_used * slot_bytes(t);
  EXPECT_GT(load(*ck, Mode::a16q8, budget, file)->expert_stats().written, 0);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  const auto m = load(*ck, Mode::a16q8, budget, file);
  EXPECT_GT(m->expert_stats().written, 0);
  EXPECT_TRUE(run(*m, mixed(), 2) == run(*load(*ck, Mode::a16q8), mixed(), 2));
}

}  // namespace

namespace {

// Experts bigger than the I/O threads' piece (1 MiB: 1.7 MiB here) are read in pieces side by side
// and checked whole: the resident logits, and a piece changed is still caught.
TEST(ExpertStore, ExpertsReadInSeveralPiecesGiveTheResidentLogits) {
  test::ScratchDir dir;
  test::TinyMoe t;
  t.n_embd = 256, t.n_head = 4, t.n_head_kv = 2, t.head_dim = 64, t.n_ff_exp = 4096, t.n_expert = 4;
  const auto ck = tiny_checkpoint(dir.path + "/moe.gguf", t);
  ASSERT_GT(expert_bytes(t), int64_t{1} << 20);
  const std::string file = dir.path + "/e";
  const auto m = load(*ck, Mode::a16q8, t.n_used * slot_bytes(t), file, false);
  EXPECT_TRUE(run(*m, mixed(), 2) == run(*load(*ck, Mode::a16q8), mixed(), 2));
  EXPECT_GT(m->expert_stats().misses, 0);
  {  // one byte of the second piece of every expert: the next reads are refused
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    const int64_t stride = slot_bytes(t);
    for (int64_t x = 0; x < t.n_layer * t.n_expert; ++x) {
      f.seekp(4096 + x * stride + (int64_t{1} << 20) + 100);
      f.put('\x33');
    }
  }
  try {
    run(*m, one_at_a_time(), 1);
    FAIL() << "a changed piece was read without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
}

}  // namespace
