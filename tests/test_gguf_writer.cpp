// GGUF writer: a file written by PyPI gguf (tools/gen_io_fixtures.py), parsed by our reader and fed
// to our writer, comes out byte for byte; every value type round-trips; errors leave no file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <stdexcept>

#include "io_test_util.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"
#include "test_util.h"

using namespace nvfp4;

TEST(GgufWriter, RewritesPypiGgufByteForByte) {
  const std::string path = test::fixture_path("io/py.gguf");
  const auto f = gguf::File::open(path);
  gguf::Writer w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const auto& t : f.tensors()) w.add_tensor(t.name, t.ne, t.type, t.data, static_cast<uint64_t>(t.nbytes));
  const auto ours = w.serialize();
  EXPECT_EQ(ours, test::file_bytes(path));

  std::ifstream js(test::fixture_path("io/py.expected.json"));
  const auto ex = nlohmann::json::parse(js)["gguf"];
  ASSERT_EQ(f.tensors().size(), ex.size());
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.type, ex[t.name]["type"].get<uint32_t>()) << t.name;
    EXPECT_EQ(test::to_hex(t.data, static_cast<size_t>(t.nbytes)), ex[t.name]["hex"].get<std::string>()) << t.name;
  }

  test::ScratchDir dir;
  w.write(dir / "out.gguf");
  EXPECT_EQ(test::file_bytes(dir / "out.gguf"), ours);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.gguf"});
}

TEST(GgufWriter, EveryValueTypeAndAlignmentRoundTrip) {
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("general.alignment", 128);
  auto val = [](gguf::ValueType t) { gguf::Value v; v.type = t; return v; };
  gguf::Value v;
  v = val(gguf::ValueType::u8); v.u = 250; w.set("t.u8", v);
  v = val(gguf::ValueType::i8); v.i = -120; w.set("t.i8", v);
  v = val(gguf::ValueType::u16); v.u = 65000; w.set("t.u16", v);
  v = val(gguf::ValueType::i16); v.i = -32000; w.set("t.i16", v);
  v = val(gguf::ValueType::u32); v.u = 4000000000u; w.set("t.u32", v);
  v = val(gguf::ValueType::i32); v.i = -2000000000; w.set("t.i32", v);
  v = val(gguf::ValueType::u64); v.u = ~0ull; w.set("t.u64", v);
  v = val(gguf::ValueType::i64); v.i = INT64_MIN; w.set("t.i64", v);
  w.set_f32("t.f32", 0.1f);
  v = val(gguf::ValueType::f64); v.f = 0.1; w.set("t.f64", v);
  w.set_bool("t.bool", true);
  w.set_string("t.str", "");
  gguf::Value arr = val(gguf::ValueType::array);
  arr.arr = gguf::Array(gguf::ValueType::string);
  for (const char* s : {"x", "yy"}) { gguf::Value e = val(gguf::ValueType::string); e.s = s; arr.arr.push_back(e); }
  w.set("t.arr", arr);
  w.set_u32("t.replaced", 1);
  w.set_u32("t.replaced", 2);
  const float a[3] = {1, 2, 3};
  const uint16_t h[64] = {};
  w.add_tensor("a", {3}, ggml::F32, a, 12);
  w.add_tensor("b", {64}, ggml::F16, 128, [&](uint8_t* dst) { std::memcpy(dst, h, 128); });
  const auto bytes = w.serialize();
  const auto f = gguf::File::parse(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(f.alignment(), 128u);
  EXPECT_EQ(f.get("t.u8").u, 250u);
  EXPECT_EQ(f.get("t.i8").i, -120);
  EXPECT_EQ(f.get("t.u16").u, 65000u);
  EXPECT_EQ(f.get("t.i16").i, -32000);
  EXPECT_EQ(f.get("t.u32").u, 4000000000u);
  EXPECT_EQ(f.get("t.i32").i, -2000000000);
  EXPECT_EQ(f.get("t.u64").u, ~0ull);
  EXPECT_EQ(f.get("t.i64").i, INT64_MIN);
  EXPECT_EQ(f.get("t.f32").f, static_cast<double>(0.1f));
  EXPECT_EQ(f.get("t.f64").f, 0.1);
  EXPECT_TRUE(f.get("t.bool").as_bool());
  EXPECT_EQ(f.get("t.str").as_string(), "");
  EXPECT_EQ(f.get("t.arr").arr.str(1), "yy");
  EXPECT_EQ(f.get("t.arr").arr, arr.arr);
  EXPECT_EQ(f.get("t.replaced").u, 2u);
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[1].offset, 128u);
  EXPECT_EQ(f.data_offset() % 128, 0u);
  EXPECT_EQ(std::memcmp(f.tensor("a").data, a, 12), 0);
  EXPECT_EQ(bytes.size(), f.data_offset() + 256);
}

TEST(GgufWriter, RefusesBadTensorsAndLeavesNoFile) {
  gguf::Writer w;
  const float a[4] = {};
  EXPECT_THROW(w.add_tensor("a", {3}, ggml::F32, a, 16), Error);          // bytes != type x shape
  EXPECT_THROW(w.add_tensor("a", {32}, ggml::Q8_0, a, 16), Error);        // Q8_0 row is 34 bytes
  EXPECT_THROW(w.add_tensor("a", {48}, ggml::NVFP4, a, 27), Error);       // not a multiple of 64
  EXPECT_THROW(w.add_tensor("a", {4}, 99, a, 16), Error);                 // unknown type
  EXPECT_THROW(w.add_tensor("a", {}, ggml::F32, a, 0), Error);            // no dimension
  w.add_tensor("a", {4}, ggml::F32, a, 16);
  EXPECT_THROW(w.add_tensor("a", {4}, ggml::F32, a, 16), Error);          // duplicate
  w.set_u32("general.alignment", 48);
  EXPECT_THROW(w.serialize(), Error);                                      // not a power of two
  w.set_u32("general.alignment", 32);

  test::ScratchDir dir;
  w.add_tensor("boom", {4}, ggml::F32, 16, [](uint8_t*) { throw std::runtime_error("source failed"); });
  EXPECT_THROW(w.write(dir / "x.gguf"), std::runtime_error);
  EXPECT_TRUE(dir.entries().empty());  // neither the output nor its temporary file
}
