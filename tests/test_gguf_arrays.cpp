// GGUF array values: kept by element type (not a Value per element), read back and rewritten byte
// for byte, damaged ones refused with the rule.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "heap_in_use.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/gguf_writer.h"

using namespace nvfp4;

namespace {

gguf::Value scalar(gguf::ValueType t) {
  gguf::Value v;
  v.type = t;
  return v;
}

gguf::Value array_of(gguf::ValueType elem) {
  gguf::Value v = scalar(gguf::ValueType::array);
  v.arr = gguf::Array(elem);
  return v;
}

// A metadata-only GGUF with one key (for damage at a known offset: the elements start at
// 24 + 8 + key size + 4 + 4 + 8).
std::vector<uint8_t> one_key(const std::string& key, const gguf::Value& v) {
  gguf::Writer w;
  w.set(key, v);
  return w.serialize();
}

}  // namespace

// Token k of the test vocabulary ("t" then digits; appended, since GCC 12 warns falsely
// (-Wrestrict) on "t" + std::string at -O3).
static std::string token(size_t k) {
  std::string s = "t";
  s += std::to_string(k * 7919 % 1000003);
  return s;
}

TEST(GgufArrays, AVocabularyTakesItsOwnBytesNotAValuePerElement) {
  // 100K tokens and as many types, as tokenizer.ggml.tokens / .token_type hold them.
  constexpr size_t n = 100000;
  gguf::Value tokens = array_of(gguf::ValueType::string);
  gguf::Value types = array_of(gguf::ValueType::i32);
  size_t string_bytes = 0;
  for (size_t k = 0; k < n; ++k) {
    const std::string s = token(k);
    string_bytes += s.size();
    tokens.arr.push_string(s);
    gguf::Value e = scalar(gguf::ValueType::i32);
    e.i = static_cast<int64_t>(k % 7);
    types.arr.push_back(e);
  }
  gguf::Writer w;
  w.set("tokenizer.ggml.tokens", tokens);
  w.set("tokenizer.ggml.token_type", types);
  const std::vector<uint8_t> bytes = w.serialize();

  const size_t before = test::heap_in_use();
  const gguf::File f = gguf::File::parse(bytes.data(), bytes.size(), "vocab.gguf");
  const size_t grown = test::heap_in_use() - before;
  const gguf::Array& t = f.get("tokenizer.ggml.tokens").arr;
  const gguf::Array& y = f.get("tokenizer.ggml.token_type").arr;
  ASSERT_EQ(t.size(), n);
  ASSERT_EQ(y.size(), n);
  // Each string: its bytes and one 8-byte end; each i32: 4 bytes. A Value per element (96 bytes
  // each, 19 MB here) is far outside both bounds.
  EXPECT_LE(t.heap_bytes(), string_bytes + 8 * n);
  EXPECT_LE(y.heap_bytes(), 4 * n);
  EXPECT_GE(grown, string_bytes + 4 * n);  // the measure sees the parse at all
  EXPECT_LE(grown, string_bytes + 8 * n + 4 * n + 64 * 1024) << "the parsed metadata holds " << grown << " bytes";
  EXPECT_TRUE(t == tokens.arr);
  EXPECT_TRUE(y == types.arr);
  EXPECT_EQ(t.str(12345), token(12345));
  EXPECT_EQ(y.as_int(12345), 12345 % 7);
}

