// One generation loop (include/nvfp4/speculate.h): `run` (generate.cpp) and `serve`
// (server/scheduler.cpp) share the draft length, the verify step's acceptance and the rollback.
// The pieces are held to their rules here, and the two users to each other: the same prompts,
// options and drafts through generate() and through the Scheduler give the same tokens and the
// same drafted and accepted counts, so a change to either one's loop shows.
#include <gtest/gtest.h>

#include "model_path.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/generate.h"
#include "nvfp4/speculate.h"
#include "nvfp4/tokenizer.h"
#include "server/scheduler.h"

using namespace nvfp4;

TEST(GenerationLoop, DraftLengthHalvesOnAFirstTokenRejectionAndDoublesBackOnAFullAcceptance) {
  DraftLength k;
  k.reset(8);
  k.verified(8, 0, 8);
  EXPECT_EQ(k.k(), 4);
  k.verified(4, 2, 8);  // partial: unchanged
  EXPECT_EQ(k.k(), 4);
  k.verified(4, 0, 8);
  k.verified(2, 0, 8);
  k.verified(1, 0, 8);
  EXPECT_EQ(k.k(), 1);  // at least 1
  k.verified(0, 0, 8);  // no draft: unchanged
  EXPECT_EQ(k.k(), 1);
  k.verified(1, 1, 8);
  k.verified(2, 2, 8);
  k.verified(4, 4, 8);
  k.verified(8, 8, 8);
  EXPECT_EQ(k.k(), 8);  // at most the maximum
}

TEST(GenerationLoop, VerifyDraftsAcceptsWhilePicksEqualDrafts) {
  const std::vector<int32_t> draft = {5, 6, 7};
  const auto run = [&](std::vector<Pick> picks) {
    return verify_drafts(draft, [&](size_t i) { return picks.at(i); });
  };
  Verdict v = run({{5, true, true}, {6, true, true}, {7, true, true}, {9, true, true}});
  EXPECT_EQ(v.accepted, 3u);
  EXPECT_EQ(v.kept, 3u);
  EXPECT_FALSE(v.ended);
  EXPECT_EQ(v.next, 9);
  v = run({{5, true, true}, {8, true, true}});
  EXPECT_EQ(v.accepted, 1u);
  EXPECT_EQ(v.kept, 1u);
  EXPECT_EQ(v.next, 8);
  v = run({{4, true, true}});
  EXPECT_EQ(v.accepted, 0u);
  EXPECT_EQ(v.next, 4);
  // Generation ends at a token equal to its draft (a stop string): accepted, not kept.
  v = run({{5, true, true}, {6, true, false}});
  EXPECT_EQ(v.accepted, 2u);
  EXPECT_EQ(v.kept, 1u);
  EXPECT_TRUE(v.ended);
  // An end-of-generation token is not emitted: not accepted.
  v = run({{5, false, false}});
  EXPECT_EQ(v.accepted, 0u);
  EXPECT_EQ(v.kept, 0u);
  EXPECT_TRUE(v.ended);
}

TEST(GenerationLoop, DraftLimitStopsOneShortOfTheEndAndWithinTheContext) {
  auto ck = Checkpoint::open(std::string(NVFP4_FIXTURES) + "/arch/llama/modelopt-nvfp4");
  LoadOptions lo;
  auto model = Model::load(*ck, lo);
  Sequence seq(*model, 10);
  EXPECT_EQ(draft_limit(8, seq, 100, 64), 8);
  EXPECT_EQ(draft_limit(8, seq, 5, 64), 4);   // the last row gives the fifth token
  EXPECT_EQ(draft_limit(8, seq, 100, 3), 3);  // the step's budget
  EXPECT_EQ(draft_limit(12, seq, 100, 64), 9);  // room after the fed token
}

namespace {

struct LoopOut {
  std::vector<int32_t> tokens;
  int64_t drafted = 0, accepted = 0;
};

LoopOut serve_one(const Model& model, const Tokenizer& tok, const std::vector<int32_t>& prompt, const GenerateOptions& g) {
  server::SchedulerOptions so;
  so.parallel = 1;
  so.n_ctx = 256;
  so.n_batch = 64;
  so.threads = 2;
  so.spec.ngram = true;
  so.spec.draft_max = g.draft_max;
  so.spec.lookup = g.ngram;
  so.spec.min_speedup = 0;  // never backs off, as generate() with backoff = false
  server::Metrics metrics;
  server::Scheduler sched(model, tok, so, metrics);
  auto job = std::make_shared<server::Job>();
  job->prompt = prompt;
  job->max_tokens = g.n_predict;
  job->sampling = g.sampling;
  sched.submit(job);
  LoopOut o;
  for (;;) {
    server::JobUpdate u = server::take(*job, std::chrono::milliseconds(100));
    o.tokens.insert(o.tokens.end(), u.tokens.begin(), u.tokens.end());
    o.drafted = u.n_drafted;
    o.accepted = u.n_accepted;
    if (u.done) break;
  }
  return o;
}

}  // namespace

TEST(GenerationLoop, RunAndServeMakeTheSameDraftsAndAcceptances) {
  NVFP4_REQUIRE_SMOLLM2(path);
  auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::a16q8;
  lo.quantize = true;
  auto model = Model::load(*ck, lo);
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  ThreadPool pool(2);
  Workspace ws(*model, 64);
  const char* prompts[] = {"red green blue red green blue red green blue red", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,",
                           "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n"};
  int64_t accepted = 0;
  for (const char* p : prompts) {
    for (const bool sampled : {false, true}) {
      const std::vector<int32_t> ids = tok.encode(p);
      GenerateOptions g;
      g.n_predict = kUnderSanitizer ? 8 : 20;
      g.speculative = true;
      g.backoff = false;
      g.draft_max = 4;
      if (sampled) {
        g.sampling.temperature = 0.7f;
        g.sampling.seed = 42;
      }
      Sequence seq(*model, 256);
      const GenerateResult run = generate(*model, seq, ws, pool, ids, g, [&](int32_t t) { return tok.is_eog(t); }, nullptr);
      const LoopOut serve = serve_one(*model, tok, ids, g);
      EXPECT_EQ(serve.tokens, run.tokens) << p << (sampled ? " sampled" : " greedy");
      EXPECT_EQ(serve.drafted, run.drafted) << p;
      EXPECT_EQ(serve.accepted, run.accepted) << p;
      accepted += run.accepted;
    }
  }
  EXPECT_GT(accepted, 0);
}
