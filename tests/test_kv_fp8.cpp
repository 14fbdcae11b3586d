// An FP8 KV cache on a real export (tools/gen_kv_fp8_fixture.py: ModelOpt W4A16 NVFP4 with its
// FP8 KV quantizers, kv_cache_quant_algo FP8, k_proj.k_scale / v_proj.v_scale per layer):
// - `--kv fp8` (f32 mode: the dequantized weights) against ModelOpt's own fake-quantized forward
//   with its KV quantizers on, and `--kv f32` against the same forward with them off: each within
//   float noise, while the two references differ by far more (the scales are used, not 1.0);
// - the same greedy tokens as ModelOpt's;
// - the scales are checked: a k scale without its v scale, a scale of 0 or NaN, a layer without
//   scales beside one with them are refused naming the tensor; a checkpoint without scales runs
//   at 1.0;
// - `run --kv fp8` says which scales it uses; `convert` to GGUF says it leaves them out;
// - `serve --kv fp8` gives run --kv fp8's tokens, alone and beside another request.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/model.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/thread_pool.h"
#include "ops/model_impl.h"
#include "arch_fixtures.h"
#include "cli_util.h"
#include "serve_util.h"
#include "st_variant.h"
#include "test_util.h"

using namespace nvfp4;
using namespace nvfp4::test::stv;

