// The mixed-precision fixtures of the real producers (tools/gen_mixed_fixtures.py: ModelOpt
// MIXED_PRECISION and compressed-tensors mixed-precision; dense, MoE and Nemotron-H with FP8 Mamba-2):
// - f32 logits against transformers on the same dequantized weights (tools/mixed_reference.py,
//   which dequantizes FP8 and NVFP4 without our code), and the same greedy tokens;
// - an NVFP4 lm_head (NVIDIA's mixed checkpoints quantize it W4A16) or embedding keeps its own
//   weight_scale_2: a scale ignored there would shift every logit silently. Doubling
//   lm_head.weight_scale_2 must double every logit exactly (a power of two) in every mode; an
//   NVFP4 embedding whose scale is doubled must move them;
// - malformed CSF-compressed block scales are refused by name (the good ones:
//   test_scaled_fp8_checkpoints.cpp).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "io_test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/convert.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/thread_pool.h"
#include "nvfp4/verify.h"
#include "test_util.h"
#include "st_variant.h"

using namespace nvfp4;
using namespace nvfp4::test::stv;
namespace st = nvfp4::safetensors;
namespace fs = std::filesystem;

namespace {

const std::string kDir = "mixed/qwen3/modelopt-mixed";

// A model's load log (Model::describe), one line each.
std::string describe_text(const Model& m) {
  std::string text;
  for (const auto& l : m.describe()) text += l + "\n";
  return text;
}

std::vector<float> logits(const std::string& dir, Mode mode, std::vector<int32_t> ids = {17, 250, 3, 99, 402, 7}) {
  const auto ck = Checkpoint::open(dir);
  LoadOptions lo;
  lo.mode = mode;
  const auto m = Model::load(*ck, lo);
  ThreadPool pool(2);
  ContextOptions co;
  co.n_ctx = 32;
  Context ctx(*m, co, pool);
  std::vector<float> out(ids.size() * static_cast<size_t>(m->config().n_vocab));
  ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
  return out;
}

}  // namespace

TEST(MixedCheckpoints, Nvfp4LmHeadHonoursItsScale2) {
  const auto ck = Checkpoint::open(test::fixture_path(kDir));
  ASSERT_EQ(ck->tensor("output.weight").storage, Storage::nvfp4);
  Tree tmp;
  const std::string doubled = variant(tmp.d / "doubled", [](Tensors& t) { scale_f32(t, "lm_head.weight_scale_2", 2.0f); }, kDir);
  for (const Mode mode : {Mode::a16q8, Mode::f32}) {
    const auto a = logits(test::fixture_path(kDir), mode), b = logits(doubled, mode);
    ASSERT_EQ(a.size(), b.size());
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); ++i) bad += b[i] != 2.0f * a[i];
    EXPECT_EQ(bad, 0u) << mode_name(mode) << ": logits not doubled by lm_head.weight_scale_2 x 2";
  }
}

TEST(MixedCheckpoints, Nvfp4EmbeddingHonoursItsScale2) {
  // The embedding made NVFP4 from the head's own NVFP4 tensors (same [vocab, hidden] shape), and
  // declared so; then its scale doubled: every hidden state changes, so the logits must.
  Tree tmp;
  const auto as_embedding = [](Tensors& t) {
    for (const char* s : {"", "_scale", "_scale_2"})
      t[std::string("model.embed_tokens.weight") + s] = t.at(std::string("lm_head.weight") + s);
  };
  const std::string plain = variant(tmp.d / "emb", as_embedding, kDir);
  const std::string doubled = variant(tmp.d / "emb2", [&](Tensors& t) {
    as_embedding(t);
    scale_f32(t, "model.embed_tokens.weight_scale_2", 2.0f);
  }, kDir);
  for (const std::string& d : {plain, doubled}) {
    nlohmann::json h;
    std::ifstream(d + "/hf_quant_config.json") >> h;
    h["quantization"]["quantized_layers"]["model.embed_tokens"] = {{"quant_algo", "W4A16_NVFP4"}, {"group_size", 16}};
    std::ofstream(d + "/hf_quant_config.json") << h.dump();
  }
  ASSERT_EQ(Checkpoint::open(plain)->tensor("token_embd.weight").storage, Storage::nvfp4);
  for (const Mode mode : {Mode::a16q8, Mode::f32}) {
    const auto a = logits(plain, mode), b = logits(doubled, mode);
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
    EXPECT_LT(same, a.size() / 10) << mode_name(mode) << ": the embedding's weight_scale_2 was not applied";
  }
}

