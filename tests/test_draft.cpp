// The draft-model proposer (include/nvfp4/draft.h). On SmolLM2 quantized at load (a16q8, the
// target): the target as its own draft has every drafted token accepted (greedy); a different
// draft (the same GGUF unquantized, f32: other weights, other arithmetic) gives tokens == plain
// decoding, greedy and sampled, with drafts rejected along the way; a draft whose vocabulary
// differs is refused naming both files. A w4a4 target with the a16q8 model as its draft gives
// plain decoding's tokens too.
#include <gtest/gtest.h>

#include <filesystem>

#include "smollm2_suite.h"
#include "nvfp4/calibrate.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "nvfp4/generate.h"
#include "nvfp4/tokenizer.h"
#include "spec_prompts.h"

using namespace nvfp4;

namespace {

class DraftModel : public test::QuantizedSmolLM2 {
 protected:
  struct Counts {
    int compared = 0;
    int64_t drafted = 0, accepted = 0;
    int64_t greedy_missed = 0;  // greedy drafts rejected (beyond a drafted end of generation)
  };
  // Generates each prompt plainly and with `draft` proposing, greedy and sampled; the tokens, stop
  // reason and positions must be equal.
  static Counts compare(const Model& target, const std::vector<std::string>& ps, DraftModelProposer& draft,
                        int64_t n_predict, int draft_max, bool sampled_too, ThreadPool& pool) {
    Workspace ws(target, 64);
    const auto is_eog = [](int32_t t) { return tok_->is_eog(t); };
    Counts c;
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::vector<int32_t> ids = tok_->encode(ps[i]);
      for (const bool sampled : {false, true}) {
        if (sampled && !sampled_too) continue;
        GenerateOptions g;
        g.n_predict = n_predict;
        g.draft_max = draft_max;
        g.backoff = false;  // the identity, not the policy, is under test
        if (sampled) {
          g.sampling.temperature = 0.8f;
          g.sampling.seed = 2000 + i;
        }
        Sequence plain_seq(target, 256), spec_seq(target, 256);
        const GenerateResult plain = generate(target, plain_seq, ws, pool, ids, g, is_eog, nullptr);
        g.speculative = true;
        g.draft = &draft;
        const GenerateResult spec = generate(target, spec_seq, ws, pool, ids, g, is_eog, nullptr);
        EXPECT_EQ(spec.tokens, plain.tokens) << "prompt " << i << (sampled ? " sampled" : " greedy");
        EXPECT_EQ(spec.stop, plain.stop);
        EXPECT_EQ(spec_seq.pos(), plain_seq.pos());
        EXPECT_LE(spec.accepted, spec.drafted);
        // A drafted end-of-generation token is drafted, never emitted, so never accepted.
        const int64_t missed = spec.drafted - spec.accepted;
        if (!sampled) c.greedy_missed += spec.stop == "eog" && missed > 0 ? missed - 1 : missed;
        c.drafted += spec.drafted;
        c.accepted += spec.accepted;
        ++c.compared;
      }
    }
    return c;
  }

};

}  // namespace

TEST_F(DraftModel, TargetAsItsOwnDraftAcceptsEveryDraftedToken) {
  ThreadPool pool(2);
  DraftModelProposer draft(*model_, pool, 256);
  std::vector<std::string> ps = test::spec_prompts();
  ps.resize(kUnderSanitizer ? 2 : 5);
  // Greedy: the draft's argmax is the target's pick (the same bits in a16q8 for any step), so
  // nothing is rejected.
  const Counts c = compare(*model_, ps, draft, kUnderSanitizer ? 8 : 16, 8, false, pool);
  EXPECT_EQ(c.compared, static_cast<int>(ps.size()));
  EXPECT_GT(c.drafted, 0);
  EXPECT_EQ(c.greedy_missed, 0) << c.accepted << " of " << c.drafted << " accepted";
  std::printf("target as its own draft: %lld of %lld drafted tokens accepted\n", static_cast<long long>(c.accepted),
              static_cast<long long>(c.drafted));
}

