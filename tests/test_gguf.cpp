// GGUF reader against a file written by PyPI `gguf` (tools/gen_gguf_fixtures.py), damage cases,
// and the real SmolLM2 GGUF when NVFP4_SMOLLM2_GGUF names it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

TEST(Gguf, ReadsEveryValueTypeWrittenByPypiGguf) {
  auto f = gguf::File::open(test::fixture_path("gguf/small.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get("general.architecture").as_string(), "llama");
  EXPECT_EQ(f.get("test.u8").as_int(), 200);
  EXPECT_EQ(f.get("test.i8").as_int(), -100);
  EXPECT_EQ(f.get("test.u16").as_int(), 60000);
  EXPECT_EQ(f.get("test.i16").as_int(), -30000);
  EXPECT_EQ(f.get("test.u32").as_int(), 4000000000);
  EXPECT_EQ(f.get("test.i32").as_int(), -2000000000);
  EXPECT_EQ(f.get("test.f32").as_float(), 0.15625);
  EXPECT_TRUE(f.get("test.bool").as_bool());
  EXPECT_EQ(f.get("test.string").as_string(), "héllo wörld ✓");
  EXPECT_EQ(f.get("test.u64").u, (uint64_t{1} << 63) + 5);
  EXPECT_THROW(f.get("test.u64").as_int(), Error);  // does not fit int64: refused, not wrapped
  EXPECT_EQ(f.get("test.i64").as_int(), -(int64_t{1} << 62));
  EXPECT_EQ(f.get("test.f64").as_float(), 1.0 / 3.0);
  const auto& ai = f.get("test.arr_i32");
  ASSERT_EQ(ai.arr.size(), 3u);
  EXPECT_EQ(ai.arr.as_int(1), -2);
  EXPECT_EQ(ai.arr.at(1).as_int(), -2);
  const auto& as = f.get("test.arr_str");
  ASSERT_EQ(as.arr.size(), 3u);
  EXPECT_EQ(as.arr.str(1), "bc");
  EXPECT_EQ(as.arr.at(1).as_string(), "bc");
  EXPECT_EQ(as.arr.str(2), "");
  const auto& an = f.get("test.arr_nested");
  ASSERT_EQ(an.arr.size(), 2u);
  EXPECT_EQ(an.arr.at(0).arr.as_int(1), 2);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_THROW(f.get("absent"), Error);
}

TEST(Gguf, TensorsMatchWhatPypiGgufWrote) {
  auto f = gguf::File::open(test::fixture_path("gguf/small.gguf"));
  ASSERT_EQ(f.tensors().size(), 4u);
  const auto& t32 = f.tensor("t.f32");
  EXPECT_EQ(t32.type, ggml::F32);
  EXPECT_EQ(t32.ne, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(t32.data - f.tensors()[0].data + 0, 0);
  std::vector<float> v(12);
  for (int64_t r = 0; r < 3; ++r) ggml_dequantize_row(t32.type, t32.data + r * 16, v.data() + r * 4, 4);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(v[i], i / 4.0f);
  const auto& t16 = f.tensor("t.f16");
  std::vector<float> h(16);
  ggml_dequantize_row(t16.type, t16.data, h.data(), 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(h[i], i - 8.0f);
  for (const auto& t : f.tensors()) EXPECT_EQ((t.data - f.tensors()[0].data) % 64, 0) << t.name;

  std::ifstream js(test::fixture_path("gguf/small.expected.json"));
  const auto expected = nlohmann::json::parse(js);
  const auto& tn = f.tensor("t.nvfp4");
  EXPECT_EQ(tn.type, ggml::NVFP4);
  EXPECT_EQ(tn.nbytes, 72);
  std::vector<float> nv(128);
  ggml_dequantize_row(tn.type, tn.data, nv.data(), 128);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(nv[i], expected["nvfp4_dequant"][i].get<float>()) << i;
}

TEST(Gguf, EveryTruncationIsRefusedCleanly) {
  const auto bytes = file_bytes(test::fixture_path("gguf/small.gguf"));
  ASSERT_GT(bytes.size(), 100u);
  // Cutting the file anywhere before its last tensor's end must give an Error, never a crash.
  const auto whole = gguf::File::parse(bytes.data(), bytes.size(), "whole.gguf");
  size_t end = 0;
  for (const auto& t : whole.tensors()) end = std::max<size_t>(end, whole.data_offset() + t.offset + t.nbytes);
  ASSERT_LE(end, bytes.size());
  size_t refused = 0;
  for (size_t n = 0; n < end; ++n) {
    try {
      gguf::File::parse(bytes.data(), n, "cut.gguf");
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("cut.gguf"), std::string::npos);
    }
  }
  EXPECT_EQ(refused, end);
}

TEST(Gguf, DamagedHeadersAreRefusedWithTheRule) {
  const auto good = file_bytes(test::fixture_path("gguf/small.gguf"));
  auto expect_rule = [&](std::vector<uint8_t> b, const std::string& rule) {
    try {
      gguf::File::parse(b.data(), b.size(), "bad.gguf");
      ADD_FAILURE() << "accepted; wanted: " << rule;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  };
  auto b = good;
  b[0] = 'X';
  expect_rule(b, "not a GGUF file");
  b = good;
  b[4] = 1;  // version 1
  expect_rule(b, "unsupported GGUF version");
  b = good;
  b[8] = 0xFF; b[9] = 0xFF; b[10] = 0xFF;  // tensor count
  expect_rule(b, "tensor count");
  b = good;
  b[16] = 0xFF; b[17] = 0xFF;  // kv count
  expect_rule(b, "metadata count");
  // Random single-byte damage anywhere in the header: refused or accepted, never a crash.
  test::Rng rng(1);
  for (int k = 0; k < 3000; ++k) {
    b = good;
    b[rng.next() % 700] = static_cast<uint8_t>(rng.next());
    try { gguf::File::parse(b.data(), b.size(), "fuzz.gguf"); } catch (const Error&) {}
  }
}

TEST(Gguf, RealSmolLM2FileParses) {
  const char* path = std::getenv("NVFP4_SMOLLM2_GGUF");
  if (!path) GTEST_SKIP() << "NVFP4_SMOLLM2_GGUF not set (scripts/test.sh sets it)";
  auto f = gguf::File::open(path);
  EXPECT_EQ(f.get("general.architecture").as_string(), "llama");
  EXPECT_EQ(f.get("llama.block_count").as_int(), 30);
  EXPECT_EQ(f.get("tokenizer.ggml.tokens").arr.size(), 49152u);
  EXPECT_EQ(f.get("tokenizer.ggml.merges").arr.size(), 48900u);
  EXPECT_EQ(f.tensors().size(), 272u);
  const auto& emb = f.tensor("token_embd.weight");
  EXPECT_EQ(emb.type, ggml::Q8_0);
  EXPECT_EQ(emb.ne, (std::vector<int64_t>{576, 49152}));
  EXPECT_EQ(f.tensor("blk.0.ffn_down.weight").type, ggml::Q4_1);
}