TEST(MixedCheckpoints, F32LogitsMatchTransformersOnTheDequantizedWeights) {
  for (const char* arch : {"qwen3", "qwen3_moe_i64", "nemotron_h", "nemotron_h_latent"}) {
    std::ifstream f(test::fixture_path(std::string("mixed/") + arch + "/reference.json"));
    ASSERT_TRUE(f) << arch;
    const auto ref = nlohmann::json::parse(f);
    ASSERT_EQ(ref.size(), std::string(arch) == "nemotron_h" ? 3u : 2u) << arch;  // modelopt-mixed, ct-mixed (, modelopt-selective)
    for (const auto& [form, r] : ref.items()) {
      const std::string dir = test::fixture_path(std::string("mixed/") + arch + "/" + form);
      const auto ids = r["ids"].get<std::vector<int32_t>>();
      const auto lg = logits(dir, Mode::f32, ids);
      const size_t nv = lg.size() / ids.size();
      double worst = 0;
      for (size_t p = 0; p < ids.size(); ++p)
        for (size_t v = 0; v < nv; ++v) worst = std::max(worst, std::abs(static_cast<double>(lg[p * nv + v]) - r["logits"][p][v].get<double>()));
      // Both sides run float32 on identical weights; only the order of the sums differs.
      EXPECT_LT(worst, 2e-3) << arch << "/" << form;
      std::printf("%s/%s: f32 against transformers, max |diff| %.2e\n", arch, form.c_str(), worst);
      // Greedy continuation: the engine's own context, token by token.
      const auto ck = Checkpoint::open(dir);
      LoadOptions lo;
      lo.mode = Mode::f32;
      const auto m = Model::load(*ck, lo);
      ThreadPool pool(2);
      ContextOptions co;
      co.n_ctx = 32;
      co.kv = KvType::f32;
      Context ctx(*m, co, pool);
      std::vector<float> row(nv);
      ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), row.data());
      std::vector<int32_t> greedy;
      for (int k = 0; k < 8; ++k) {
        const int32_t t = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
        greedy.push_back(t);
        ctx.eval(&t, 1, row.data());
      }
      EXPECT_EQ(greedy, r["greedy"].get<std::vector<int32_t>>()) << arch << "/" << form;
    }
  }
}

TEST(MixedCheckpoints, MalformedCsfScalesRefusedByName) {
  Tree tmp;
  const std::string d = variant(tmp.d / "csf", [](Tensors& t) {
    const std::string m = "model.layers.0.mlp.up_proj.weight_scale";
    t[m + ".nvfp4_csf_fixed"] = {st::Dtype::U8, {{8}, std::vector<uint8_t>(8, 1)}};
    t[m + ".nvfp4_csf_exceptions"] = {st::Dtype::U32, {{1}, std::vector<uint8_t>(4, 0)}};
    t.erase(m);
  }, kDir);
  try {
    Checkpoint::open(d);
    FAIL() << "accepted";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("CSF"), std::string::npos) << w;
    EXPECT_NE(w.find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << w;
  }
}

// NVIDIA's mixed checkpoints declare kv_cache_quant_algo FP8; the cache is not FP8 here, and run
// says so at load instead of ignoring it without a word.
TEST(MixedCheckpoints, DeclaredFp8KvCacheIsNamedAtLoad) {
  Tree tmp;
  const std::string d = variant(tmp.d / "kv", [](Tensors&) {}, kDir);
  nlohmann::json h;
  std::ifstream(d + "/hf_quant_config.json") >> h;
  h["quantization"]["kv_cache_quant_algo"] = "FP8";
  std::ofstream(d + "/hf_quant_config.json") << h.dump();
  const auto run = [](const std::string& m) {
    const std::string cmd = std::string(NVFP4_BINARY) + " run -m " + m + " -p hi -n 1 --ctx 16 -t 1 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << out;
    return out;
  };
  const std::string with = run(d);
  EXPECT_NE(with.find("hf_quant_config.json declares kv_cache_quant_algo FP8"), std::string::npos) << with;
  EXPECT_NE(with.find("the cache is f16"), std::string::npos) << with;
  EXPECT_EQ(run(test::fixture_path(kDir)).find("kv_cache"), std::string::npos);  // null: nothing to say
}

