// docs/DETERMINISM.md, tested: SmolLM2 quantized to NVFP4 at load, a16q8, a 64-token prompt; the
// logits of every position are the same bits for 1 and 2 threads, prompt batches of 1, 2, 7 and 64
// tokens, and every ISA this CPU supports (force_isa, as NVFP4_ISA does).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "isa_scope.h"
#include "nvfp4/kernels.h"
#include "smollm2_suite.h"

using namespace nvfp4;

namespace {
using test::IsaEnv;
bool isa_ok(const char* isa) { return isa_supported(parse_isa(isa)); }
}  // namespace

class ModelDeterminism : public test::QuantizedSmolLM2 {};

TEST_F(ModelDeterminism, A16q8LogitsBitIdenticalAcrossThreadsBatchesIsas) {
  const Model* model = model_.get();
  std::vector<int32_t> ids = tok_->encode(
      "The NVFP4 format stores each weight in four bits with a shared eight-bit scale per sixteen "
      "values and one float scale per tensor. def f(x):\n    return [v * 2 for v in x if v > 0]\n"
      "Les modèles de langue prédisent le prochain mot. 你好，世界！");
  // 64 tokens (16 under the sanitizers, with batches 1, 7 and 16).
  const int64_t n_tok = kUnderSanitizer ? 16 : 64;
  ASSERT_GE(ids.size(), static_cast<size_t>(n_tok));
  ids.resize(static_cast<size_t>(n_tok));
  const int64_t nv = model->config().n_vocab;
  auto run = [&](int threads, int64_t batch, KvType kv = KvType::f32) {
    ThreadPool pool(threads);
    ContextOptions co;
    co.kv = kv;
    co.n_ctx = n_tok;
    co.n_batch = batch;
    Context ctx(*model, co, pool);
    std::vector<float> logits(static_cast<size_t>(n_tok * nv));
    ctx.eval(ids.data(), n_tok, logits.data(), true);
    return logits;
  };
  const std::vector<float> ref = run(2, n_tok);
  int compared = 0;
  auto same = [&](const std::vector<float>& got, const std::string& what) {
    ++compared;
    EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size() * 4)) << what;
  };
  same(run(1, n_tok), "1 thread, batch of all");
  same(run(2, 7), "2 threads, batch 7");
  same(run(1, 1), "1 thread, batch 1");
  // Decoding-sized calls take attention's three-phase path (keys, heads and dimensions split
  // across the threads): 1 and 2 tokens per call on 2 threads.
  same(run(2, 1), "2 threads, batch 1");
  same(run(2, 2), "2 threads, batch 2");
  for (const char* isa : {"scalar", "avx2", "avxvnni", "avx512"}) {
    if (!isa_ok(isa)) continue;
    IsaEnv e(isa);
    EXPECT_EQ(isa_name(active_isa()), std::string_view(isa));
    same(run(2, n_tok), std::string("ISA ") + isa);
    if (std::string_view(isa) != "scalar") same(run(2, 1), std::string("ISA ") + isa + ", batch 1");
  }
  EXPECT_GE(compared, 7);
  // The F16 KV cache: pinned as well (batches and threads agree).
  const std::vector<float> h_all = run(2, n_tok, KvType::f16), h_7 = run(1, 7, KvType::f16),
                           h_1 = run(2, 1, KvType::f16);
  EXPECT_EQ(0, std::memcmp(h_all.data(), h_7.data(), h_all.size() * 4));
  EXPECT_EQ(0, std::memcmp(h_all.data(), h_1.data(), h_all.size() * 4));
  // (Its distance from the F32 cache is checked in f32 mode, test_model_reference.cpp: in a16q8 any
  // perturbation moves int8 roundings and the logits by the mode's own noise, max ~3 here.)
}
