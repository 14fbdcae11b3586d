// The workspace's memory (include/nvfp4/model.h, src/ops/step_impl.h): after a prompt step
// of n tokens its bytes stay within the formula of its layout (activations sharing one arena by
// lifetime, the dense MLP's gate/up rows kMlpRows wide in the integer-exact modes, attention
// scores per pool chunk), so a buffer that grows back to n_batch wide (or scores for the whole
// window) fails here; and a prompt longer than kMlpRows in one step (the MLP then runs in
// several passes) gives every position's logits bit-identical to steps that fit in one pass.
// SmolLM2 quantized at load, a16q8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "smollm2_suite.h"
#include "ops/step_impl.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

class WorkspaceMemory : public test::QuantizedSmolLM2 {
 protected:
  static std::vector<int32_t> prompt(int64_t n) {
    std::vector<int32_t> p;
    const int64_t nv = model_->config().n_vocab;
    for (int64_t i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(100 + (i * 7919) % (nv - 200)));
    return p;
  }
};

// Over kMlpRows and not a multiple of it: the last MLP pass is short.
const int64_t kLong = kUnderSanitizer ? kMlpRows + 9 : 2 * kMlpRows + 37;

TEST_F(WorkspaceMemory, BytesAfterAPromptStepAreBoundedByTheLayout) {
  const ModelConfig& c = model_->config();
  ASSERT_EQ(c.n_expert, 0);
  const int threads = 2;
  ThreadPool pool(threads);
  const int64_t n = kLong;
  Sequence seq(*model_, n);
  Workspace ws(*model_, n);
  const std::vector<int32_t> p = prompt(n);
  std::vector<StepToken> toks;
  for (int64_t i = 0; i < n; ++i) toks.push_back(StepToken{p[static_cast<size_t>(i)], &seq, i, i == n - 1});
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));
  forward(*model_, toks, ws, pool, logits.data());
  // The arena: x, xn|att, q|o, g|k, u|v; the scores of one item (at most n_head heads) per pool
  // chunk; the RoPE table (at most twice the positions, cos and sin of head_dim / 2 each).
  const int64_t wide = std::max(c.n_embd, c.q_dim());
  const int64_t ff = std::max(std::min(n, kMlpRows) * c.n_ff, n * c.kv_dim());
  const int64_t arena = n * c.n_embd + 2 * n * wide + 2 * ff;
  const int64_t scores = int64_t{threads} * ThreadPool::kChunksPerThread * c.n_head * n;
  const int64_t rope = 2 * std::max<int64_t>(64, 2 * n) * (c.head_dim / 2);
  const size_t bound = static_cast<size_t>(4 * (arena + scores + rope));
  EXPECT_LE(ws.bytes(), bound) << "n = " << n;
  EXPECT_GE(ws.bytes(), static_cast<size_t>(4 * arena));  // the arena is counted
  // What the layout saves: gate/up rows n wide and every (token, head)'s scores would not fit.
  const size_t before = static_cast<size_t>(4 * (n * (6 * c.n_embd + 2 * c.kv_dim() + 2 * c.n_ff) + n * c.n_head * n));
  EXPECT_LT(bound, before);
}

TEST_F(WorkspaceMemory, APromptOverMlpRowsInOneStepEqualsShortSteps) {
  const int64_t n = kLong, nv = model_->config().n_vocab;
  const std::vector<int32_t> p = prompt(n);
  const auto run = [&](int64_t batch, int threads) {
    ThreadPool pool(threads);
    ContextOptions co;
    co.n_ctx = n;
    co.n_batch = batch;
    Context ctx(*model_, co, pool);
    std::vector<float> out(static_cast<size_t>(n * nv));
    ctx.eval(p.data(), n, out.data(), true);
    return out;
  };
  const std::vector<float> one = run(n, 2);  // the MLP in ceil(n / kMlpRows) passes
  for (const auto& [batch, threads] : {std::pair<int64_t, int>{kMlpRows, 1}, {7, 2}}) {
    const std::vector<float> steps = run(batch, threads);
    for (int64_t t = 0; t < n; ++t)
      ASSERT_EQ(std::memcmp(one.data() + t * nv, steps.data() + t * nv, static_cast<size_t>(nv) * 4), 0)
          << "position " << t << " differs between one step of " << n << " and steps of " << batch;
  }
}

}  // namespace