// compressed-tensors' optional X.weight_shape (some versions store it, some do not; a file may mix
// layers with and without): read when it matches the packed weight, refused naming it otherwise.
TEST(MixedCheckpoints, CompressedTensorsWeightShapeOptional) {
  Tree tmp;
  const std::string m = "model.layers.0.mlp.up_proj";
  const auto shape = [&](std::vector<int64_t> v) {
    return [m, v](Tensors& t) {
      std::vector<uint8_t> b(16);
      std::memcpy(b.data(), v.data(), 16);
      t[m + ".weight_shape"] = {st::Dtype::I64, {{2}, b}};
    };
  };
  const std::string ok = variant(tmp.d / "ok", shape({128, 64}), "mixed/qwen3/ct-mixed");
  EXPECT_EQ(Checkpoint::open(ok)->tensor("blk.0.ffn_up.weight").storage, Storage::nvfp4);
  const std::string bad = variant(tmp.d / "bad", shape({64, 128}), "mixed/qwen3/ct-mixed");
  try {
    Checkpoint::open(bad);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.tensor(), m + ".weight_shape");
    EXPECT_NE(std::string(e.what()).find("[64, 128]"), std::string::npos) << e.what();
  }
}

// A mixed checkpoint in the default mode: its FP8 layers take the integer-exact kernel (named at
// load), so its logits have the same bits on every ISA, with one and two threads, and whether the
// prompt runs in one step or a token at a time (docs/DETERMINISM.md).
namespace {
// Logits of ids in a16q8 with the ISA forced, one step or token by token.
std::vector<float> a16q8_logits(const Model& m, const std::vector<int32_t>& ids, int threads, bool one_step) {
  const size_t nv = static_cast<size_t>(m.config().n_vocab);
  ThreadPool pool(threads);
  ContextOptions co;
  co.n_ctx = 32;
  Context ctx(m, co, pool);
  std::vector<float> out(ids.size() * nv);
  if (one_step) ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
  else
    for (size_t p = 0; p < ids.size(); ++p) ctx.eval(&ids[p], 1, out.data() + p * nv);
  return out;
}
}  // namespace

// convert to GGUF writes a mixed checkpoint's FP8 layers as Q8_0 (GGUF has no FP8 type), naming
// the error each adds; the GGUF runs them integer-exact (the Q8_0 head's kernel: the same bits on
// every ISA and step composition), its logits within Q8_0's error of the directory's.
TEST(MixedCheckpoints, ConvertToGgufWritesFp8AsQ8_0) {
  const std::vector<int32_t> ids = {17, 250, 3, 99, 402, 7};
  for (const char* dir : {"mixed/qwen3/modelopt-mixed", "mixed/qwen3/ct-mixed", "mixed/qwen3_moe_i64/ct-mixed"}) {
    test::ScratchDir tmp;
    const std::string out = tmp / "m.gguf";
    ConvertOptions co;
    co.head = "f16";  // the embedding as it is (BF16 values are F16 values here): only the FP8 layers change
    const ConvertReport r = convert(test::fixture_path(dir), out, co);
    EXPECT_EQ(r.fp8_to_q8, 8) << dir;  // 2 layers x q, k, v, o
    size_t noted = 0;
    for (const auto& n : r.notes) noted += n.find("FP8 -> Q8_0") != std::string::npos && n.find("relative RMS error") != std::string::npos;
    EXPECT_EQ(noted, 8u) << dir;
    const auto ck_g = Checkpoint::open(out), ck_d = Checkpoint::open(test::fixture_path(dir));
    EXPECT_EQ(ck_g->tensor("blk.0.attn_q.weight").storage_name, "Q8_0") << dir;
    LoadOptions lo;
    const auto mg = Model::load(*ck_g, lo), md = Model::load(*ck_d, lo);
    const std::string text = describe_text(*mg);
    EXPECT_NE(text.find("8 Q8_0 integer-exact"), std::string::npos) << text;
    const std::vector<float> first = a16q8_logits(*mg, ids, 1, true), dirs = a16q8_logits(*md, ids, 2, true);
    for (const Isa isa : compiled_isas()) {
      if (!isa_supported(isa)) continue;
      force_isa(isa);
      for (bool one_step : {true, false}) {
        const std::vector<float> y = a16q8_logits(*mg, ids, 2, one_step);
        EXPECT_EQ(std::memcmp(y.data(), first.data(), y.size() * 4), 0) << dir << " " << isa_name(isa) << " one step " << one_step;
      }
      clear_forced_isa();
    }
    double worst = 0, range = 0;
    for (size_t k = 0; k < first.size(); ++k) {
      worst = std::max(worst, std::fabs(static_cast<double>(first[k]) - dirs[k]));
      range = std::max(range, std::fabs(static_cast<double>(dirs[k])));
    }
    EXPECT_LT(worst, 0.05 * range) << dir;  // Q8_0 of the FP8 weights: a relative RMS error near 5e-3 each
    EXPECT_GT(worst, 0.0) << dir;           // (requantized: not the directory's bits)
  }
}

