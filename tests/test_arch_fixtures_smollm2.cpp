// SmolLM2-135M-Instruct as the real producers write it (models/smollm2-hf/<form>/, made by
// tools/gen_smollm2_hf.py, not committed; $NVFP4_SMOLLM2_HF overrides the root): the float form from
// transformers' GGUF loader, ModelOpt's NVFP4 / W4A16 exports and llm-compressor's NVFP4 /
// NVFP4A16, checked against fixtures/arch/smollm2_logits.json (transformers float32 and ModelOpt's
// fake-quantized models: argmax and logsumexp per position, top-50 logits at the last one).
// A missing directory skips, naming it.
//
// Bounds: as tests/test_model_reference.cpp for 30 layers in float32 (measured ~4e-5 there):
// |diff| <= 1e-3 + 1e-4 |logit| on the top-50, logsumexp within 1e-3 — for f32 on `float` vs
// transformers, and for a16 on the ModelOpt forms vs ModelOpt's fake-quant W4A16 model (the same
// NVFP4 values in float32, rounding only); measured 1.9e-5 and 2.1e-5. The float directory runs
// bit-identical to the GGUF in f32 (measured max |diff| 0). The CT forms (quantized from the
// float32 model) differ from ModelOpt's W4A16 by up to 0.17 (top-50) and are checked loosely.
// w4a4 against ModelOpt's fake-quant NVFP4 model: measured top-50 max |diff| 2.2-3.1, as large as
// the whole effect of activation quantization (W4A4 vs W4A16 fake quant, 1.7-3.6): over 30
// layers the E2M1 rounding flips of activations cascade (on the 2-layer fixtures positions
// without a flip agree to 5e-4, test_arch_fixtures.cpp), but a systematic difference is not
// ruled out by this test; checked only loosely (below twice that effect).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "arch_fixtures.h"
#include "model_path.h"

using namespace nvfp4;
using namespace nvfp4::test;

namespace {

namespace fs = std::filesystem;

std::string hf_root() {
  if (const char* p = std::getenv("NVFP4_SMOLLM2_HF")) return p;
  return (fs::path(NVFP4_FIXTURES).parent_path() / "models" / "smollm2-hf").string();
}

#define REQUIRE_FORM(dir, form)                                                          \
  const std::string dir = hf_root() + "/" + (form);                                      \
  if (!fs::exists(dir + "/config.json"))                                                 \
  GTEST_SKIP() << "missing " << dir << " (make it: tools/gen_smollm2_hf.py)"

const nlohmann::json& oracle() {
  static const nlohmann::json j = [] {
    std::ifstream f(fixture_path("arch/smollm2_logits.json"));
    return nlohmann::json::parse(f);
  }();
  return j;
}

struct Cmp {
  double top = 0, lse = 0;
  int argmax_differ = 0, positions = 0, bound_violations = 0;
};

// Our logits of prompt p against record `rec` ("float", "modelopt_fq_w4a16", ...).
Cmp compare(const Model& m, const nlohmann::json& prompt, const std::string& rec, ThreadPool& pool) {
  const auto ids = prompt["ids"].get<std::vector<int32_t>>();
  const auto& r = prompt[rec];
  const auto got = eval_all(m, ids, pool);
  const int64_t nv = m.config().n_vocab;
  Cmp c;
  const auto am = r["argmax"].get<std::vector<int32_t>>();
  const auto lse = r["logsumexp"].get<std::vector<double>>();
  for (size_t p = 0; p < ids.size(); ++p) {
    const float* row = got.data() + p * static_cast<size_t>(nv);
    double mx = row[0];
    for (int64_t i = 0; i < nv; ++i) mx = std::max(mx, static_cast<double>(row[i]));
    double se = 0;
    for (int64_t i = 0; i < nv; ++i) se += std::exp(row[i] - mx);
    c.lse = std::max(c.lse, std::fabs(mx + std::log(se) - lse[p]));
    c.argmax_differ += argmax(row, nv) != am[p];
    ++c.positions;
  }
  const float* last = got.data() + (ids.size() - 1) * static_cast<size_t>(nv);
  const auto ti = r["top_ids"].get<std::vector<int64_t>>();
  const auto tl = r["top_logits"].get<std::vector<double>>();
  for (size_t k = 0; k < ti.size(); ++k) {
    const double d = std::fabs(last[ti[k]] - tl[k]);
    c.top = std::max(c.top, d);
    c.bound_violations += d > 1e-3 + 1e-4 * std::fabs(tl[k]);
  }
  return c;
}

std::unique_ptr<Model> load(const Checkpoint& ck, Mode mode) {
  LoadOptions lo;
  lo.mode = mode;
  return Model::load(ck, lo);
}

}  // namespace

