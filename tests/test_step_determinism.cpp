// Steps over several sequences (include/nvfp4/model.h: forward over a flat list of tokens with
// their sequence and position): 4 sequences of different lengths stepped together in several
// interleavings give every position's logits bit-identical (a16q8) to each sequence run alone,
// for 1 and 2 threads, every ISA this CPU has, and F32 and F16 caches (the reference always runs
// on the best ISA: the ISAs agree with each other too). SmolLM2 quantized at load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "smollm2_suite.h"
#include "isa_scope.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/tokenizer.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

using test::IsaEnv;

// A schedule: steps, each a list of (sequence, token count) in step order.
using Schedule = std::vector<std::vector<std::pair<int, int64_t>>>;

class StepDeterminism : public test::QuantizedSmolLM2 {
 protected:
  static void SetUpTestSuite() {
    test::QuantizedSmolLM2::SetUpTestSuite();
    if (!model_) return;
    const char* texts[4] = {
        "The NVFP4 format stores each weight in four bits with a shared eight-bit scale per sixteen values.",
        "def f(x):\n    return [v * 2 for v in x]",
        ("Les modèles de langue prédisent le prochain mot, un jeton après l'autre, pour toujours et à jamais, "
         "sans jamais se lasser de la tâche qui leur est confiée."),
        "你好"};
    const int64_t lens[4] = {kUnderSanitizer ? 7 : 13, 5, kUnderSanitizer ? 11 : 21, 3};
    for (int s = 0; s < 4; ++s) {
      std::vector<int32_t> ids = tok_->encode(texts[s]);
      ids.resize(static_cast<size_t>(lens[s]), 17);  // pads with a fixed id when the text is short
      prompts_.push_back(ids);
    }
  }

  int64_t nv() const { return model_->config().n_vocab; }

  // Logits of every position of sequence s, run alone in one step.
  std::vector<float> alone(int s, int threads, KvType kv) const {
    ThreadPool pool(threads);
    const auto& p = prompts_[static_cast<size_t>(s)];
    ContextOptions co;
    co.n_ctx = static_cast<int64_t>(p.size());
    co.n_batch = co.n_ctx;
    co.kv = kv;
    Context ctx(*model_, co, pool);
    std::vector<float> out(p.size() * static_cast<size_t>(nv()));
    ctx.eval(p.data(), static_cast<int64_t>(p.size()), out.data(), true);
    return out;
  }

  // Runs the schedule over the 4 sequences; returns each sequence's logits of every position.
  std::vector<std::vector<float>> together(const Schedule& sched, int threads, KvType kv) const {
    ThreadPool pool(threads);
    std::vector<Sequence> seqs;
    for (const auto& p : prompts_) seqs.emplace_back(*model_, static_cast<int64_t>(p.size()), kv);
    std::vector<std::vector<float>> out;
    for (const auto& p : prompts_) out.emplace_back(p.size() * static_cast<size_t>(nv()));
    Workspace ws(*model_, 128);
    for (const auto& step : sched) {
      std::vector<StepToken> toks;
      std::vector<std::pair<int, int64_t>> where;  // (sequence, position) of each logits row
      std::map<int, int64_t> next;
      for (const auto& [s, count] : step) {
        int64_t& pos = next.try_emplace(s, seqs[static_cast<size_t>(s)].pos()).first->second;
        for (int64_t i = 0; i < count; ++i, ++pos) {
          toks.push_back(StepToken{prompts_[static_cast<size_t>(s)][static_cast<size_t>(pos)], &seqs[static_cast<size_t>(s)], pos, true});
          where.emplace_back(s, pos);
        }
      }
      std::vector<float> logits(toks.size() * static_cast<size_t>(nv()));
      forward(*model_, toks, ws, pool, logits.data());
      for (size_t r = 0; r < where.size(); ++r)
        std::memcpy(out[static_cast<size_t>(where[r].first)].data() + where[r].second * nv(), logits.data() + r * static_cast<size_t>(nv()),
                    static_cast<size_t>(nv()) * 4);
    }
    for (size_t s = 0; s < seqs.size(); ++s) EXPECT_EQ(seqs[s].pos(), static_cast<int64_t>(prompts_[s].size()));
    return out;
  }

