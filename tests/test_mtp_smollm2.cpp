// The trained MTP head of the bundled SmolLM2-135M (fixtures/mtp, tools/train_mtp_smollm2.py: a
// one-block Qwen3.5-form head with the trunk's Llama block, distilled on CPU) read as a side file
// in llama.cpp's nextn layout (--mtp FILE): its first and chained drafts against the float32
// reference the training script wrote with transformers, its acceptance on the check text above
// the floor, and --spec mtp giving the tokens of plain decoding, greedy and sampled, with real
// acceptance this time (the fixtures' random heads accept almost nothing), also with a draft
// vocabulary (--draft-vocab).
#include <cmath>
#include <fstream>

#include "arch_fixtures.h"
#include "model_path.h"
#include "step_checks.h"
#include "nvfp4/generate.h"
#include "nvfp4/mtp_draft.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

std::string mtp_file() { return fixture_path("mtp") + "/smollm2_mtp.gguf"; }

struct Loaded {
  std::unique_ptr<Checkpoint> ck, side;
  std::unique_ptr<Model> m;
};

Loaded load(const std::string& gguf, Mode mode, bool quantize, bool mtp_quantize = false) {
  Loaded L;
  L.ck = Checkpoint::open(gguf);
  L.side = Checkpoint::open(mtp_file());
  LoadOptions lo;
  lo.mode = mode;
  lo.quantize = quantize;
  lo.mtp_quantize = mtp_quantize;
  lo.mtp = true;
  lo.mtp_source = L.side.get();
  L.m = Model::load(*L.ck, lo);
  return L;
}

double logsumexp(const float* x, int64_t n) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(x[i]) - mx);
  return mx + std::log(s);
}

TEST(MtpSmolLM2, FirstAndChainedDraftsMatchTheReference) {
  NVFP4_REQUIRE_SMOLLM2(path);
  std::ifstream jf(fixture_path("mtp") + "/reference.json");
  ASSERT_TRUE(jf);
  const nlohmann::json ref = nlohmann::json::parse(jf);
  Loaded L = load(path, Mode::f32, false);
  const Model& trunk = *L.m;
  const Model& mtp = *trunk.mtp();
  const int64_t nv = trunk.config().n_vocab, d = trunk.config().n_embd;
  ThreadPool pool(2);
  for (const char* key : {"p0", "p1"}) {
    SCOPED_TRACE(key);
    const auto& p = ref[key];
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const int64_t n = static_cast<int64_t>(ids.size()), rows = p["mtp_rows"].get<int64_t>();
    Sequence seq(trunk, 64);
    Workspace ws(trunk, 64);
    std::vector<StepToken> step;
    for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, false});
    std::vector<float> hidden(static_cast<size_t>(n * d));
    forward(trunk, step, ws, pool, nullptr, hidden.data());
    // Step 1 at positions 0 .. rows - 1, then the chained step of each row alone (it attends to
    // the step-1 entries up to its own position and itself).
    for (int64_t t = 0; t < rows; ++t) {
      Sequence ms(mtp, 64);
      Workspace mw(mtp, 64);
      step.clear();
      for (int64_t u = 0; u <= t; ++u) step.push_back({ids[static_cast<size_t>(u + 1)], &ms, u, u == t});
      std::vector<float> logits(static_cast<size_t>(nv)), out(static_cast<size_t>((t + 1) * d));
      forward_mtp(mtp, step, hidden.data(), mw, pool, logits.data(), out.data());
      const int32_t a1 = nvfp4::argmax(logits.data(), nv);
      EXPECT_EQ(a1, p["step1_argmax"][static_cast<size_t>(t)].get<int32_t>()) << "row " << t;
      EXPECT_NEAR(logsumexp(logits.data(), nv), p["step1_logsumexp"][static_cast<size_t>(t)].get<double>(), 2e-3) << "row " << t;
      const StepToken st{a1, &ms, t + 1, true};
      forward_mtp(mtp, std::span<const StepToken>(&st, 1), out.data() + t * d, mw, pool, logits.data(), nullptr);
      EXPECT_EQ(nvfp4::argmax(logits.data(), nv), p["step2_argmax"][static_cast<size_t>(t)].get<int32_t>()) << "row " << t;
      EXPECT_NEAR(logsumexp(logits.data(), nv), p["step2_logsumexp"][static_cast<size_t>(t)].get<double>(), 2e-3) << "row " << t;
    }
  }
}