TEST_F(DraftModel, DifferentDraftGivesPlainDecodingTokens) {
  // The draft: the same GGUF unquantized, in f32: other weights (Q4_1 as stored, not re-quantized
  // to NVFP4) and float arithmetic, so some of its drafts are rejected.
  LoadOptions lo;
  lo.mode = Mode::f32;
  auto f32 = Model::load(*ck_, lo);
  ThreadPool pool(2);
  DraftModelProposer draft(*f32, pool, 256);
  // Every 4th prompt (a spread of the 10 bases and 5 endings); drafts of 4 keep the f32 cost low.
  std::vector<std::string> ps;
  for (size_t i = 0; i < test::spec_prompts().size(); i += 4) ps.push_back(test::spec_prompts()[i]);
  ps.resize(kUnderSanitizer ? 2 : 12);
  const Counts c = compare(*model_, ps, draft, kUnderSanitizer ? 6 : 8, 4, true, pool);
  EXPECT_EQ(c.compared, 2 * static_cast<int>(ps.size()));
  EXPECT_GT(c.accepted, 0);
  if (!kUnderSanitizer) {
    EXPECT_LT(c.accepted, c.drafted) << "no draft rejected: the rejection path is untested";
  }
  // A probability floor and a minimum draft length shorten or drop drafts; still the same tokens.
  draft.p_min = 0.6f;
  draft.n_min = 2;
  ps.resize(kUnderSanitizer ? 1 : 4);
  const Counts f = compare(*model_, ps, draft, 8, 4, true, pool);
  EXPECT_EQ(f.compared, 2 * static_cast<int>(ps.size()));
  std::printf("f32 draft: %lld of %lld drafted tokens accepted over %d generations; with p-min 0.6, n-min 2: %lld of %lld\n",
              static_cast<long long>(c.accepted), static_cast<long long>(c.drafted), c.compared,
              static_cast<long long>(f.accepted), static_cast<long long>(f.drafted));
}

TEST_F(DraftModel, W4a4TargetWithA16q8DraftGivesPlainDecodingTokens) {
  // The other integer-exact mode as the target (activation scales calibrated on a short text),
  // the suite's a16q8 model as its draft. Not under the sanitizers: calibrating and quantizing
  // again cost more than half a minute there, for the same code paths as the tests above.
  if (kUnderSanitizer) GTEST_SKIP() << "a second quantized load: Release only";
  LoadOptions lo;
  lo.mode = Mode::w4a4;
  lo.quantize = true;
  lo.input_scales = calibrate_input_scales(*ck_, tok_->encode(test::spec_prompts()[3] + test::spec_prompts()[7]), 64, 2);
  auto w4a4 = Model::load(*ck_, lo);
  ThreadPool pool(2);
  DraftModelProposer draft(*model_, pool, 256);
  std::vector<std::string> ps = {test::spec_prompts()[0], test::spec_prompts()[11], test::spec_prompts()[27]};
  const Counts c = compare(*w4a4, ps, draft, 8, 4, true, pool);
  EXPECT_EQ(c.compared, 2 * static_cast<int>(ps.size()));
  EXPECT_GT(c.drafted, 0);
  std::printf("w4a4 target, a16q8 draft: %lld of %lld drafted tokens accepted\n", static_cast<long long>(c.accepted),
              static_cast<long long>(c.drafted));
}

TEST_F(DraftModel, DraftVocabularyMustBeTheTargets) {
  const std::string tf = ck_->info().path, df = "draft.gguf";
  const int64_t rows = model_->config().n_vocab;
  const TokenizerData base = tokenizer_data_from_checkpoint(*ck_);
  EXPECT_NO_THROW(check_draft_vocab(*tok_, rows, tf, Tokenizer::build(base), rows, df));
  const auto refused = [&](const Tokenizer& d, int64_t d_rows, const std::string& file, const std::string& what) {
    try {
      check_draft_vocab(*tok_, rows, tf, d, d_rows, file);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find(tf), std::string::npos) << w;
      EXPECT_NE(w.find(file), std::string::npos) << w;
      EXPECT_NE(w.find(what), std::string::npos) << w;
    }
  };
  TokenizerData swapped = base;  // the same strings, two ids exchanged
  std::swap(swapped.tokens[300], swapped.tokens[301]);
  refused(Tokenizer::build(swapped), rows, df, "token 300");
  TokenizerData more = base;  // one token more
  more.tokens.push_back("xyzzy-extra");
  if (!more.token_types.empty()) more.token_types.push_back(static_cast<int32_t>(TokenType::normal));
  if (!more.scores.empty()) more.scores.push_back(0.0f);
  refused(Tokenizer::build(more), rows, df, "token count");
  TokenizerData bos = base;
  bos.bos = base.bos == 0 ? 1 : 0;
  refused(Tokenizer::build(bos), rows, df, "bos token id");
  refused(Tokenizer::build(base), rows + 1, df, "output rows");
  // A real model with another vocabulary (a tiny fixture model with its own trained tokenizer).
  const std::string tiny = std::string(NVFP4_FIXTURES) + "/arch/llama/float";
  auto tck = Checkpoint::open(tiny);
  refused(Tokenizer::from_checkpoint(*tck), 0, tiny, "token count");
}