  // Schedules that cover every token of every sequence exactly once, in order.
  std::vector<std::pair<std::string, Schedule>> schedules() const {
    std::vector<std::pair<std::string, Schedule>> out;
    const auto len = [&](int s) { return static_cast<int64_t>(prompts_[static_cast<size_t>(s)].size()); };
    Schedule all_at_once{{{0, len(0)}, {1, len(1)}, {2, len(2)}, {3, len(3)}}};
    out.emplace_back("all prompts in one step", all_at_once);
    // Token by token, all four sequences per step (decode-sized steps while they last).
    Schedule decode;
    for (int64_t p = 0; p < 64; ++p) {
      std::vector<std::pair<int, int64_t>> step;
      for (int s : {2, 0, 3, 1})
        if (p < len(s)) step.emplace_back(s, 1);
      if (!step.empty()) decode.push_back(step);
    }
    out.emplace_back("one token of each per step", decode);
    // Chunked prefill beside decoding: sequence 2 in chunks of 5, the others one token a step.
    Schedule chunked;
    std::vector<int64_t> done(4, 0);
    while (done[0] < len(0) || done[1] < len(1) || done[2] < len(2) || done[3] < len(3)) {
      std::vector<std::pair<int, int64_t>> step;
      for (int s : {0, 1, 3})
        if (done[static_cast<size_t>(s)] < len(s)) {
          step.emplace_back(s, 1);
          ++done[static_cast<size_t>(s)];
        }
      const int64_t k = std::min<int64_t>(5, len(2) - done[2]);
      if (k > 0) {
        step.insert(step.begin() + 1, {2, k});
        done[2] += k;
      }
      chunked.push_back(step);
    }
    out.emplace_back("chunks of 5 beside single tokens", chunked);
    // Random step sizes and orders (seeded).
    test::Rng rng(42);
    Schedule random;
    std::fill(done.begin(), done.end(), 0);
    while (done[0] < len(0) || done[1] < len(1) || done[2] < len(2) || done[3] < len(3)) {
      std::vector<std::pair<int, int64_t>> step;
      const int first = static_cast<int>(rng.next() % 4);
      for (int j = 0; j < 4; ++j) {
        const int s = (first + j) % 4;
        const int64_t left = len(s) - done[static_cast<size_t>(s)];
        if (left == 0 || rng.next() % 3 == 0) continue;
        const int64_t k = std::min<int64_t>(left, 1 + static_cast<int64_t>(rng.next() % 17));
        step.emplace_back(s, k);
        done[static_cast<size_t>(s)] += k;
      }
      if (!step.empty()) random.push_back(step);
    }
    out.emplace_back("random step sizes and orders", random);
    return out;
  }

  static inline std::vector<std::vector<int32_t>> prompts_;
};

}  // namespace

// The best ISA takes every schedule on 1 and 2 threads with both cache types; the others (slower,
// the scalar one much slower) every schedule, or the random one, on 2 threads with an F32 cache.
TEST_F(StepDeterminism, SequencesSteppedTogetherEqualEachAlone) {
  int compared = 0;
  const Isa best = detect_isa();
  for (const KvType kv : {KvType::f32, KvType::f16, KvType::fp8}) {
    std::vector<std::vector<float>> ref;
    for (int s = 0; s < 4; ++s) ref.push_back(alone(s, 2, kv));
    for (const Isa isa : supported_isas()) {
      if (isa != best && kv != KvType::f32) continue;
      IsaEnv env(isa);
      for (const int threads : {1, 2}) {
        if ((kUnderSanitizer || isa != best) && threads == 1) continue;
        for (const auto& [what, sched] : schedules()) {
          if ((kUnderSanitizer || isa == Isa::scalar) && what != "random step sizes and orders") continue;
          const auto got = together(sched, threads, kv);
          for (int s = 0; s < 4; ++s) {
            ++compared;
            EXPECT_EQ(0, std::memcmp(got[static_cast<size_t>(s)].data(), ref[static_cast<size_t>(s)].data(),
                                     ref[static_cast<size_t>(s)].size() * 4))
                << what << ", sequence " << s << ", " << isa_name(isa) << ", " << threads << " threads, KV "
                << (kv == KvType::f16 ? "f16" : kv == KvType::fp8 ? "fp8" : "f32");
          }
        }
      }
    }
  }
  EXPECT_GE(compared, kUnderSanitizer ? 4 * 4 : 4 * 4 * 2 * 3);
}

