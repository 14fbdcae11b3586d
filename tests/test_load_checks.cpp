// What a checkpoint holds and declares is checked at open. Every float value and scale a model
// reads: a NaN or an infinity in an F32, F16 or BF16 tensor (norms, embeddings, biases, float
// weights) or in the f16 scale of a ggml block (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K), in a GGUF file or an
// HF checkpoint, is refused with the file, the tensor under the file's own name and the first bad
// value's index. A declared vocabulary size that contradicts the tensors is refused naming both; a
// FIFO or device where a file is expected is refused without waiting.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "io_test_util.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf_writer.h"
#include "nvfp4/mapped_file.h"
#include "nvfp4/model.h"
#include "nvfp4/safetensors.h"
#include "nvfp4/tokenizer.h"
#include "test_util.h"

namespace nvfp4 {
namespace {

namespace st = safetensors;
using test::file_bytes;
using test::write_bytes;

struct Kind {
  uint32_t type;
  int64_t block_values, block_bytes;
  std::vector<int64_t> scale_offsets;  // f16 scales in a block; empty: a float type
  int64_t value_bytes;                 // float types
};

const Kind kKinds[] = {
    {ggml::F32, 1, 4, {}, 4},        {ggml::F16, 1, 2, {}, 2},        {ggml::BF16, 1, 2, {}, 2},
    {ggml::Q4_0, 32, 18, {0}, 0},    {ggml::Q4_1, 32, 20, {0, 2}, 0}, {ggml::Q8_0, 32, 34, {0}, 0},
    {ggml::Q4_K, 256, 144, {0, 2}, 0}, {ggml::Q6_K, 256, 210, {208}, 0},
};

// The bit patterns of NaN and +Inf in a value of `bytes` bytes (f32, or f16 / bf16).
std::vector<uint8_t> bad_value(int bytes, bool nan, bool bf16) {
  if (bytes == 4) {
    const uint32_t u = nan ? 0x7fc00000u : 0x7f800000u;
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &u, 4);
    return b;
  }
  const uint16_t h = bf16 ? (nan ? 0x7fc0 : 0x7f80) : (nan ? 0x7e00 : 0x7c00);
  return {static_cast<uint8_t>(h & 0xff), static_cast<uint8_t>(h >> 8)};
}

std::string write_gguf(const std::string& dir, const Kind& k, std::vector<uint8_t>& data) {
  const int64_t cols = 512, rows = 2;
  data.assign(static_cast<size_t>(rows * cols / k.block_values * k.block_bytes), 0);
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.add_tensor("token_embd.weight", {cols, rows}, k.type, data.data(), data.size());
  const std::string path = dir + "/m.gguf";
  write_bytes(path, w.serialize());
  return path;
}

TEST(LoadFinite, EveryFloatAndScaleKindInGguf) {
  for (const Kind& k : kKinds) {
    for (const bool nan : {true, false}) {
      SCOPED_TRACE(ggml_type_name(k.type) + (nan ? " NaN" : " Inf"));
      test::ScratchDir dir;
      std::vector<uint8_t> data;
      const std::string path = write_gguf(dir.path, k, data);
      ASSERT_NO_THROW(Checkpoint::open(path));  // all zeros: finite
      // Damage the value at row 1, column 256 (a block's first value for the block formats).
      const int64_t index = 512 + 256;
      std::vector<uint8_t> bytes = file_bytes(path);
      // The one tensor ends the file, padded to the alignment (32).
      const size_t data_at = bytes.size() - (data.size() + 31) / 32 * 32;
      const std::vector<uint8_t> bad = bad_value(k.value_bytes ? static_cast<int>(k.value_bytes) : 2, nan, k.type == ggml::BF16);
      const int64_t off = k.value_bytes ? index * k.value_bytes
                                        : index / k.block_values * k.block_bytes + k.scale_offsets.back();
      std::memcpy(bytes.data() + data_at + off, bad.data(), bad.size());
      write_bytes(path, bytes);
      try {
        Checkpoint::open(path);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.file(), path);
        EXPECT_EQ(e.tensor(), "token_embd.weight");
        EXPECT_NE(e.rule().find("NaN or infinite"), std::string::npos) << e.what();
        EXPECT_NE(e.found().find(nan ? "NaN" : "+Inf"), std::string::npos) << e.what();
        EXPECT_NE(e.found().find("index " + std::to_string(index) + " (row 1, column 256)"), std::string::npos)
            << e.what();
        if (!k.value_bytes) {
          EXPECT_NE(e.rule().find(ggml_type_name(k.type)), std::string::npos) << e.what();
        }
      }
    }
  }
}

