// safetensors reader and writer: a file written by PyPI safetensors (tools/gen_io_fixtures.py) is
// read correctly and rewritten byte for byte; every damage rule is refused with its rule named.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

#include "io_test_util.h"
#include "nvfp4/error.h"
#include "nvfp4/safetensors.h"
#include "test_util.h"

using namespace nvfp4;
namespace st = nvfp4::safetensors;

namespace {

nlohmann::json expected() {
  std::ifstream f(test::fixture_path("io/py.expected.json"));
  return nlohmann::json::parse(f)["safetensors"];
}

// A file from a header string and a byte buffer.
std::vector<uint8_t> make(const std::string& header, size_t buffer, uint64_t len_override = ~0ull) {
  std::vector<uint8_t> b(8 + header.size() + buffer, 0x3C);
  const uint64_t n = len_override == ~0ull ? header.size() : len_override;
  std::memcpy(b.data(), &n, 8);
  if (!header.empty()) std::memcpy(b.data() + 8, header.data(), header.size());
  return b;
}

// Parses and returns the rule of the error (empty when accepted).
std::string rule_of(const std::vector<uint8_t>& b) {
  try {
    st::File::parse(b.data(), b.size(), "x.safetensors");
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "x.safetensors");
    return e.rule();
  }
  return "";
}

}  // namespace

TEST(Safetensors, ReadsEveryDtypeWrittenByPypiSafetensors) {
  const auto f = st::File::open(test::fixture_path("io/py.safetensors"));
  const auto ex = expected();
  EXPECT_EQ(f.metadata().size(), 1u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), ex["tensors"].size());
  for (auto it = ex["tensors"].begin(); it != ex["tensors"].end(); ++it) {
    SCOPED_TRACE(it.key());
    const auto& t = f.tensor(it.key());
    EXPECT_EQ(st::dtype_name(t.dtype), it.value()["dtype"].get<std::string>());
    EXPECT_EQ(t.shape, it.value()["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(test::to_hex(t.data, static_cast<size_t>(t.nbytes())), it.value()["hex"].get<std::string>());
    if (it.value().contains("values")) {
      ASSERT_TRUE(st::dtype_is_float(t.dtype));
      std::vector<float> v(static_cast<size_t>(t.elements()));
      st::to_float(t, v.data());
      const auto& want = it.value()["values"];
      ASSERT_EQ(v.size(), want.size());
      for (size_t i = 0; i < v.size(); ++i) {
        if (want[i].is_string()) {
          EXPECT_TRUE(std::isnan(v[i])) << i;
        } else {
          EXPECT_EQ(v[i], want[i].get<float>()) << i;
        }
      }
    } else {
      std::vector<float> v(static_cast<size_t>(t.elements()) + 1);
      EXPECT_THROW(st::to_float(t, v.data()), Error);
    }
  }
  EXPECT_EQ(f.find_tensor("absent"), nullptr);
  EXPECT_THROW(f.tensor("absent"), Error);
}

TEST(Safetensors, WriterReproducesPypiFileByteForByte) {
  const std::string path = test::fixture_path("io/py.safetensors");
  const auto f = st::File::open(path);
  std::vector<st::WriteTensor> ts;
  // Feed them in reverse name order: the writer must sort as the reference does.
  for (auto it = f.tensors().rbegin(); it != f.tensors().rend(); ++it) {
    ts.push_back({it->name, it->dtype, it->shape, it->data, static_cast<size_t>(it->nbytes())});
  }
  const auto ours = st::serialize(ts, f.metadata());
  EXPECT_EQ(ours, test::file_bytes(path));

  test::ScratchDir dir;
  st::write(dir / "out.safetensors", ts, f.metadata());
  EXPECT_EQ(test::file_bytes(dir / "out.safetensors"), ours);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});  // no temp file left
  const auto back = st::File::open(dir / "out.safetensors");
  EXPECT_EQ(back.tensors().size(), f.tensors().size());
}

