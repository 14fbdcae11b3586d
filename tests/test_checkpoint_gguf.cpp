// The GGUF checkpoint: llama.cpp's NVFP4 form (fixtures written by PyPI gguf), every refusal rule
// that applies to it, and the real SmolLM2 file.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <string>

#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/model.h"
#include "nvfp4/tokenizer.h"
#include "nvfp4/thread_pool.h"
#include "test_util.h"

using namespace nvfp4;

TEST(CheckpointGguf, Nvfp4WeightWithCompanionScales) {
  auto ck = Checkpoint::open(test::fixture_path("gguf/nvfp4_good.gguf"));
  EXPECT_EQ(ck->info().container, "gguf");
  EXPECT_EQ(ck->info().algorithm, "NVFP4");
  EXPECT_TRUE(ck->info().has_input_scales);
  ASSERT_EQ(ck->tensors().size(), 2u);  // the companions are attributes, not tensors
  const auto& e = ck->tensor("blk.0.ffn_up.weight");
  EXPECT_EQ(e.storage, Storage::nvfp4);
  EXPECT_EQ(e.shape, (std::vector<int64_t>{3, 128}));
  EXPECT_EQ(e.scale2, 0.0125f);
  EXPECT_EQ(e.input_scale, 0.004f);
  EXPECT_DOUBLE_EQ(e.bits_per_weight, 4.5);
  RowMatrix m = ck->nvfp4("blk.0.ffn_up.weight");
  EXPECT_EQ(m.scale2, 0.0125f);
  // Values: gguf's dequantization (scale 1) times the tensor scale, in the pinned order.
  std::ifstream js(test::fixture_path("gguf/nvfp4_good.expected.json"));
  const auto want = nlohmann::json::parse(js)["dequant_unscaled"];
  const auto got = ck->to_f32("blk.0.ffn_up.weight");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i].get<float>() * 0.0125f) << i;
  EXPECT_THROW(ck->nvfp4("blk.0.ffn_norm.weight"), Error);
}

TEST(CheckpointGguf, AbsentTensorScaleMeansOne) {
  auto ck = Checkpoint::open(test::fixture_path("gguf/nvfp4_no_scale.gguf"));
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").scale2, 1.0f);
  EXPECT_FALSE(ck->info().has_input_scales);
  EXPECT_EQ(ck->info().algorithm, "W4A16_NVFP4");
}

// general.file_type names the base type of a file: llama.cpp's quantizer writes its base ftype
// when tensor-type overrides make some tensors NVFP4 (llama-quantize --tensor-type), so NVFP4
// tensors under another file type are a real mixed file, read like any other.
TEST(CheckpointGguf, Nvfp4TensorsUnderAnotherFileTypeAreAccepted) {
  auto ck = Checkpoint::open(test::fixture_path("gguf/mixed_ftype.gguf"));
  EXPECT_EQ(ck->meta("general.file_type")->as_int(), 1);
  EXPECT_EQ(ck->tensor("blk.0.ffn_up.weight").storage, Storage::nvfp4);
  EXPECT_EQ(ck->info().algorithm, "W4A16_NVFP4");
}

TEST(CheckpointGguf, EveryBrokenFileIsRefusedWithItsRule) {
  struct { const char* file; const char* rule; const char* tensor; } cases[] = {
      {"bad_scale_f16.gguf", "NVFP4 companion scale must be one F32 value", "blk.0.ffn_up.scale"},
      {"bad_scale_zero.gguf", "tensor scale must be finite and positive", "blk.0.ffn_up.scale"},
      {"bad_scale_nan.gguf", "tensor scale must be finite and positive", "blk.0.ffn_up.scale"},
      {"bad_byte_nan.gguf", "block scale byte is NaN", "blk.0.ffn_up.weight"},
      {"bad_byte_sign.gguf", "block scale byte has its sign bit set", "blk.0.ffn_up.weight"},
      {"bad_no_nvfp4.gguf", "general.file_type says NVFP4 but no tensor is NVFP4", ""},
  };
  for (auto c : cases) {
    const std::string path = test::fixture_path(std::string("gguf/") + c.file);
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << c.file << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.rule(), c.rule) << c.file << ": " << e.what();
      EXPECT_EQ(e.tensor(), c.tensor) << c.file;
      EXPECT_FALSE(e.found().empty()) << c.file;
    }
  }
  EXPECT_THROW(Checkpoint::open("/nonexistent/model.gguf"), Error);
}