TEST(MixedCheckpoints, A16q8LogitsSameBitsOnEveryIsaThreadsAndSteps) {
  // 17 tokens: one step of them is a window the AMX form takes (8+ columns, 16+ for the scaled forms).
  const std::vector<int32_t> ids = {17, 250, 3, 99, 402, 7, 61, 8, 300, 45, 2, 199, 77, 5, 350, 12, 90};
  for (const char* dir : {"mixed/qwen3/modelopt-mixed", "mixed/qwen3/ct-mixed", "mixed/qwen3_moe_i64/modelopt-mixed",
                          "mixed/qwen3_moe_i64/ct-mixed", "mixed/qwen3/modelopt-mxfp8", "mixed/qwen3/modelopt-mxfp8-mix",
                          "mixed/qwen3/ct-mxfp8", "mixed/qwen3/modelopt-fp8-block", "mixed/qwen3/ct-fp8-block",
                          "mixed/qwen3/deepseek-fp8-block", "mixed/nemotron_h/modelopt-mixed", "mixed/nemotron_h/ct-mixed",
                          "mixed/nemotron_h_latent/modelopt-mixed", "mixed/nemotron_h_latent/ct-mixed"}) {
    const auto ck = Checkpoint::open(test::fixture_path(dir));
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    const auto m = Model::load(*ck, lo);
    const std::string text = describe_text(*m);
    EXPECT_NE(text.find("FP8 kernel fp8_q8_"), std::string::npos) << dir << "\n" << text;
    const size_t nv = static_cast<size_t>(m->config().n_vocab);
    std::vector<float> first;
    for (const Isa isa : compiled_isas()) {
      if (!isa_supported(isa)) continue;
      force_isa(isa);
      for (int threads : {1, 2}) {
        for (bool one_step : {true, false}) {
          ThreadPool pool(threads);
          ContextOptions co;
          co.n_ctx = 32;
          Context ctx(*m, co, pool);
          std::vector<float> out(ids.size() * nv);
          if (one_step) {
            ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), out.data(), true);
          } else {
            for (size_t p = 0; p < ids.size(); ++p) ctx.eval(&ids[p], 1, out.data() + p * nv);
          }
          if (first.empty()) {
            first = out;
            continue;
          }
          size_t diff = 0;
          for (size_t k = 0; k < out.size(); ++k) diff += std::memcmp(&out[k], &first[k], 4) != 0;
          EXPECT_EQ(diff, 0u) << dir << " " << isa_name(isa) << " threads " << threads << (one_step ? " one step" : " token by token");
        }
      }
      clear_forced_isa();
    }
    first.clear();
  }
}