TEST(Safetensors, WriterLeavesNoFileOnError) {
  test::ScratchDir dir;
  const float v[2] = {1, 2};
  // 3 elements declared, 8 bytes given.
  EXPECT_THROW(st::write(dir / "bad.safetensors", {{"a", st::Dtype::F32, {3}, v, 8}}), Error);
  EXPECT_THROW(st::write(dir / "dup.safetensors", {{"a", st::Dtype::F32, {2}, v, 8}, {"a", st::Dtype::F32, {2}, v, 8}}), Error);
  EXPECT_THROW(st::write(dir / "res.safetensors", {{"__metadata__", st::Dtype::F32, {2}, v, 8}}), Error);
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_THROW(st::write(dir.path + "/no/such/dir/x.safetensors", {{"a", st::Dtype::F32, {2}, v, 8}}), Error);
}

TEST(Safetensors, AcceptsAMinimalValidFile) {
  EXPECT_EQ(rule_of(make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)), "");
  EXPECT_EQ(rule_of(make(R"({"__metadata__":{"k":"v"},"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}   )", 1)), "");
  EXPECT_EQ(rule_of(make(R"({"a":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})", 3)), "");
  EXPECT_EQ(rule_of(make(R"({})", 0)), "");
}

TEST(Safetensors, RefusesEveryKindOfDamage) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* rule;
  };
  std::vector<uint8_t> tiny = {1, 2, 3};
  std::string deep = "{";
  for (int k = 0; k < 40; ++k) deep += "\"k\":{";
  deep += std::string(41, '}');
  const std::vector<Case> cases = {
      {"shorter than the length", tiny, "truncated file: no header length"},
      {"header length past the file", make(ok, 8, 1000), "header length runs past the end of the file"},
      {"header length past the file by one", make(ok, 0, ok.size() + 1), "header length runs past the end of the file"},
      {"not an object start", make("[1]", 0), "header does not start with '{'"},
      {"empty header", make("", 0), "header does not start with '{'"},
      {"bad JSON", make(R"({"a":{"dtype":"F32",)", 8), "header is not valid JSON"},
      {"trailing garbage", make(ok + "x", 8), "header is not valid JSON"},
      {"unknown dtype", make(R"({"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype"},
      {"dtype not a string", make(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", 8), "tensor entry has no dtype string"},
      {"shape/offset mismatch", make(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "shape and dtype do not match the data_offsets"},
      {"negative shape", make(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "shape entry is not a non-negative integer below 2^48"},
      {"float shape", make(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8), "shape entry is not a non-negative integer below 2^48"},
      {"huge shape", make(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8), "tensor has too many elements"},
      {"no shape", make(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8), "tensor entry has no shape array"},
      {"end before begin", make(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", 8), "data_offsets end before they begin"},
      {"three offsets", make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}})", 8), "tensor entry has no [begin, end] data_offsets"},
      {"negative offset", make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8), "data_offsets are not non-negative integers"},
      {"offsets out of range", make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8), "data_offsets run past the end of the file"},
      {"overlap", make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "tensor data overlaps another tensor"},
      {"gap", make(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "gap in the byte buffer before a tensor"},
      {"buffer not covered", make(ok, 12), "tensors do not cover the byte buffer"},
      {"duplicate names", make(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2), "duplicate name in the header"},
      {"metadata value not a string", make(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "__metadata__ value is not a string"},
      {"metadata not an object", make(R"({"__metadata__":[],"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "__metadata__ is not an object"},
      {"entry not an object", make(R"({"a":[1,2]})", 0), "tensor entry is not an object"},
      {"sub-byte not whole bytes", make(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", 1), "sub-byte tensor does not fill whole bytes"},
      {"nested too deep", make(deep, 0), "header nested too deep"},
  };
  for (const auto& c : cases) EXPECT_EQ(rule_of(c.bytes), c.rule) << c.what;
}

TEST(Safetensors, ErrorNamesTheTensorAndWhatWasFound) {
  const auto b = make(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
  try {
    st::File::parse(b.data(), b.size(), "m.safetensors");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "m.safetensors");
    EXPECT_EQ(e.tensor(), "w");
    EXPECT_EQ(e.expected(), "12 bytes (F32 x 3)");
    EXPECT_EQ(e.found(), "8 bytes");
  }
}

TEST(Safetensors, TruncatedRealFileIsRefusedAtEveryLength) {
  const auto full = test::file_bytes(test::fixture_path("io/py.safetensors"));
  for (size_t n = 0; n < full.size(); n += 7) {
    EXPECT_THROW(st::File::parse(full.data(), n, "cut"), Error) << n;
  }
}