namespace {

const std::string kDir = "kv_fp8/qwen3/modelopt-w4a16-kvfp8";

nlohmann::json reference() {
  std::ifstream f(test::fixture_path("kv_fp8/qwen3/reference.json"));
  return nlohmann::json::parse(f);
}

std::vector<float> floats(const std::string& name) {
  std::ifstream f(test::fixture_path(name), std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

std::vector<float> logits(const Model& m, const std::vector<int32_t>& ids, KvType kv, int threads = 2) {
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = 64;
  co.kv = kv;
  Context ctx(m, co, pool);
  std::vector<float> out(ids.size() * static_cast<size_t>(m.config().n_vocab));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
  return out;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double w = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) w = std::max(w, std::abs(static_cast<double>(a[i]) - b[i]));
  return w;
}

std::unique_ptr<Model> load(const std::string& dir, Mode mode = Mode::f32) {
  const auto ck = Checkpoint::open(dir);
  LoadOptions lo;
  lo.mode = mode;
  return Model::load(*ck, lo);
}

}  // namespace

TEST(KvFp8Checkpoint, ScalesAreTheExportsAndLogitsMatchModelOpt) {
  const auto ref = reference();
  const auto m = load(test::fixture_path(kDir));
  const Model::Impl& mi = m->impl();
  ASSERT_TRUE(mi.kv_scales_calibrated);
  for (int64_t l = 0; l < m->config().n_layer; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".self_attn.";
    EXPECT_EQ(mi.kv_scales[static_cast<size_t>(2 * l)], ref["scales"][b + "k_proj.k_scale"].get<float>()) << l;
    EXPECT_EQ(mi.kv_scales[static_cast<size_t>(2 * l + 1)], ref["scales"][b + "v_proj.v_scale"].get<float>()) << l;
  }
  const auto ids = ref["ids"].get<std::vector<int32_t>>();
  const std::vector<float> want_fp8 = floats("kv_fp8/qwen3/logits_kvfp8.f32"), want_f32 = floats("kv_fp8/qwen3/logits_kvf32.f32");
  const std::vector<float> fp8 = logits(*m, ids, KvType::fp8), f32 = logits(*m, ids, KvType::f32);
  const double d_fp8 = max_diff(fp8, want_fp8), d_f32 = max_diff(f32, want_f32), effect = max_diff(want_fp8, want_f32);
  std::printf("FP8 KV vs ModelOpt's FP8-KV forward: max |diff| %.3g; F32 KV vs its forward without KV quantizers: %.3g; "
              "the KV quantizers move the logits by up to %.3g\n", d_fp8, d_f32, effect);
  EXPECT_GT(effect, 0.05);  // the fixture's scales matter
  // Float32 on both sides over identical weights: only the order of the sums differs (and a key
  // or value whose x / scale sat within a rounding of an E4M3 tie could land on the other side;
  // none does here: 2.9e-6 apart).
  EXPECT_LT(d_f32, 2e-3);
  EXPECT_LT(d_fp8, 2e-3);
  EXPECT_LT(d_fp8, effect / 10);
  // The same bits on 1 and 2 threads, and the FP8 cache is not the F32 one.
  EXPECT_EQ(0, std::memcmp(logits(*m, ids, KvType::fp8, 1).data(), fp8.data(), fp8.size() * 4));
  EXPECT_GT(max_diff(fp8, f32), 0.0);
  // Greedy tokens as ModelOpt's (each of its from a full forward of the sequence so far).
  ThreadPool pool(2);
  const std::vector<int32_t> greedy = test::greedy(*m, ids, 8, pool, KvType::fp8);
  EXPECT_EQ(greedy, ref["greedy"].get<std::vector<int32_t>>());
}

// llm-compressor's kv_cache_scheme: self_attn.k_scale / v_scale (F32 [1]) read as stored; the
// FP8 cache moves the logits from the F32 cache's by about what ModelOpt's scales do.
TEST(KvFp8Checkpoint, CompressedTensorsScalesAreRead) {
  const std::string dir = test::fixture_path("kv_fp8/qwen3/ct-nvfp4a16-kvfp8");
  const auto m = load(dir);
  ASSERT_TRUE(m->kv_scales_calibrated());
  const auto f = safetensors::File::open(dir + "/model.safetensors");
  int found = 0;
  for (const auto& t : f.tensors())
    for (int64_t l = 0; l < m->config().n_layer; ++l)
      for (int i = 0; i < 2; ++i)
        if (t.name == "model.layers." + std::to_string(l) + (i ? ".self_attn.v_scale" : ".self_attn.k_scale")) {
          float v;
          ASSERT_EQ(t.nbytes(), 4u);
          std::memcpy(&v, t.data, 4);
          EXPECT_EQ(m->impl().kv_scales[static_cast<size_t>(2 * l + i)], v) << t.name;
          ++found;
        }
  EXPECT_EQ(found, 2 * m->config().n_layer);
  const auto ids = reference()["ids"].get<std::vector<int32_t>>();
  const double moved = max_diff(logits(*m, ids, KvType::fp8), logits(*m, ids, KvType::f32));
  EXPECT_GT(moved, 0.0);
  EXPECT_LT(moved, 1.0);
}

TEST(KvFp8Checkpoint, ScalesAreCheckedByName) {
  Tree tmp;
  const auto refused = [&](const std::string& name, const std::function<void(Tensors&)>& edit, const std::string& want) {
    const std::string d = variant(tmp.d / name, edit, kDir);
    try {
      load(d);
      ADD_FAILURE() << name << ": loaded";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find(want), std::string::npos) << name << ": " << w;
    }
  };
  refused("no_v", [](Tensors& t) { t.erase("model.layers.1.self_attn.v_proj.v_scale"); }, "model.layers.1.self_attn.v_proj.v_scale");
  refused("zero", [](Tensors& t) { scale_f32(t, "model.layers.0.self_attn.k_proj.k_scale", 0.0f); }, "model.layers.0.self_attn.k_proj.k_scale");
  refused("nan", [](Tensors& t) { scale_f32(t, "model.layers.1.self_attn.v_proj.v_scale", std::numeric_limits<float>::quiet_NaN()); },
          "model.layers.1.self_attn.v_proj.v_scale");
  refused("one_layer", [](Tensors& t) {
    t.erase("model.layers.1.self_attn.k_proj.k_scale");
    t.erase("model.layers.1.self_attn.v_proj.v_scale");
  }, "every attention layer has them or none does");
  refused("two", [](Tensors& t) {
    t["model.layers.0.self_attn.k_proj.k_scale"].second.first = {2};
    t["model.layers.0.self_attn.k_proj.k_scale"].second.second.resize(8);
  }, "one value");
  // Without any: scale 1.0 (vLLM's default), and not said to be calibrated.
  const std::string none = variant(tmp.d / "none", [](Tensors& t) {
    for (int l = 0; l < 2; ++l) {
      t.erase("model.layers." + std::to_string(l) + ".self_attn.k_proj.k_scale");
      t.erase("model.layers." + std::to_string(l) + ".self_attn.v_proj.v_scale");
    }
  }, kDir);
  const auto m = load(none);
  EXPECT_FALSE(m->impl().kv_scales_calibrated);
  for (float s : m->impl().kv_scales) EXPECT_EQ(s, 1.0f);
  Sequence seq(*m, 8, KvType::fp8);
  EXPECT_EQ(seq.bytes(), static_cast<size_t>(2 * 2 * 32 * (16 + 8)));  // 2 layers, 2 KV heads of 32, one byte each
}

