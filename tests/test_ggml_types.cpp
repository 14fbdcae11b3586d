// ggml block formats against PyPI gguf's dequantizers (tools/gen_ggml_quant_fixtures.py), and
// rows of the real SmolLM2 GGUF when NVFP4_SMOLLM2_GGUF names it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"
#include "nvfp4/gguf.h"
#include "test_util.h"

using namespace nvfp4;


TEST(GgmlTypes, BlockFormatsEqualPypiGguf) {
  struct { uint32_t id; const char* name; } types[] = {
      {ggml::Q4_0, "Q4_0"}, {ggml::Q4_1, "Q4_1"}, {ggml::Q8_0, "Q8_0"}, {ggml::Q4_K, "Q4_K"}, {ggml::Q6_K, "Q6_K"}};
  for (auto t : types) {
    const auto blocks = test::read_fixture<uint8_t>(std::string("ggml/") + t.name + ".blocks");
    const auto want = test::read_fixture<float>(std::string("ggml/") + t.name + ".f32");
    const GgmlTypeInfo* info = ggml_type_info(t.id);
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(blocks.size() / info->block_bytes * info->block_values, want.size()) << t.name;
    std::vector<float> got(want.size());
    ggml_dequantize_row(t.id, blocks.data(), got.data(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << t.name << " value " << i;
    }
  }
}

TEST(GgmlTypes, UnknownOrUnsupportedTypesAreRefused) {
  float y[256];
  uint8_t b[512] = {};
  EXPECT_THROW(ggml_dequantize_row(ggml::Q5_K, b, y, 256), Error);
  EXPECT_THROW(ggml_row_bytes(999, 32), Error);
  EXPECT_THROW(ggml_row_bytes(ggml::Q4_K, 100), Error);
  EXPECT_EQ(ggml_row_bytes(ggml::Q4_1, 576), 576 / 32 * 20);
  EXPECT_EQ(ggml_type_name(ggml::NVFP4), "NVFP4");
  EXPECT_EQ(ggml_type_name(77), "type 77");
}

TEST(GgmlTypes, RealSmolLM2RowsEqualPypiGguf) {
  const char* path = std::getenv("NVFP4_SMOLLM2_GGUF");
  if (!path) GTEST_SKIP() << "NVFP4_SMOLLM2_GGUF not set (scripts/test.sh sets it)";
  auto f = gguf::File::open(path);
  std::ifstream js(test::fixture_path("ggml/smollm2_rows.json"));
  const auto want = nlohmann::json::parse(js);
  for (const auto& [name, rows] : want.items()) {
    const auto& t = f.tensor(name);
    const int64_t rb = ggml_row_bytes(t.type, t.ne[0]);
    std::vector<float> row(t.ne[0]);
    for (const auto& [idx, w] : rows.items()) {
      const int64_t r = std::stoll(idx);
      ggml_dequantize_row(t.type, t.data + r * rb, row.data(), t.ne[0]);
      for (int i = 0; i < 8; ++i) EXPECT_EQ(row[i], w["first"][i].get<float>()) << name << " row " << r;
      double s = 0;
      for (float v : row) s += v;
      EXPECT_NEAR(s, w["sum"].get<double>(), 1e-9 * (1 + std::fabs(s))) << name << " row " << r;
    }
  }
}