TEST(MtpSmolLM2, SpecMtpGivesThePlainTokensWithRealAcceptance) {
  NVFP4_REQUIRE_SMOLLM2(path);
  Loaded L = load(path, Mode::a16q8, true);
  ThreadPool pool(2);
  const Tokenizer tok = Tokenizer::from_checkpoint(*L.ck);
  std::vector<int32_t> check;
  for (int32_t id : tok.encode(kMtpCheckText)) check.push_back(id);
  const double acc = mtp_acceptance(*L.m, check, pool);
  std::printf("SmolLM2 MTP head: acceptance %.3f on the check text\n", acc);
  EXPECT_GE(acc, 0.2);
  const char* prompts[] = {"The library opens at nine", "def fibonacci(n):", "Once upon a time, in a small village,",
                           "The three primary colors are", "Question: what is the capital of Italy? Answer:"};
  int64_t drafted = 0, accepted = 0, vocab_accepted = 0;
  for (const char* text : prompts) {
    for (const bool sampled : {false, true}) {
      SCOPED_TRACE(std::string(text) + (sampled ? " sampled" : " greedy"));
      const std::vector<int32_t> prompt = tok.encode(text);
      GenerateOptions g;
      g.n_predict = kUnderSanitizer ? 12 : 40;
      if (sampled) {
        g.sampling.temperature = 0.7f;
        g.sampling.seed = 11;
      }
      const auto run = [&](MtpProposer* p) {
        Sequence seq(*L.m, 128);
        Workspace ws(*L.m, 16);
        GenerateOptions o = g;
        o.speculative = p != nullptr;
        o.mtp = p;
        o.backoff = false;
        o.draft_max = 3;
        return generate(*L.m, seq, ws, pool, prompt, o, [](int32_t) { return false; }, nullptr);
      };
      const GenerateResult plain = run(nullptr);
      MtpProposer p(*L.m, 128, 16);
      const GenerateResult spec = run(&p);
      EXPECT_EQ(spec.tokens, plain.tokens);
      drafted += spec.drafted;
      accepted += spec.accepted;
      // Drafting over the first 8192 ids (--draft-vocab): other drafts, the same tokens.
      MtpProposer q(*L.m, 128, 16);
      EXPECT_EQ(q.set_draft_vocab(8150), 8192);
      const GenerateResult small = run(&q);
      EXPECT_EQ(small.tokens, plain.tokens);
      vocab_accepted += small.accepted;
    }
  }
  std::printf("SmolLM2 --spec mtp: %lld of %lld drafts accepted\n", static_cast<long long>(accepted), static_cast<long long>(drafted));
  EXPECT_GT(accepted, 0);  // the rollback and the accepted path both exercised
  EXPECT_GT(vocab_accepted, 0);
  MtpProposer whole(*L.m, 128, 16);
  EXPECT_EQ(whole.set_draft_vocab(0), L.m->config().n_vocab);
  EXPECT_EQ(whole.set_draft_vocab(1 << 20), L.m->config().n_vocab);
}

// --draft-quantize with --spec mtp (LoadOptions::mtp_quantize): the module's F16 layers become
// NVFP4 (a quarter of the bytes an MTP step reads), the trunk is loaded as it is stored (the same
// logits, bit for bit), and the quantized module still drafts above the acceptance floor.
TEST(MtpSmolLM2, DraftQuantizeQuantizesTheModuleNotTheTrunk) {
  NVFP4_REQUIRE_SMOLLM2(path);
  Loaded F = load(path, Mode::f32, false);
  Loaded Q = load(path, Mode::f32, false, true);
  EXPECT_EQ(Q.m->weight_bytes(), F.m->weight_bytes());
  const size_t fb = F.m->mtp()->weight_bytes(), qb = Q.m->mtp()->weight_bytes();
  std::printf("SmolLM2 MTP module: %zu bytes as stored (F16), %zu quantized\n", fb, qb);
  EXPECT_LT(qb * 3, fb);
  ThreadPool pool(2);
  const Tokenizer tok = Tokenizer::from_checkpoint(*F.ck);
  const std::vector<int32_t> ids = tok.encode("The library opens at nine and closes at five");
  EXPECT_TRUE(same_bits(eval_all(*F.m, ids, pool), eval_all(*Q.m, ids, pool)));
  std::vector<int32_t> check;
  for (int32_t id : tok.encode(kMtpCheckText)) check.push_back(id);
  const double f = mtp_acceptance(*F.m, check, pool), q = mtp_acceptance(*Q.m, check, pool);
  std::printf("SmolLM2 MTP head on the check text: acceptance %.3f as stored, %.3f quantized\n", f, q);
  EXPECT_GE(q, 0.2);
}

}  // namespace