TEST(KvFp8Checkpoint, RunSaysWhichScales) {
  const test::Result with = test::cli("run -m " + test::fixture_path(kDir) + " -p hi -n 2 --ctx 32 -t 1 --kv fp8", true);
  EXPECT_EQ(with.rc, 0) << with.out;
  EXPECT_NE(with.out.find("KV cache FP8 E4M3 at the checkpoint's calibrated k/v scales"), std::string::npos) << with.out;
  const test::Result f16 = test::cli("run -m " + test::fixture_path(kDir) + " -p hi -n 2 --ctx 32 -t 1", true);
  EXPECT_EQ(f16.rc, 0) << f16.out;
  EXPECT_NE(f16.out.find("the cache is f16 (--kv fp8 stores it as FP8 E4M3 at its calibrated scales)"), std::string::npos) << f16.out;
  const test::Result bad = test::cli("run -m " + test::fixture_path(kDir) + " -p hi -n 2 --kv fp4", true);
  EXPECT_NE(bad.rc, 0) << bad.out;
  // GGUF has no place for the scales: convert says it leaves them out, and the GGUF runs at 1.0.
  Tree tmp;
  const std::string gguf = (tmp.d / "kv.gguf");
  const test::Result conv = test::cli("convert " + test::fixture_path(kDir) + " " + gguf, true);
  EXPECT_EQ(conv.rc, 0) << conv.out;
  EXPECT_NE(conv.out.find("4 FP8 KV cache scales (k_scale / v_scale) not written"), std::string::npos) << conv.out;
  const test::Result g = test::cli("run -m " + gguf + " -p hi -n 2 --ctx 32 -t 1 --kv fp8", true);
  EXPECT_EQ(g.rc, 0) << g.out;
  EXPECT_NE(g.out.find("KV cache FP8 E4M3 at k/v scale 1.0"), std::string::npos) << g.out;
}

TEST(KvFp8Checkpoint, ServeGivesRunsTokens) {
  const std::string m = test::fixture_path(kDir);
  const std::string prompt = "The capital of France is";
  const test::Result r = test::cli("run -m " + m + " -p '" + prompt + "' -n 12 --ctx 64 -t 2 --kv fp8 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto ids = test::ids_of(r);
  ASSERT_EQ(ids.size(), 12u) << r.out;
  const test::Result f16 = test::cli("run -m " + m + " -p '" + prompt + "' -n 12 --ctx 64 -t 2 --json");
  std::printf("fp8 ids == f16 ids: %s\n", test::ids_of(f16) == ids ? "yes" : "no");
  test::ServeProcess srv({"serve", "-m", m, "--port", "0", "-t", "2", "--ctx", "64", "--parallel", "2", "--kv", "fp8"});
  ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
  EXPECT_NE(srv.log().find("KV cache FP8 E4M3 at the checkpoint's calibrated k/v scales"), std::string::npos) << srv.log();
  const nlohmann::json req = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"return_tokens", true}};
  const auto alone = test::complete(srv.port(), req, false);
  ASSERT_EQ(alone.status, 200) << srv.log();
  EXPECT_EQ(alone.tokens, ids);
  // Two at once (one step holds both sequences' tokens): each the same.
  std::vector<int32_t> other;
  std::thread t([&] { other = test::complete(srv.port(), {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}, {"return_tokens", true}}, false).tokens; });
  const auto together = test::complete(srv.port(), req, false);
  t.join();
  EXPECT_EQ(together.tokens, ids);
  EXPECT_EQ(other.size(), 12u);
  EXPECT_EQ(srv.terminate(), 0) << srv.log();
}