// The HF float fixture (BF16) and an F32/F16 file: a damaged value in any tensor is refused naming
// the safetensors file and the tensor as the checkpoint names it (not the GGUF name).
TEST(LoadFinite, EveryFloatKindInHfCheckpoints) {
  const std::string src = test::fixture_path("hf/float");
  for (const char* tensor : {"model.embed_tokens.weight", "model.norm.weight", "model.layers.0.self_attn.q_proj.weight",
                             "lm_head.weight", "model.layers.0.input_layernorm.weight"}) {
    for (const bool nan : {true, false}) {
      SCOPED_TRACE(std::string(tensor) + (nan ? " NaN" : " Inf"));
      test::ScratchDir dir;
      std::filesystem::copy_file(src + "/config.json", dir.path + "/config.json");
      std::vector<uint8_t> bytes = file_bytes(src + "/model.safetensors");
      uint64_t n = 0;
      std::memcpy(&n, bytes.data(), 8);
      const auto h = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
      const auto& t = h.at(tensor);
      ASSERT_EQ(t["dtype"], "BF16");
      const int64_t cols = t["shape"].size() == 2 ? t["shape"][1].get<int64_t>() : 0;
      const int64_t index = cols ? cols + 5 : 5;
      const size_t at = 8 + n + t["data_offsets"][0].get<size_t>() + static_cast<size_t>(index) * 2;
      const auto bad = bad_value(2, nan, true);
      std::memcpy(bytes.data() + at, bad.data(), 2);
      const std::string file = dir.path + "/model.safetensors";
      write_bytes(file, bytes);
      try {
        Checkpoint::open(dir.path);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.file(), file);
        EXPECT_EQ(e.tensor(), tensor);
        EXPECT_NE(e.found().find("index " + std::to_string(index)), std::string::npos) << e.what();
        if (cols) {
          EXPECT_NE(e.found().find("(row 1, column 5)"), std::string::npos) << e.what();
        }
      }
    }
  }
  for (const st::Dtype dt : {st::Dtype::F32, st::Dtype::F16}) {
    test::ScratchDir dir;
    const int bytes = dt == st::Dtype::F32 ? 4 : 2;
    std::vector<uint8_t> v(static_cast<size_t>(64 * bytes), 0);
    const std::string file = dir.path + "/model.safetensors";
    st::write(file, {{"model.norm.weight", dt, {64}, v.data(), v.size()}});
    ASSERT_NO_THROW(Checkpoint::open(file));
    const auto bad = bad_value(bytes, true, false);
    std::memcpy(v.data() + 7 * bytes, bad.data(), bad.size());
    st::write(file, {{"model.norm.weight", dt, {64}, v.data(), v.size()}});
    try {
      Checkpoint::open(file);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), file);
      EXPECT_EQ(e.tensor(), "model.norm.weight");
      EXPECT_NE(e.found().find("NaN at index 7"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace nvfp4

namespace nvfp4 {
namespace {

// A declared size that contradicts the tensors is refused naming both: GGUF <arch>.vocab_size,
// config.json's vocab_size, beside the embedding's rows.
TEST(LoadDeclaredSizes, VocabularyThatContradictsTheEmbedding) {
  test::ScratchDir dir;
  std::vector<uint8_t> emb(static_cast<size_t>(64 * 32 * 4), 0);
  auto gguf_with = [&](const std::function<void(gguf::Writer&)>& f) {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    f(w);
    w.add_tensor("token_embd.weight", {64, 32}, ggml::F32, emb.data(), emb.size());
    const std::string path = dir.path + "/v.gguf";
    test::write_bytes(path, w.serialize());
    return path;
  };
  EXPECT_NO_THROW(Checkpoint::open(gguf_with([](gguf::Writer& w) { w.set_u32("llama.vocab_size", 32); })));
  for (const uint32_t declared : {1000u, 31u, 100000u}) {
    const std::string path = gguf_with([&](gguf::Writer& w) { w.set_u32("llama.vocab_size", declared); });
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << declared << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.tensor(), "llama.vocab_size");
      EXPECT_NE(e.rule().find("token_embd.weight"), std::string::npos) << e.what();
      EXPECT_EQ(e.found(), std::to_string(declared));
      EXPECT_NE(e.expected().find("32"), std::string::npos) << e.what();
    }
  }
  {
    const std::string path = gguf_with([](gguf::Writer& w) { w.set_string("llama.vocab_size", "32"); });
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << "a string vocab_size accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.tensor(), "llama.vocab_size");
      EXPECT_NE(e.rule().find("wrong type"), std::string::npos) << e.what();
    }
  }
  // HF: config.json's vocab_size against model.embed_tokens.weight and lm_head.weight.
  const std::string src = test::fixture_path("hf/float");
  for (const int declared : {1000, 31, 100000}) {
    test::ScratchDir hf;
    std::filesystem::copy_file(src + "/model.safetensors", hf.path + "/model.safetensors");
    std::ifstream in(src + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    cfg["vocab_size"] = declared;
    std::ofstream(hf.path + "/config.json") << cfg.dump();
    try {
      Checkpoint::open(hf.path);
      ADD_FAILURE() << declared << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), hf.path + "/config.json");
      EXPECT_EQ(e.tensor(), "vocab_size");
      EXPECT_NE(e.rule().find("model.embed_tokens.weight"), std::string::npos) << e.what();
      EXPECT_NE(e.expected().find("32 (the rows of model.embed_tokens.weight)"), std::string::npos) << e.what();
      EXPECT_EQ(e.found(), std::to_string(declared));
    }
  }
}

}  // namespace
}  // namespace nvfp4