TEST(GgufArrays, EveryElementTypeRewritesByteForByte) {
  gguf::Writer w;
  using T = gguf::ValueType;
  for (T t : {T::u8, T::i8, T::u16, T::i16, T::u32, T::i32, T::u64, T::i64, T::f32, T::f64, T::boolean}) {
    gguf::Value a = array_of(t);
    for (int k = 0; k < 5; ++k) {
      gguf::Value e = scalar(t);
      e.u = static_cast<uint64_t>(k * 977 + 1) * 0x9E3779B97F4A7C15ull;
      e.i = static_cast<int64_t>(e.u);
      e.f = -1.5 * k + 0.1;
      if (t == T::boolean) e.u = k % 2;
      a.arr.push_back(e);
    }
    w.set(std::string("a.") + gguf::value_type_name(t), a);
  }
  gguf::Value strs = array_of(T::string);
  for (const char* s : {"", "x", "\xE2\x96\x81hello", ""}) strs.arr.push_string(s);
  w.set("a.string", strs);
  gguf::Value nested = array_of(T::array);
  nested.arr.push_back(strs);
  nested.arr.push_back(array_of(T::f32));
  w.set("a.nested", nested);
  const auto bytes = w.serialize();
  const auto f = gguf::File::parse(bytes.data(), bytes.size(), "all.gguf");
  gguf::Writer again;
  for (const auto& [k, v] : f.metadata()) again.set(k, v);
  EXPECT_EQ(again.serialize(), bytes);
  const auto bits = [](int k) { return static_cast<uint64_t>(k * 977 + 1) * 0x9E3779B97F4A7C15ull; };
  EXPECT_EQ(f.get("a.i16").arr.as_int(2), static_cast<int16_t>(bits(2)));
  EXPECT_EQ(f.get("a.u8").arr.as_int(3), static_cast<uint8_t>(bits(3)));
  EXPECT_EQ(f.get("a.u64").arr.at(4).u, bits(4));
  EXPECT_EQ(f.get("a.i64").arr.at(4).i, static_cast<int64_t>(bits(4)));
  EXPECT_EQ(f.get("a.f32").arr.as_float(3), static_cast<double>(static_cast<float>(-1.5 * 3 + 0.1)));
  EXPECT_EQ(f.get("a.f64").arr.as_float(3), -1.5 * 3 + 0.1);
  EXPECT_TRUE(f.get("a.bool").arr.at(1).as_bool());
  EXPECT_EQ(f.get("a.string").arr.str(2), "\xE2\x96\x81hello");
  EXPECT_EQ(f.get("a.nested").arr.at(0).arr.str(1), "x");
  EXPECT_EQ(f.get("a.nested").arr.at(1).arr.size(), 0u);
}

TEST(GgufArrays, AccessorsRefuseOtherTypesAndIndices) {
  gguf::Value a = array_of(gguf::ValueType::i32);
  gguf::Value e = scalar(gguf::ValueType::i32);
  e.i = 7;
  a.arr.push_back(e);
  EXPECT_EQ(a.arr.as_int(0, "k"), 7);
  EXPECT_EQ(a.arr.as_float(0, "k"), 7.0);
  auto expect_rule = [](const auto& f, const std::string& rule) {
    try {
      f();
      ADD_FAILURE() << "accepted; wanted: " << rule;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(rule), std::string::npos) << err.what();
    }
  };
  expect_rule([&] { (void)a.arr.str(0, "k"); }, "metadata 'k' has the wrong type");
  expect_rule([&] { (void)a.arr.as_int(1, "k"); }, "metadata 'k': array index out of range");
  expect_rule([&] { (void)a.arr.at(1, "k"); }, "array index out of range");
  expect_rule([&] { a.arr.push_back(scalar(gguf::ValueType::u32), "k"); }, "array element of the wrong type");
  expect_rule([&] { a.arr.push_string("x"); }, "element of the wrong type");
  gguf::Value s = array_of(gguf::ValueType::string);
  s.arr.push_string("tok");
  expect_rule([&] { (void)s.arr.as_int(0, "k"); }, "metadata 'k' has the wrong type");
  expect_rule([&] { (void)s.arr.as_float(0, "k"); }, "metadata 'k' has the wrong type");
  EXPECT_EQ(a.arr.size(), 1u);  // nothing appended by the refused calls
  EXPECT_EQ(s.arr.size(), 1u);
}

TEST(GgufArrays, DamagedArraysAreRefusedWithFileKeyAndRule) {
  auto expect_rule = [](std::vector<uint8_t> b, const std::string& rule) {
    try {
      gguf::File::parse(b.data(), b.size(), "bad.gguf");
      ADD_FAILURE() << "accepted; wanted: " << rule;
    } catch (const Error& err) {
      const std::string what = err.what();
      EXPECT_NE(what.find(rule), std::string::npos) << what;
      EXPECT_NE(what.find("bad.gguf"), std::string::npos) << what;
    }
  };
  const size_t first = 24 + 8 + 1 + 4 + 4 + 8;  // key "k"
  gguf::Value bools = array_of(gguf::ValueType::boolean);
  for (int k = 0; k < 3; ++k) { gguf::Value e = scalar(gguf::ValueType::boolean); e.u = 1; bools.arr.push_back(e); }
  auto b = one_key("k", bools);
  b[first + 2] = 2;
  expect_rule(b, "metadata 'k': bool must be 0 or 1");

  gguf::Value strs = array_of(gguf::ValueType::string);
  strs.arr.push_string("ab");
  strs.arr.push_string("cd");
  b = one_key("k", strs);
  b[first + 8 + 2] = 0xFF;  // the second string's length: past the end
  expect_rule(b, "truncated file while reading a string value");
  b = one_key("k", strs);
  b[first - 8 + 5] = 0x10;  // the element count
  expect_rule(b, "metadata 'k': array longer than the file");
  b = one_key("k", strs);
  b[first - 12] = 13;  // element type
  expect_rule(b, "metadata 'k': unknown array element type");
}