// convert to a directory keeps every FP8 form as the input stores it (weight, scale and input
// scale byte for byte, declared as ModelOpt names the form), NVFP4 bit for bit: `verify` finds
// every FP8 layer the same, and the logits are the same bits in a16q8 and f32. A Llama with
// permuted q/k rows (fixtures/hf/mixed) and experts named once (the MoE) included. With --quantize
// naming the attention, verify lists those FP8 layers as held in another form; so for GGUF (Q8_0).
TEST(MixedCheckpoints, ConvertToDirectoryKeepsFp8AsStored) {
  for (const char* dir : {"mixed/qwen3/modelopt-mixed", "mixed/qwen3/ct-mixed", "mixed/qwen3/modelopt-mxfp8-mix", "mixed/qwen3/ct-mxfp8",
                          "mixed/qwen3/modelopt-fp8-block", "mixed/qwen3/deepseek-fp8-block", "mixed/qwen3_moe_i64/modelopt-mixed",
                          "mixed/nemotron_h/modelopt-mixed", "mixed/nemotron_h_latent/ct-mixed", "hf/mixed"}) {
    test::ScratchDir tmp;
    const std::string in = test::fixture_path(dir), out = tmp / "d";
    ConvertOptions co;
    co.verify = true;
    const ConvertReport r = convert(in, out, co);
    EXPECT_TRUE(r.verified) << dir;
    EXPECT_GT(r.fp8_kept, 0) << dir;
    const VerifyResult v = verify_checkpoints(in, out);
    EXPECT_TRUE(v.same) << dir << ": " << v.difference;
    EXPECT_EQ(v.fp8_same, r.fp8_kept) << dir;
    EXPECT_TRUE(v.fp8_changed.empty()) << dir;
    const auto ci = Checkpoint::open(in), cd = Checkpoint::open(out);
    for (const TensorEntry& e : ci->tensors())
      if (e.storage == Storage::fp8) {
        EXPECT_EQ(cd->tensor(e.name).storage_name, e.storage_name) << dir << " " << e.name;
      }
    for (const Mode mode : {Mode::a16q8, Mode::f32}) {
      const std::vector<int32_t> ids = {17, 25, 3, 9, 30, 7};  // (hf/mixed: a vocabulary of 32)
      const auto a = logits(in, mode, ids), b = logits(out, mode, ids);
      ASSERT_EQ(a.size(), b.size()) << dir;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << dir << " " << mode_name(mode);
    }
  }
  test::ScratchDir tmp;
  const std::string in = test::fixture_path("mixed/qwen3/modelopt-mixed");
  ConvertOptions co;
  co.quantize = {"blk.*.attn_*"};
  const ConvertReport r = convert(in, tmp / "q", co);
  EXPECT_EQ(r.fp8_kept, 0);
  EXPECT_EQ(r.quantized, 8);
  VerifyResult v = verify_checkpoints(in, tmp / "q");
  EXPECT_TRUE(v.same) << v.difference;
  ASSERT_EQ(v.fp8_changed.size(), 8u);
  EXPECT_NE(v.fp8_changed[0].find("F8_E4M3 in A, NVFP4 in B"), std::string::npos) << v.fp8_changed[0];
  ConvertOptions cg;
  convert(in, tmp / "m.gguf", cg);
  v = verify_checkpoints(in, tmp / "m.gguf");
  EXPECT_TRUE(v.same) << v.difference;
  ASSERT_EQ(v.fp8_changed.size(), 8u);
  EXPECT_NE(v.fp8_changed[0].find("F8_E4M3 in A, Q8_0 in B"), std::string::npos) << v.fp8_changed[0];
}

// NVIDIA's Nemotron 3 Nano recipe (fixtures/mixed/nemotron_h/modelopt-selective, ModelOpt 0.47):
// NVFP4 W4A4 but for the attention layer and the Mamba-2 layer feeding it, left BF16 and named
// in exclude_modules only through ModelOpt's unresolved-name marker before a wildcard; an FP8 KV
// cache with calibrated scales, which the model reads (its logits against transformers: above).
TEST(MixedCheckpoints, NemotronNanoRecipeRunsItsBf16LayersAndKvScales) {
  const auto ck = Checkpoint::open(test::fixture_path("mixed/nemotron_h/modelopt-selective"));
  for (const char* t : {"blk.0.ssm_in.weight", "blk.1.attn_q.weight"}) EXPECT_NE(ck->tensor(t).storage, Storage::nvfp4) << t;
  EXPECT_EQ(ck->tensor("blk.2.ffn_up_shexp.weight").storage, Storage::nvfp4);
  for (const Mode mode : {Mode::a16q8, Mode::w4a4}) {
    LoadOptions lo;
    lo.mode = mode;
    const auto m = Model::load(*ck, lo);
    const std::string text = describe_text(*m);
    EXPECT_NE(text.find("6 float in the pinned order"), std::string::npos) << mode_name(mode) << "\n" << text;
    EXPECT_TRUE(m->kv_scales_calibrated()) << mode_name(mode);
  }
}

// ModelOpt's FP8 attention carries static input scales (W8A8 as declared); the integer-exact
// modes quantize the input their own way, and the load log says so. compressed-tensors' dynamic
// FP8 group has none: no such line.
TEST(MixedCheckpoints, W8A8InputScalesNamedAtLoad) {
  for (const auto& [dir, says] : {std::pair{"mixed/qwen3/modelopt-mixed", true}, {"mixed/qwen3/ct-mixed", false}}) {
    const auto ck = Checkpoint::open(test::fixture_path(dir));
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    const std::string text = describe_text(*Model::load(*ck, lo));
    EXPECT_EQ(text.find("8 FP8 layers declare W8A8 (a static input_scale): their inputs run as a16q8") != std::string::npos, says)
        << dir << "\n" << text;
  }
}