TEST_F(StepDeterminism, StepsAreValidatedBeforeAnythingRuns) {
  ThreadPool pool(1);
  Sequence a(*model_, 8), b(*model_, 8);
  Workspace ws(*model_, 4);
  std::vector<float> logits(static_cast<size_t>(nv()) * 4);
  const auto refused = [&](std::vector<StepToken> toks, const std::string& rule) {
    try {
      forward(*model_, toks, ws, pool, logits.data());
      ADD_FAILURE() << "accepted: " << rule;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
    EXPECT_EQ(a.pos(), 0);
    EXPECT_EQ(b.pos(), 0);
  };
  refused({{1, &a, 1, true}}, "position");                           // must start at pos() = 0
  refused({{1, &a, 0, false}, {2, &a, 0, true}}, "position");        // positions must continue
  refused({{1, &a, 0, false}, {2, &b, 0, false}, {3, &a, 2, true}}, "position");
  refused({{-1, &a, 0, true}}, "token id out of range");
  refused({{1, nullptr, 0, true}}, "without a sequence");
  refused({{1, &a, 0, false}, {1, &a, 1, false}, {1, &a, 2, false}, {1, &a, 3, false}, {1, &b, 0, true}}, "tokens in one step");
  // A sequence that would overflow its cache.
  Sequence tiny(*model_, 1);
  try {
    forward(*model_, std::vector<StepToken>{{1, &tiny, 0, false}, {2, &tiny, 1, true}}, ws, pool, logits.data());
    ADD_FAILURE() << "overflow accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("context full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tiny.pos(), 0);
  // truncate() keeps a prefix and refuses more than it holds.
  forward(*model_, std::vector<StepToken>{{1, &a, 0, false}, {2, &a, 1, true}}, ws, pool, logits.data());
  EXPECT_EQ(a.pos(), 2);
  a.truncate(1);
  EXPECT_EQ(a.pos(), 1);
  EXPECT_THROW(a.truncate(2), Error);
}

// A prefix copied from another sequence (the server's prompt cache across slots) gives the later
// positions the logits (==) of the sequence that computed it all: both cache types on the best ISA,
// the F32 one on the others.
// A copy between different contexts, or of more than the source holds, is refused.
TEST_F(StepDeterminism, CopiedPrefixContinuesAsComputingItAgain) {
  const auto& p = prompts_[2];
  const int64_t n = static_cast<int64_t>(p.size()), cut = n / 2 + 1;  // an odd cut: a partial key tile
  const Isa best = detect_isa();
  for (const Isa isa : supported_isas()) {
    if (kUnderSanitizer && isa != best) continue;  // the sanitizer build: the best ISA only (scalar takes minutes)
    IsaEnv scope(isa);
    for (KvType kv : {KvType::f32, KvType::f16, KvType::fp8}) {
      if (isa != best && kv != KvType::f32) continue;  // other ISAs: the F32 cache (test_attention_f16.cpp holds F16 and FP8 to it on each)
      SCOPED_TRACE(std::string(isa_name(isa)) + (kv == KvType::f16 ? " f16" : kv == KvType::fp8 ? " fp8" : " f32"));
      const std::vector<float> ref = alone(2, 2, kv);
      ThreadPool pool(2);
      Workspace ws(*model_, n);
      Sequence src(*model_, n, kv), dst(*model_, n, kv);
      std::vector<StepToken> toks;
      for (int64_t i = 0; i < cut; ++i) toks.push_back({p[static_cast<size_t>(i)], &src, i, false});
      std::vector<float> logits(static_cast<size_t>(n * nv()));
      forward(*model_, toks, ws, pool, logits.data());
      // A sequence that held something else first.
      toks.clear();
      for (int64_t i = 0; i < 3; ++i) toks.push_back({p[static_cast<size_t>(n - 1 - i)], &dst, i, false});
      forward(*model_, toks, ws, pool, logits.data());
      dst.copy_prefix(src, cut);
      EXPECT_EQ(dst.pos(), cut);
      toks.clear();
      for (int64_t i = cut; i < n; ++i) toks.push_back({p[static_cast<size_t>(i)], &dst, i, true});
      forward(*model_, toks, ws, pool, logits.data());
      for (int64_t i = cut; i < n; ++i)
        ASSERT_EQ(0, std::memcmp(logits.data() + (i - cut) * nv(), ref.data() + i * nv(), static_cast<size_t>(nv()) * 4))
            << "position " << i;
    }
  }
  Sequence a(*model_, 16), b(*model_, 32), c(*model_, 16, KvType::f16), d(*model_, 16, KvType::fp8);
  EXPECT_THROW(b.copy_prefix(a, 0), Error);
  EXPECT_THROW(c.copy_prefix(a, 0), Error);
  EXPECT_THROW(d.copy_prefix(c, 0), Error);
  EXPECT_THROW(a.copy_prefix(a, 1), Error);  // holds nothing yet
}
