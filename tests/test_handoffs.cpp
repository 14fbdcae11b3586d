// Pool hand-offs (ThreadPool::dispatches) of one decode token of a dense Llama model at 2 threads,
// held to the count of the fused step, so that a regression that adds a dispatch fails. Per layer:
// q/k/v (one dispatch), attention scores with each item's softmax, attention output, o, gate/up
// with SwiGLU, down: 6; the head: 1. An F16 cache is read as stored (widened in registers), with no
// dispatch of its own. One thread hands nothing off. The tiny llama fixture (2 layers) always; SmolLM2 (30 layers) when present.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model_path.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/model.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

// Hand-offs of one decode token after a prompt of 9 tokens.
uint64_t decode_handoffs(const Model& m, int threads, KvType kv) {
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = 32;
  co.n_batch = 16;
  co.kv = kv;
  Context ctx(m, co, pool);
  std::vector<int32_t> ids = {1, 17, 42, 5, 99, 3, 64, 8, 21};
  std::vector<float> logits(static_cast<size_t>(m.config().n_vocab));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), logits.data());
  const uint64_t d0 = pool.dispatches();
  const int32_t next = 7;
  ctx.eval(&next, 1, logits.data());
  return pool.dispatches() - d0;
}

void expect_fused(const Model& m, const std::string& what) {
  const uint64_t layers = static_cast<uint64_t>(m.config().n_layer);
  const uint64_t f32 = decode_handoffs(m, 2, KvType::f32), f16 = decode_handoffs(m, 2, KvType::f16);
  EXPECT_GT(f32, 0u) << what;
  EXPECT_LE(f32, 6 * layers + 1) << what << ": hand-offs of one decode token, F32 cache";
  EXPECT_LE(f16, 6 * layers + 1) << what << ": hand-offs of one decode token, F16 cache";
  EXPECT_EQ(decode_handoffs(m, 1, KvType::f32), 0u) << what;
}

}  // namespace

TEST(Handoffs, DecodeTokenOfTinyLlama) {
  auto ck = Checkpoint::open(test::fixture_path("arch/llama/modelopt-nvfp4"));
  for (Mode mode : {Mode::a16q8, Mode::w4a4}) {
    LoadOptions lo;
    lo.mode = mode;
    auto m = Model::load(*ck, lo);
    expect_fused(*m, std::string(mode_name(mode)));
  }
}

TEST(Handoffs, DecodeTokenOfSmolLM2) {
  const std::string path = test::smollm2_path();
  if (path.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found: run scripts/setup.sh or set NVFP4_SMOLLM2_GGUF";
  auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::a16q8;
  lo.quantize = true;
  auto m = Model::load(*ck, lo);
  expect_fused(*m, "SmolLM2 a16q8");
}
