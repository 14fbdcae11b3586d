// `nvfp4 bench attention`: one JSON object per cache type and case, the ratios to the first type,
// and bad options refused with a non-zero exit naming the option.
#include <gtest/gtest.h>

#include <sstream>

#include "cli_util.h"

using namespace nvfp4::test;

TEST(CliBenchAttention, OneLinePerCacheTypeWithRatiosToTheFirst) {
  const Result r = cli("bench attention --kv f16,fp8,f32 --ctx 40,100 --threads 1 --residency cache --reps 2 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::vector<nlohmann::json> rows;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 6u) << r.out;
  const char* kvs[] = {"f16", "fp8", "f32"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    EXPECT_EQ(j["kv"], kvs[i % 3]);
    EXPECT_EQ(j["ctx"], i < 3 ? 40 : 100);
    EXPECT_EQ(j["residency"], "cache");
    EXPECT_EQ(j["layers"], 1);
    EXPECT_GT(j["median_us"].get<double>(), 0.0);
    EXPECT_LE(j["min_us"].get<double>(), j["median_us"].get<double>());
    EXPECT_LE(j["median_us"].get<double>(), j["max_us"].get<double>());
    EXPECT_GT(j["kv_gbps"].get<double>(), 0.0);
    if (i % 3 == 0) {
      EXPECT_DOUBLE_EQ(j["vs_first"].get<double>(), 1.0);
    }
  }
}

TEST(CliBenchAttention, BadOptionsAreRefusedByName) {
  const Result kv = cli("bench attention --kv bf16 --ctx 16 --threads 1 --residency cache --reps 1", true);
  EXPECT_NE(kv.rc, 0);
  EXPECT_NE(kv.out.find("--kv"), std::string::npos) << kv.out;
  EXPECT_NE(kv.out.find("bf16"), std::string::npos) << kv.out;
  const Result shape = cli("bench attention --heads 8 --kv-heads 3 --ctx 16 --threads 1 --residency cache --reps 1", true);
  EXPECT_NE(shape.rc, 0);
  EXPECT_NE(shape.out.find("8/3"), std::string::npos) << shape.out;
  const Result res = cli("bench attention --ctx 16 --threads 1 --residency l2 --reps 1", true);
  EXPECT_NE(res.rc, 0);
  EXPECT_NE(res.out.find("--residency"), std::string::npos) << res.out;
  const Result scale = cli("bench attention --ctx 16 --threads 1 --residency cache --reps 1 --scale -2", true);
  EXPECT_NE(scale.rc, 0);
  EXPECT_NE(scale.out.find("--scale"), std::string::npos) << scale.out;
}
