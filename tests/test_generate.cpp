// Generation (include/nvfp4/generate.h): prompt-lookup drafts, and speculative decoding that is
// bit-identical to plain decoding. SmolLM2 quantized at load, a16q8: on 50 prompts (code to
// edit, text to quote, chat-like; 6 under the sanitizers), greedy and sampled, the tokens with
// --spec equal the tokens without; drafts are accepted; float modes are refused.
#include <gtest/gtest.h>

#include "model_path.h"
#include "spec_prompts.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/generate.h"
#include "nvfp4/tokenizer.h"

using namespace nvfp4;

TEST(NgramProposer, LongestRecurringSuffixLatestOccurrence) {
  NgramProposer p{1, 3};
  const std::vector<int32_t> h = {1, 2, 3, 4, 9, 1, 2, 3, 5, 7, 1, 2, 3};
  // Suffix [1 2 3] recurs at 5 (latest) and 0: the draft follows the latest one.
  EXPECT_EQ(p.propose(h, 2), (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(p.propose(h, 8), (std::vector<int32_t>{5, 7, 1, 2, 3}));
  EXPECT_TRUE(p.propose(std::vector<int32_t>{1, 2, 3, 4}, 4).empty());  // nothing recurs
  EXPECT_EQ(NgramProposer({1, 1}).propose(std::vector<int32_t>{8, 6, 8}, 3), (std::vector<int32_t>{6, 8}));
  EXPECT_TRUE(p.propose(std::vector<int32_t>{}, 4).empty());
  EXPECT_TRUE(p.propose(std::vector<int32_t>{5}, 4).empty());
}


TEST(Speculative, TokensBitIdenticalToPlainDecodingGreedyAndSampled) {
  NVFP4_REQUIRE_SMOLLM2(path);
  auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::a16q8;
  lo.quantize = true;
  auto model = Model::load(*ck, lo);
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  ThreadPool pool(2);
  Workspace ws(*model, 64);
  const auto is_eog = [&](int32_t t) { return tok.is_eog(t); };
  std::vector<std::string> ps = nvfp4::test::spec_prompts();
  if (kUnderSanitizer) ps.resize(6);
  int compared = 0;
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(ps[i]);
    for (const bool sampled : {false, true}) {
      GenerateOptions g;
      g.n_predict = kUnderSanitizer ? 6 : 8;
      g.backoff = false;  // the identity, not the policy, is under test
      if (sampled) {
        g.sampling.temperature = 0.8f;
        g.sampling.seed = 1000 + i;
      }
      Sequence plain_seq(*model, 256), spec_seq(*model, 256);
      const GenerateResult plain = generate(*model, plain_seq, ws, pool, ids, g, is_eog, nullptr);
      g.speculative = true;
      const GenerateResult spec = generate(*model, spec_seq, ws, pool, ids, g, is_eog, nullptr);
      EXPECT_EQ(spec.tokens, plain.tokens) << "prompt " << i << (sampled ? " sampled" : " greedy");
      EXPECT_EQ(spec.stop, plain.stop);
      EXPECT_EQ(spec_seq.pos(), plain_seq.pos());
      EXPECT_EQ(plain.drafted, 0);
      drafted += spec.drafted;
      accepted += spec.accepted;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2 * static_cast<int>(ps.size()));
  EXPECT_GT(accepted, 0) << drafted << " drafted";
  std::printf("speculative identity: %d generations compared, %lld of %lld drafted tokens accepted\n", compared,
              static_cast<long long>(accepted), static_cast<long long>(drafted));
}

TEST(Speculative, RefusedWhereTheIdentityDoesNotHold) {
  NVFP4_REQUIRE_SMOLLM2(path);
  auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::a16;
  lo.quantize = true;
  auto model = Model::load(*ck, lo);
  ThreadPool pool(1);
  Workspace ws(*model, 16);
  Sequence seq(*model, 32);
  GenerateOptions g;
  g.n_predict = 2;
  g.speculative = true;
  const std::vector<int32_t> ids = {1, 2, 3};
  try {
    generate(*model, seq, ws, pool, ids, g, [](int32_t) { return false; }, nullptr);
    ADD_FAILURE() << "speculation in a16 accepted";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("a16"), std::string::npos) << w;
    EXPECT_NE(w.find("--spec-allow-drift"), std::string::npos) << w;
    EXPECT_NE(w.find("a16q8"), std::string::npos) << w;
  }
  Sequence seq2(*model, 32);
  const GenerateResult r = generate(*model, seq2, ws, pool, ids, g, [](int32_t) { return false; }, nullptr, true);
  EXPECT_EQ(r.tokens.size(), 2u);
}