TEST(ArchSmolLM2Hf, FloatF32MatchesTransformersAndTheGguf) {
  REQUIRE_FORM(dir, "float");
  auto ck = Checkpoint::open(dir);
  EXPECT_EQ(ck->info().producer, "float");
  ASSERT_NE(ck->meta("llama.rope.freq_base"), nullptr);  // from rope_parameters (transformers 5)
  EXPECT_EQ(ck->meta("llama.rope.freq_base")->as_float(), 100000.0);
  auto m = load(*ck, Mode::f32);
  ThreadPool pool(2);
  for (const auto& p : oracle()["prompts"]) {
    const Cmp c = compare(*m, p, "float", pool);
    std::printf("smollm2-hf float f32 vs transformers: top-50 max |diff| %.3g, logsumexp %.3g, argmax differs %d/%d\n",
                c.top, c.lse, c.argmax_differ, c.positions);
    EXPECT_EQ(c.bound_violations, 0);
    EXPECT_LE(c.lse, 1e-3);
    EXPECT_EQ(c.argmax_differ, 0);
    if (!kUnderSanitizer) {
      EXPECT_EQ(greedy(*m, p["ids"].get<std::vector<int32_t>>(), 16, pool), p["float"]["greedy"].get<std::vector<int32_t>>());
    }
  }
  // The same weights as the bundled GGUF (transformers dequantized its Q4_1): our f32 runs agree.
  const std::string gguf = smollm2_path();
  if (gguf.empty()) {
    std::printf("smollm2-hf: the GGUF comparison not run (set NVFP4_SMOLLM2_GGUF)\n");
    return;
  }
  auto gk = Checkpoint::open(gguf);
  auto gm = load(*gk, Mode::f32);
  const auto ids = oracle()["prompts"][0]["ids"].get<std::vector<int32_t>>();
  const auto a = eval_all(*m, ids, pool), b = eval_all(*gm, ids, pool);
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, static_cast<double>(std::fabs(a[i] - b[i])));
  std::printf("smollm2-hf float vs the GGUF, both f32: max |diff| %.3g\n", w);
  EXPECT_LE(w, 1e-4);
}

TEST(ArchSmolLM2Hf, QuantizedFormsAgainstModelOptFakeQuant) {
  struct F {
    const char* form;
    const char* producer;
    bool w4a4;
  };
  int ran = 0;
  std::string missing;
  for (const F& f : {F{"modelopt-w4a16", "modelopt", false}, F{"modelopt-nvfp4", "modelopt", true},
                     F{"ct-nvfp4a16", "compressed-tensors", false}, F{"ct-nvfp4", "compressed-tensors", true}}) {
    const std::string dir = hf_root() + "/" + f.form;
    if (!fs::exists(dir + "/config.json")) {
      missing += " " + dir;
      continue;
    }
    SCOPED_TRACE(f.form);
    auto ck = Checkpoint::open(dir);
    EXPECT_EQ(ck->info().producer, f.producer);
    EXPECT_EQ(ck->info().has_input_scales, f.w4a4);
    ThreadPool pool(2);
    const bool modelopt = std::string(f.producer) == "modelopt";
    {
      auto m = load(*ck, Mode::a16);
      for (const auto& p : oracle()["prompts"]) {
        const Cmp c = compare(*m, p, "modelopt_fq_w4a16", pool);
        std::printf("smollm2-hf %s a16 vs ModelOpt fake-quant W4A16: top-50 max |diff| %.3g, logsumexp %.3g, argmax differs %d/%d\n",
                    f.form, c.top, c.lse, c.argmax_differ, c.positions);
        if (modelopt) {
          EXPECT_EQ(c.bound_violations, 0);
          EXPECT_LE(c.lse, 1e-3);
        } else {
          EXPECT_LE(c.top, 1.0);  // another quantizer: the weights differ in a few bytes
        }
      }
    }
    if (f.w4a4 && !kUnderSanitizer) {
      auto m = load(*ck, Mode::w4a4);
      for (const auto& p : oracle()["prompts"]) {
        const Cmp c = compare(*m, p, "modelopt_fq_nvfp4", pool);
        const Cmp a = compare(*m, p, "modelopt_fq_w4a16", pool);
        std::printf("smollm2-hf %s w4a4 vs ModelOpt fake-quant NVFP4: top-50 max |diff| %.3g (vs W4A16 %.3g), argmax differs %d/%d\n",
                    f.form, c.top, a.top, c.argmax_differ, c.positions);
        EXPECT_LT(c.top, 2 * a.top + 0.5);  // measured 2.2-3.1 vs 1.7-3.6: see the header
      }
    }
    if (!kUnderSanitizer) {
      auto q8 = load(*ck, Mode::a16q8), f32 = load(*ck, Mode::f32);
      int same = 0;
      for (const auto& p : oracle()["prompts"]) {
        const auto ids = p["ids"].get<std::vector<int32_t>>();
        same += greedy(*q8, ids, 16, pool) == greedy(*f32, ids, 16, pool);
      }
      std::printf("smollm2-hf %s a16q8 greedy = f32 greedy on %d of %zu prompts\n", f.form, same, oracle()["prompts"].size());
    }
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "missing" << missing << " (make them: tools/gen_smollm2_hf.py)";
  if (!missing.empty()) std::printf("smollm2-hf: not present:%s\n", missing.c_str());
}