TEST(CheckpointGguf, RealSmolLM2) {
  const char* path = std::getenv("NVFP4_SMOLLM2_GGUF");
  if (!path) GTEST_SKIP() << "NVFP4_SMOLLM2_GGUF not set (scripts/test.sh sets it)";
  auto ck = Checkpoint::open(path);
  EXPECT_EQ(ck->tensors().size(), 272u);
  EXPECT_EQ(ck->meta("llama.embedding_length")->as_int(), 576);
  const auto& q = ck->tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{576, 576}));
  EXPECT_EQ(q.storage, Storage::ggml_quant);
  EXPECT_EQ(q.storage_name, "Q4_1");
  EXPECT_DOUBLE_EQ(q.bits_per_weight, 5.0);
  EXPECT_EQ(ck->to_f32("blk.0.attn_k.weight").size(), 192u * 576u);
  DType dt;
  const void* data;
  EXPECT_TRUE(ck->raw_float("blk.0.attn_norm.weight", dt, data));
  EXPECT_EQ(dt, DType::f32);
  EXPECT_FALSE(ck->raw_float("blk.0.attn_q.weight", dt, data));
}

TEST(CheckpointGguf, TokenizerArraysAreForgottenOnceTheTokenizerIsBuilt) {
  auto ck = Checkpoint::open(test::fixture_path("moe/qwen3_moe/llamacpp-float.gguf"));
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  const std::vector<int32_t> ids = tok.encode("hello world, 123");
  const size_t keys = ck->meta_keys().size();
  ASSERT_NE(ck->meta("tokenizer.ggml.tokens"), nullptr);
  ASSERT_NE(ck->meta("tokenizer.ggml.merges"), nullptr);
  ASSERT_NE(ck->meta("tokenizer.ggml.token_type"), nullptr);
  forget_tokenizer_arrays(*ck);
  for (const char* k : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"})
    EXPECT_EQ(ck->meta(k), nullptr) << k;
  EXPECT_EQ(ck->meta_keys().size(), keys - 3);
  EXPECT_NE(ck->meta("tokenizer.ggml.model"), nullptr);
  EXPECT_NE(ck->meta("tokenizer.ggml.eos_token_id"), nullptr);
  // The model loads from what is left; the tokenizer built before is whole; a second build is
  // refused, naming the key.
  LoadOptions lo;
  lo.mode = Mode::f32;
  EXPECT_NE(Model::load(*ck, lo), nullptr);
  EXPECT_EQ(tok.encode("hello world, 123"), ids);
  try {
    Tokenizer::from_checkpoint(*ck);
    ADD_FAILURE() << "built without tokenizer.ggml.tokens";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens"), std::string::npos) << e.what();
  }
}

namespace {
// Resident kB of this process's mappings of `path` (/proc/self/smaps), -1 when none is mapped.
long resident_kb_of(const std::string& path) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  long kb = -1;
  bool in = false;
  while (std::getline(f, line)) {
    // A mapping's first line starts "lo-hi perms ..." (hex addresses); its fields follow as "Key: value".
    const std::string first = line.substr(0, line.find(' '));
    if (first.find('-') != std::string::npos && first.find_first_not_of("0123456789abcdef-") == std::string::npos) {
      in = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      if (in && kb < 0) kb = 0;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      kb += std::stol(line.substr(4));
    }
  }
  return kb;
}
}  // namespace

TEST(CheckpointGguf, NoPageOfTheFileStaysResidentAfterTheLoad) {
  // release() per tensor keeps the pages a tensor shares with its neighbours; the load ends with
  // release_all(), so the loaded model holds none of the file's pages (1 MiB on SmolLM2 before).
  const std::string path = std::filesystem::canonical(test::fixture_path("moe/qwen3_moe/llamacpp-float.gguf")).string();
  auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::f32;
  auto model = Model::load(*ck, lo);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(resident_kb_of(path), 0) << path;
}

// NVFP4 layers are packed straight from the mapped ggml blocks, their tiles split over
// LoadOptions::threads: the model's logits are the same bits for any number of packing threads
// (stacked experts and a hybrid's layers included).
TEST(CheckpointGguf, PackingThreadsAtLoadChangeNoBit) {
  for (const char* f : {"moe/qwen3_moe_i64/llamacpp-modelopt-nvfp4.gguf", "hybrid/qwen3_5/llamacpp-modelopt-nvfp4.gguf"}) {
    SCOPED_TRACE(f);
    auto ck = Checkpoint::open(test::fixture_path(f));
    std::vector<std::vector<float>> out;
    for (int threads : {1, 3}) {
      LoadOptions lo;
      lo.threads = threads;
      auto model = Model::load(*ck, lo);
      ASSERT_NE(model, nullptr);
      ThreadPool pool(1);
      ContextOptions co;
      co.n_ctx = 8;
      Context ctx(*model, co, pool);
      const std::vector<int32_t> ids = {1, 5, 9, 2, 7, 3};
      std::vector<float> logits(ids.size() * static_cast<size_t>(model->config().n_vocab));
      ctx.eval(ids.data(), static_cast<int64_t>(ids.size()), logits.data(), true);
      out.push_back(std::move(logits));
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)));
  }
}

