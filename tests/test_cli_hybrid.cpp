// Every command, through the real binaries, on the Gated DeltaNet hybrids as users download them
// (fixtures/hybrid: Qwen3.5 in the releases' VLM layout, Qwen3.5-MoE from ModelOpt, Qwen3-Next
// from llm-compressor): inspect (the vision tower and MTP layers set aside), run as a user runs it
// and with --json on 1 and 2 threads (the same ids), serve (the tokens of run), bench model (its
// state bytes), quality against the float model, and convert to a directory (lossless: verify
// says so, and it runs to the same tokens).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "io_test_util.h"
#include "model_path.h"
#include "serve_util.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct Form {
  const char* dir;  // under fixtures/hybrid
  const char* ref;  // the float model of the same weights
  bool vlm;         // the release layout (vision tower, MTP layers)
  bool quantized;
};

const Form kForms[] = {
    {"qwen3_5/float-vlm", "qwen3_5/float", true, false},
    {"qwen3_5_moe/modelopt-nvfp4", "qwen3_5_moe/float", false, true},
    {"qwen3_next/ct-nvfp4", "qwen3_next/float", false, true},
};

using nvfp4::test::cli;
using nvfp4::test::json_of;
using nvfp4::test::Result;
using nvfp4::test::ids_of;
class CliHybrid : public ::testing::TestWithParam<Form> {};

}  // namespace

TEST_P(CliHybrid, InspectRunServeBenchQualityConvert) {
  const Form& f = GetParam();
  const std::string m = nvfp4::test::fixture_path(std::string("hybrid/") + f.dir);
  const std::string ref = nvfp4::test::fixture_path(std::string("hybrid/") + f.ref);

  const Result ins = cli("inspect " + m + " --json");
  ASSERT_EQ(ins.rc, 0) << ins.out;
  EXPECT_EQ(json_of(ins)["set_aside"].size(), f.vlm ? 2u : 0u) << ins.out;
  EXPECT_EQ(cli("inspect " + m).rc, 0);

  const std::string args = " -p 'hello world, hello' -n 8 --ctx 64";
  const Result plain = cli("run -m " + m + args + " -t 2", true);
  ASSERT_EQ(plain.rc, 0) << plain.out;
  EXPECT_NE(plain.out.find("Gated DeltaNet layers"), std::string::npos) << plain.out;
  if (f.vlm) {
    EXPECT_NE(plain.out.find("left out: vision tower"), std::string::npos) << plain.out;
  }

  for (const char* prec : {"f32", "a16q8"}) {
    if (!f.quantized && std::string(prec) == "a16q8") continue;
    SCOPED_TRACE(prec);
    const Result r2 = cli("run -m " + m + args + " --precision " + prec + " -t 2 --json");
    ASSERT_EQ(r2.rc, 0) << r2.out;
    const auto ids = ids_of(r2);
    ASSERT_FALSE(ids.empty());
    EXPECT_FALSE(json_of(r2)["prompt_ids"].empty());
    EXPECT_EQ(ids_of(cli("run -m " + m + args + " --precision " + prec + " -t 1 --batch 3 --json")), ids);
  }

  const auto ids = ids_of(cli("run -m " + m + args + " -t 2 --json"));
  {
    nvfp4::test::ServeProcess srv({"serve", "-m", m, "--port", "0", "-t", "2", "--ctx", "64", "--parallel", "2"});
    ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
    const auto c = nvfp4::test::complete(srv.port(), {{"prompt", "hello world, hello"}, {"max_tokens", 8}, {"temperature", 0}, {"return_tokens", true}}, false);
    ASSERT_EQ(c.status, 200) << srv.log();
    EXPECT_EQ(c.tokens, ids);
    EXPECT_EQ(srv.terminate(), 0) << srv.log();
  }

  if (!kUnderSanitizer) {
    const Result b = cli("bench model -m " + m + " -t 1 --prompt-tokens 8 --gen-tokens 4 --reps 1 --peer-python /nonexistent/python --json");
    ASSERT_EQ(b.rc, 0) << b.out;
    const Json bj = json_of(b);
    EXPECT_GT(bj["gen_tps"].get<double>(), 0.0);
    EXPECT_GT(bj["state_bytes_per_token"].get<double>(), 0.0);
  }

  nvfp4::test::ScratchDir tmp;
  {
    std::ifstream in(std::string(NVFP4_FIXTURES) + "/../data/quality.txt");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(tmp / "t.txt") << s.substr(0, 400);
  }
  const Result q = cli("quality -m " + m + " --ref " + ref + " -f " + (tmp / "t.txt") + " --ctx 32 -t 2 --json");
  ASSERT_EQ(q.rc, 0) << q.out;
  const double kl = json_of(q)["kl_mean"].get<double>();
  EXPECT_TRUE(std::isfinite(kl) && kl >= 0.0) << kl;
  if (f.quantized) EXPECT_GT(kl, 0.0);
  else EXPECT_LT(kl, 1e-9);  // the same float weights

  if (f.quantized) {
    const std::string odir = tmp / "out";
    struct RemoveAll {
      std::string p;
      ~RemoveAll() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    } remove_odir{odir};
    const Result cd = cli("convert " + m + " " + odir + "/", true);
    ASSERT_EQ(cd.rc, 0) << cd.out;
    EXPECT_NE(cd.out.find("0 quantized to NVFP4"), std::string::npos) << cd.out;  // b, a, conv kept float
    EXPECT_EQ(ids_of(cli("run -m " + odir + args + " -t 2 --json")), ids);
    const Result v = cli("verify " + m + " " + odir, true);
    EXPECT_EQ(v.rc, 0) << v.out;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryForm, CliHybrid, ::testing::ValuesIn(kForms), [](const auto& info) {
  std::string s = info.param.dir;
  for (char& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
});