namespace nvfp4 {
namespace {

// A FIFO or a device where a checkpoint file, config.json or a text file is expected is refused
// at once, naming the path and what it is (a plain open() of a FIFO waits for a writer for good).
TEST(LoadFileTypes, FifosAndDevicesAreRefusedWithoutWaiting) {
  test::ScratchDir dir;
  const std::string src = test::fixture_path("hf/float");
  const std::string hf = dir.path + "/hf";
  std::filesystem::create_directory(hf);
  std::filesystem::copy_file(src + "/config.json", hf + "/config.json");
  ASSERT_EQ(::mkfifo((hf + "/model.safetensors").c_str(), 0600), 0);
  const std::string cfg = dir.path + "/cfg";
  std::filesystem::create_directory(cfg);
  std::filesystem::copy_file(src + "/model.safetensors", cfg + "/model.safetensors");
  ASSERT_EQ(::mkfifo((cfg + "/config.json").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((dir.path + "/m.gguf").c_str(), 0600), 0);
  struct Case {
    std::string arg, named, what;
  } cases[] = {
      {hf, hf + "/model.safetensors", "FIFO"},
      {cfg, cfg + "/config.json", "FIFO"},
      {dir.path + "/m.gguf", dir.path + "/m.gguf", "FIFO"},
      {"/dev/zero", "/dev/zero", "character device"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arg);
    // The CLI first, under a timeout: it must not wait (exit 124 would be the timeout).
    const std::string cmd = "timeout 20 " + std::string(NVFP4_BINARY) + " inspect '" + c.arg + "' >/dev/null 2>&1";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_NE(WEXITSTATUS(st), 124) << "inspect waited on " << c.named;
    EXPECT_NE(WEXITSTATUS(st), 0);
    try {
      Checkpoint::open(c.arg);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), c.named) << e.what();
      EXPECT_NE(e.found().find(c.what), std::string::npos) << e.what();
    }
  }
  // Text files the CLI reads (here a tokenizer.json beside an HF checkpoint) go the same way.
  EXPECT_THROW(read_regular_file(dir.path + "/m.gguf"), Error);
  EXPECT_EQ(read_regular_file(src + "/config.json").substr(0, 1), "{");
}

}  // namespace
}  // namespace nvfp4

