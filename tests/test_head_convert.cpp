// convert --head f16|q8|nvfp4: the head and embedding stored as asked (GGUF from GGUF and from HF),
// the model loads them, names the head kernel, and the Q8_0 head's logits are the same bits on
// every ISA and thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io_test_util.h"
#include "isa_scope.h"
#include "model_path.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "nvfp4/q8_0.h"
#include "nvfp4/thread_pool.h"
#include "test_util.h"

using namespace nvfp4;

namespace {

std::string describe(const Model& m) {
  std::string s;
  for (const auto& l : m.describe()) s += l + "\n";
  return s;
}

std::vector<float> logits(const Model& m, int threads) {
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = 16;
  Context ctx(m, co, pool);
  const int32_t toks[4] = {1, 504, 3458, 30};
  std::vector<float> out(static_cast<size_t>(4 * m.config().n_vocab));
  ctx.eval(toks, 4, out.data(), true);
  return out;
}

}  // namespace

TEST(HeadConvert, HfToGgufQ8IsGgmlQ8_0OfTheFloatValues) {
  test::ScratchDir dir;
  const std::string in = test::fixture_path("hf/float");
  ConvertOptions opt;
  opt.head = "q8";
  opt.verify = true;
  convert(in, dir.path + "/q8.gguf", opt);
  const auto src = Checkpoint::open(in);
  const auto dst = Checkpoint::open(dir.path + "/q8.gguf");
  int heads = 0;
  for (const char* name : {"token_embd.weight", "output.weight"}) {
    if (!src->find(name)) continue;
    ++heads;
    const TensorEntry& e = dst->tensor(name);
    EXPECT_EQ(e.storage_name, "Q8_0") << name;
    const std::vector<float> w = src->to_f32(name);
    const int64_t n_in = e.shape[1], n_out = e.shape[0];
    std::vector<uint8_t> want(static_cast<size_t>(n_out * n_in / 32 * 34));
    for (int64_t r = 0; r < n_out; ++r) quantize_row_q8_0(w.data() + r * n_in, n_in, want.data() + r * (n_in / 32 * 34));
    uint32_t type = 0;
    const void* raw = nullptr;
    ASSERT_TRUE(dst->raw_ggml(name, type, raw));
    EXPECT_EQ(0, std::memcmp(raw, want.data(), want.size())) << name;
  }
  EXPECT_GE(heads, 1);
  // A ModelOpt directory has no Q8_0: refused, naming the rule.
  EXPECT_THROW(convert(in, dir.path + "/dir", opt), Error);
}

TEST(HeadConvert, SmolLM2Q8AndNvfp4HeadsLoadAndNameTheirKernels) {
  NVFP4_REQUIRE_SMOLLM2(path);
  test::ScratchDir dir;
  const auto src = Checkpoint::open(path);
  for (const std::string head : {"q8", "nvfp4"}) {
    ConvertOptions opt;
    opt.head = head;
    opt.threads = 2;
    const std::string out = dir.path + "/" + head + ".gguf";
    convert(path, out, opt);
    const auto ck = Checkpoint::open(out);
    const TensorEntry& e = ck->tensor("token_embd.weight");
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    const auto m = Model::load(*ck, lo);
    const std::string d = describe(*m);
    if (head == "q8") {
      EXPECT_EQ(e.storage_name, "Q8_0");
      // The bundled embedding is Q8_0 already: copied byte for byte.
      uint32_t ta = 0, tb = 0;
      const void *a = nullptr, *b = nullptr;
      ASSERT_TRUE(src->raw_ggml("token_embd.weight", ta, a));
      ASSERT_TRUE(ck->raw_ggml("token_embd.weight", tb, b));
      EXPECT_EQ(0, std::memcmp(a, b, static_cast<size_t>(e.shape[0] * e.shape[1] / 32 * 34)));
      EXPECT_NE(d.find("head: Q8_0, kernel head_q8_"), std::string::npos) << d;
      EXPECT_NE(d.find("embedding Q8_0"), std::string::npos) << d;
      const std::vector<float> ref = [&] {
        test::IsaEnv s(Isa::scalar);
        return logits(*m, 1);
      }();
      for (float v : ref) ASSERT_TRUE(std::isfinite(v));
      for (Isa isa : compiled_isas()) {
        if (!isa_supported(isa)) continue;
        test::IsaEnv s(isa);
        for (int t : {1, 2, 3}) EXPECT_EQ(logits(*m, t), ref) << isa_name(isa) << " threads " << t;
      }
    } else {
      EXPECT_EQ(e.storage_name, "NVFP4");
      EXPECT_NE(d.find("head: NVFP4, kernel gemv_a16q8"), std::string::npos) << d;
      EXPECT_NE(d.find("embedding NVFP4"), std::string::npos) << d;
      for (float v : logits(*m, 2)) ASSERT_TRUE(std::isfinite(v));
    }
  }
}
