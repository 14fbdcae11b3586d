// A suite over SmolLM2 quantized to NVFP4 at load (a16q8), opened once per suite and shared by its
// tests: where the model-level suites (steps, workspace, draft, determinism) start. Its tests skip,
// and say why, when the GGUF is absent (model_path.h).
#pragma once
#include <gtest/gtest.h>

#include <memory>

#include "model_path.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/model.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4::test {

class QuantizedSmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = smollm2_path();
    if (path.empty()) return;
    ck_ = Checkpoint::open(path);
    LoadOptions lo;
    lo.mode = Mode::a16q8;
    lo.quantize = true;
    model_ = Model::load(*ck_, lo);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::from_checkpoint(*ck_));
  }
  static void TearDownTestSuite() {
    tok_.reset();
    model_.reset();
    ck_.reset();
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "SmolLM2 GGUF not found: run scripts/setup.sh or set NVFP4_SMOLLM2_GGUF";
  }

  static inline std::unique_ptr<Checkpoint> ck_;
  static inline std::unique_ptr<Model> model_;
  static inline std::unique_ptr<Tokenizer> tok_;
};

}  // namespace nvfp4::test