namespace nvfp4 {
namespace {

// GGUF metadata of the wrong type, and special-token ids outside the vocabulary, in a real
// llama.cpp conversion (fixtures/moe/mixtral): each refusal names the file and the key, what was
// expected and what was found; the model's and the tokenizer's keys alike.
TEST(LoadGgufMetadata, WrongTypesAndSpecialIdsNameFileAndKey) {
  const gguf::File src = gguf::File::open(test::fixture_path("moe/mixtral/llamacpp-float.gguf"));
  test::ScratchDir dir;
  const auto damaged = [&](const std::string& key, const gguf::Value& v) {
    gguf::Writer w;
    for (const auto& [k, val] : src.metadata()) w.set(k, k == key ? v : val);
    if (!w.find(key)) w.set(key, v);
    for (const gguf::TensorInfo& t : src.tensors()) w.add_tensor(t.name, t.ne, t.type, t.data, static_cast<size_t>(t.nbytes));
    const std::string path = dir.path + "/d.gguf";
    test::write_bytes(path, w.serialize());
    return path;
  };
  const auto load_all = [](const std::string& path) {
    const auto ck = Checkpoint::open(path);
    (void)Tokenizer::from_checkpoint(*ck);
    (void)Model::load(*ck, LoadOptions{});
  };
  gguf::Value str, f32, big;
  str.type = gguf::ValueType::string;
  str.s = "8k";
  f32.type = gguf::ValueType::f32;
  f32.f = 4.0;
  big.type = gguf::ValueType::u32;
  big.u = 1u << 20;
  struct Case {
    std::string key;
    gguf::Value v;
    std::string expected, found;
  };
  const std::vector<Case> cases = {
      {"llama.context_length", str, "an integer", "string"},
      {"llama.attention.head_count", f32, "an integer", "f32"},
      {"llama.block_count", str, "an integer", "string"},
      {"tokenizer.ggml.eos_token_id", str, "an integer", "string"},
      {"tokenizer.ggml.add_bos_token", f32, "a bool", "f32"},
      {"tokenizer.ggml.model", f32, "a string", "f32"},
      {"tokenizer.ggml.eos_token_id", big, "-1 or 0 ..", std::to_string(1u << 20)},
      {"tokenizer.ggml.bos_token_id", big, "-1 or 0 ..", std::to_string(1u << 20)},
      {"tokenizer.ggml.padding_token_id", big, "-1 or 0 ..", std::to_string(1u << 20)},
  };
  EXPECT_NO_THROW(load_all(damaged("general.name", str)));  // the copy itself loads
  for (const Case& c : cases) {
    const std::string path = damaged(c.key, c.v);
    try {
      load_all(path);
      ADD_FAILURE() << c.key << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.file(), path) << e.what();
      EXPECT_EQ(e.tensor(), c.key) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + c.key + "'"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("tensor '"), std::string::npos) << e.what();  // a key, not a tensor
      EXPECT_EQ(e.expected().rfind(c.expected, 0), 0u) << e.what();
      EXPECT_EQ(e.found(), c.found) << e.what();
    }
  }
}

}  // namespace
}  // namespace nvfp4
