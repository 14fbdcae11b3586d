// `--experts-budget` through the real binaries on a real ModelOpt MoE export
// (fixtures/moe/qwen3_moe_i64/modelopt-nvfp4): run, serve and bench model with room for two experts
// give the tokens of the all-resident model, and report what the store did (run --json, bench
// model --json, GET /metrics); a second run reuses the file; bad budgets are refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_util.h"
#include "nvfp4/kernels.h"
#include "io_test_util.h"
#include "model_path.h"
#include "serve_util.h"
#include "test_util.h"

namespace {

using nvfp4::test::cli;
using nvfp4::test::json_of;
using nvfp4::test::Result;

// Two experts of this fixture (8 KiB each in the file's layout): 2 * 8192 / 2^30 GiB.
const char* kBudget = "0.0000153";

TEST(CliExperts, RunServeBenchWithTwoExpertsGiveTheResidentTokens) {
  const std::string m = nvfp4::test::fixture_path("moe/qwen3_moe_i64/modelopt-nvfp4");
  nvfp4::test::ScratchDir tmp;
  const std::string file = tmp.path + "/moe.experts";
  const std::string args = " -p 'The capital of France is' -n 8 --ctx 64 -t 2 --json";
  const Result plain = cli("run -m " + m + args);
  ASSERT_EQ(plain.rc, 0) << plain.out;
  const auto ids = json_of(plain)["ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(ids.empty());

  const std::string budget = std::string(" --experts-budget ") + kBudget + " --experts-file " + file;
  const Result r = cli("run -m " + m + args + budget);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = json_of(r);
  EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), ids);
  ASSERT_TRUE(j.contains("experts")) << r.out;
  EXPECT_EQ(j["experts"]["slots"].get<int64_t>(), 2);
  EXPECT_GT(j["experts"]["misses"].get<int64_t>(), 0);
  EXPECT_GT(j["experts"]["written_mib"].get<double>(), 0.0);
  EXPECT_GT(j["experts"]["disk_mb_per_token"].get<double>(), 0.0);
  // Again: the file holds the experts, nothing is written; the same tokens.
  const Result again = cli("run -m " + m + " -p 'The capital of France is' -n 8 --ctx 64 -t 1 --batch 1 --json" + budget);
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(json_of(again)["ids"].get<std::vector<int32_t>>(), ids);
  EXPECT_EQ(json_of(again)["experts"]["written_mib"].get<double>(), 0.0);
  // Every ISA this CPU has (NVFP4_ISA), through two experts: the same tokens.
  for (nvfp4::Isa isa : nvfp4::supported_isas()) {
    const Result r2 = nvfp4::test::sh("NVFP4_ISA=" + std::string(nvfp4::isa_name(isa)) + " " + NVFP4_BINARY + " run -m " + m + args + budget + " 2>/dev/null");
    ASSERT_EQ(r2.rc, 0) << nvfp4::isa_name(isa) << r2.out;
    EXPECT_EQ(json_of(r2)["ids"].get<std::vector<int32_t>>(), ids) << nvfp4::isa_name(isa);
  }
  // The log says where the experts come from.
  const Result text = cli("run -m " + m + " -p hi -n 2 --ctx 64" + budget, true);
  ASSERT_EQ(text.rc, 0) << text.out;
  EXPECT_NE(text.out.find("read from " + file + " on demand into 2 slots"), std::string::npos) << text.out;

  {
    nvfp4::test::ServeProcess srv({"serve", "-m", m, "--port", "0", "-t", "2", "--ctx", "64", "--parallel", "2",
                                   "--experts-budget", kBudget, "--experts-file", file});
    ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
    const auto c = nvfp4::test::complete(
        srv.port(), {{"prompt", "The capital of France is"}, {"max_tokens", 8}, {"temperature", 0}, {"return_tokens", true}}, false);
    ASSERT_EQ(c.status, 200) << srv.log();
    EXPECT_EQ(c.tokens, ids);
    const auto metrics = nvfp4::test::get(srv.port(), "/metrics");
    EXPECT_GT(nvfp4::test::metric(metrics.body, "nvfp4_experts_misses_total"), 0.0) << metrics.body;
    EXPECT_EQ(nvfp4::test::metric(metrics.body, "nvfp4_experts_slots"), 2.0) << metrics.body;
    EXPECT_EQ(srv.terminate(), 0) << srv.log();
  }

  if (!kUnderSanitizer) {
    const Result b = cli("bench model -m " + m + " -t 1 --prompt-tokens 8 --gen-tokens 4 --reps 1 --peer-python /nonexistent/python --json" + budget);
    ASSERT_EQ(b.rc, 0) << b.out;
    const auto bj = json_of(b);
    ASSERT_TRUE(bj.contains("experts")) << b.out;
    EXPECT_GT(bj["experts"]["gen"]["misses"].get<int64_t>() + bj["experts"]["gen"]["hits"].get<int64_t>(), 0);
    EXPECT_GE(bj["experts"]["disk_read_gbps"].get<double>(), 0.0);
  }
}

TEST(CliExperts, RefusesBadBudgetsWithExitCodes) {
  const std::string m = nvfp4::test::fixture_path("moe/qwen3_moe_i64/modelopt-nvfp4");
  nvfp4::test::ScratchDir tmp;
  const std::string base = "run -m " + m + " -p hi -n 2 --ctx 64 --experts-file " + tmp.path + "/e";
  for (const char* bad : {" --experts-budget abc", " --experts-budget 0", " --experts-budget 0.000001", ""}) {
    const Result r = cli(base + bad, true);
    EXPECT_NE(r.rc, 0) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--experts-"), std::string::npos) << bad << ": " << r.out;
    EXPECT_EQ(r.out.find("Segmentation"), std::string::npos) << r.out;
  }
  // A directory where the file should be written cannot be opened: an error naming it.
  const Result d = cli("run -m " + m + " -p hi -n 2 --ctx 64 --experts-budget " + kBudget + " --experts-file " + tmp.path, true);
  EXPECT_NE(d.rc, 0) << d.out;
  EXPECT_NE(d.out.find(tmp.path), std::string::npos) << d.out;
}

}  // namespace
