// `nvfp4 run` and `nvfp4 quality` end to end on the real SmolLM2 (quantized to NVFP4 at load):
// JSON output, exit codes, the w4a4 refusal, and the quality figures' sanity (a model against
// itself scores KL 0 and 100 % same top token); run --spec draft (-md) and its vocabulary refusal.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include "cli_util.h"
#include "model_path.h"
#include "test_util.h"

namespace {
using nvfp4::test::cli;
using nvfp4::test::Result;
}  // namespace

TEST(CliModel, RunJsonGreedy) {
  NVFP4_REQUIRE_SMOLLM2(path);
  // Sanitizer builds run the float model (quantizing at load there costs a minute).
  const std::string q = kUnderSanitizer ? "" : " --quantize";
  const Result r = cli("run -m " + path + q + " -p 'What is 2+2?' --chat -n 6 -t 2 --ctx 128 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["precision"], kUnderSanitizer ? "f32" : "a16q8");
  EXPECT_LE(j["ids"].size(), 6u);
  EXPECT_GT(j["ids"].size(), 0u);
  EXPECT_GT(j["prompt_tokens"].get<int>(), 20);  // the chat template's system turn is in the prompt
  EXPECT_GT(j["prompt_tps"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_mb"].get<double>(), 50.0);
  EXPECT_EQ(j["prompt_ids"][0], 1);  // <|im_start|>
  if (kUnderSanitizer) return;
  // Greedy decoding is reproducible.
  const Result r2 = cli("run -m " + path + " --quantize -p 'What is 2+2?' --chat -n 6 -t 1 --batch 3 --ctx 128 --json");
  ASSERT_EQ(r2.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(r2.out)["ids"], j["ids"]);
}

TEST(CliModel, RefusalsAndUsage) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const Result w4 = cli("run -m " + path + " --quantize --precision w4a4 -p hi -n 1", true);
  EXPECT_EQ(w4.rc, 1);
  EXPECT_NE(w4.out.find("w4a4"), std::string::npos) << w4.out;
  EXPECT_NE(w4.out.find("input_scale"), std::string::npos) << w4.out;
  EXPECT_EQ(cli("run -m " + path + " -p a -f b -n 1").rc, 1);
  EXPECT_EQ(cli("run -p hello").rc, 2);  // no model
  EXPECT_EQ(cli("run -m " + path + " -p hi --precision fp8").rc, 2);
  EXPECT_EQ(cli("run -m /nonexistent.gguf -p hi").rc, 1);
  const Result unknown = cli("run -m " + path + " --chat-template no-such -p hi -n 1", true);
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.out.find("llama3"), std::string::npos) << unknown.out;  // lists the known templates
}

// --chat-template-kwargs reaches the template: Qwen3.5's generation prompt closes the thinking
// block when enable_thinking is false (more prompt tokens), and a malformed value is refused
// naming the flag before the model loads.
TEST(CliModel, ChatTemplateKwargsReachTheTemplate) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const std::string base = "run -m " + path + " -p 'What is 2+2?' --chat-template qwen3.5 -n 0 -t 1 --ctx 128 --json";
  const Result on = cli(base);
  const Result off = cli(base + " --chat-template-kwargs '{\"enable_thinking\": false}'");
  ASSERT_EQ(on.rc, 0) << on.out;
  ASSERT_EQ(off.rc, 0) << off.out;
  const auto jon = nlohmann::json::parse(on.out), joff = nlohmann::json::parse(off.out);
  EXPECT_GT(joff["prompt_tokens"].get<int>(), jon["prompt_tokens"].get<int>());
  // The same prompt up to the thinking block.
  const auto& a = jon["prompt_ids"];
  const auto& b = joff["prompt_ids"];
  ASSERT_GT(a.size(), 4u);
  for (size_t i = 0; i + 1 < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
  const Result bad = cli("run -m /nonexistent.gguf -p hi --chat-template-kwargs '[1]'", true);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("--chat-template-kwargs"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("nonexistent"), std::string::npos) << bad.out;  // refused before loading
}

TEST(CliModel, QualityAgainstItselfAndFloat) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const auto dir = std::filesystem::temp_directory_path() / "nvfp4_cli_model";
  std::filesystem::create_directories(dir);
  const std::string text = (dir / "t.txt").string();
  {
    std::ifstream in(std::string(NVFP4_FIXTURES) + "/../data/quality.txt");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(text) << s.substr(0, 700);
  }
  const Result self = cli("quality -m " + path + " --ref " + path + " -f " + text + " --ctx 32 -t 2 --json");
  ASSERT_EQ(self.rc, 0) << self.out;
  const auto js = nlohmann::json::parse(self.out);
  EXPECT_EQ(js["same_top_pct"].get<double>(), 100.0);
  EXPECT_LT(js["kl_mean"].get<double>(), 1e-9);
  EXPECT_EQ(js["ppl"], js["ppl_ref"]);
  EXPECT_GT(js["tokens"].get<int>(), 40);
  if (kUnderSanitizer) {
    std::filesystem::remove_all(dir);
    return;
  }
  const Result q = cli("quality -m " + path + " --quantize --ref " + path + " -f " + text + " --ctx 32 -t 2 --json");
  ASSERT_EQ(q.rc, 0) << q.out;
  const auto jq = nlohmann::json::parse(q.out);
  for (const char* k : {"same_top_pct", "kl_mean", "kl_p99", "ppl", "ppl_ref", "tokens"}) EXPECT_TRUE(jq.contains(k)) << k;
  EXPECT_GT(jq["kl_mean"].get<double>(), 0.0);  // NVFP4 differs from the float model ...
  EXPECT_LT(jq["kl_mean"].get<double>(), 0.5);  // ... but not wildly
  EXPECT_GT(jq["same_top_pct"].get<double>(), 60.0);
  EXPECT_EQ(jq["ppl_ref"], js["ppl_ref"]);
  std::filesystem::remove_all(dir);
}

// `nvfp4 bench model --json --profile` carries the fields; without a usable llama.cpp
// peer its columns are null, not made up.
TEST(CliModel, BenchModelJson) {
  NVFP4_REQUIRE_SMOLLM2(path);
  if (kUnderSanitizer) GTEST_SKIP() << "the roofline streams 1 GiB: Release tree only";
  const Result r = cli("bench model -m " + path + " --quantize -t 2 --prompt-tokens 16 --gen-tokens 4 --reps 1 "
                       "--peer-python /nonexistent/python --json --profile");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  // --profile: the parts of a generated token, and the share of its dispatches' time the two
  // threads stood idle (a share, so within [0, 100)).
  ASSERT_TRUE(j.contains("profile"));
  EXPECT_FALSE(j["profile"]["parts"].empty());
  EXPECT_GE(j["profile"]["pool_idle_pct"].get<double>(), 0.0);
  EXPECT_LT(j["profile"]["pool_idle_pct"].get<double>(), 100.0);
  for (const char* k : {"prompt_tps", "gen_tps", "roofline_gen_tps", "dram_gbps", "peak_rss_mb",
                        "prompt_tps_min", "prompt_tps_max", "gen_tps_min", "gen_tps_max", "dispatches_per_token"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0.0) << k;
  }
  // The KV cache's bytes: SmolLM2 (30 layers, 3 KV heads of 64) at positions 16-19, F16 (the
  // default cache type); the roofline counting them sets the same rate against the larger byte count.
  EXPECT_DOUBLE_EQ(j["kv_bytes_per_token"].get<double>(), 2.0 * 30 * 192 * 2 * (16 + 2.5));
  EXPECT_NEAR(j["roofline_with_kv_pct"].get<double>() / j["roofline_pct"].get<double>(),
              (j["bytes_per_token"].get<double>() + j["kv_bytes_per_token"].get<double>()) / j["bytes_per_token"].get<double>(),
              1e-9);
  EXPECT_LE(j["gen_tps_min"].get<double>(), j["gen_tps"].get<double>());
  EXPECT_GE(j["gen_tps_max"].get<double>(), j["gen_tps"].get<double>());
  for (const char* k : {"llama_cpp_nvfp4_prompt_tps", "llama_cpp_nvfp4_gen_tps", "llama_cpp_q4_0_prompt_tps",
                        "llama_cpp_q4_0_gen_tps"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  EXPECT_EQ(j["kv"], "f16");
}

TEST(CliModel, RunSpecDraft) {
  NVFP4_REQUIRE_SMOLLM2(path);
  // llama.cpp's spelling -md; a draft with another vocabulary is refused naming both files.
  const std::string tiny = std::string(NVFP4_FIXTURES) + "/arch/llama/float";
  const Result bad = cli("run -m " + path + " --precision f32 --spec-allow-drift -md " + tiny + " -p hi -n 1", true);
  EXPECT_EQ(bad.rc, 1) << bad.out;
  EXPECT_NE(bad.out.find(path), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find(tiny), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("token count"), std::string::npos) << bad.out;
  EXPECT_EQ(cli("run -m " + path + " --precision f32 --spec draft -p hi -n 1").rc, 1);  // no draft model
  // The draft: the same GGUF in f32; the target a16q8 (f32 under the sanitizers, drift allowed).
  const std::string q = kUnderSanitizer ? " --precision f32 --spec-allow-drift" : " --quantize";
  const std::string args = " -p 'red green blue red green blue red' -n 8 -t 2 --ctx 128 --json";
  const Result r = cli("run -m " + path + q + " -md " + path + " --draft-max 4" + args);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& s = j["speculative"];
  EXPECT_EQ(s["method"], "draft");
  EXPECT_EQ(s["proposer"], "draft model");
  EXPECT_EQ(s["draft_precision"], "f32");
  EXPECT_EQ(s["draft_max"], 4);
  EXPECT_GE(s["drafted"].get<int64_t>(), s["accepted"].get<int64_t>());
  EXPECT_GT(s["accepted"].get<int64_t>(), 0);
  EXPECT_GE(s["acceptance"].get<double>(), 0.0);
  EXPECT_LE(s["acceptance"].get<double>(), 1.0);
  if (kUnderSanitizer) return;
  const Result plain = cli("run -m " + path + q + args);
  ASSERT_EQ(plain.rc, 0) << plain.out;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["ids"], j["ids"]);
}

// `bench model --contention`: -t 1 and -t 2, alone and under the busy loop, each with its
// hand-offs per token (none on one thread, some on two); the llama.cpp columns null without a peer.
TEST(CliModel, BenchModelContentionJson) {
  NVFP4_REQUIRE_SMOLLM2(path);
  if (kUnderSanitizer) GTEST_SKIP() << "a busy loop on every core: Release tree only";
  const Result r = cli("bench model -m " + path + " --quantize -t 2 --prompt-tokens 4 --gen-tokens 2 --reps 1 "
                       "--contention --peer-python /nonexistent/python --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"gen_tps_t1", "gen_tps_tdefault", "gen_tps_t1_loaded", "gen_tps_tdefault_loaded", "loaded_default_vs_t1"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GT(j[k].get<double>(), 0.0) << k;
  }
  for (const char* k : {"llama_cpp_gen_tps_t1_loaded", "llama_cpp_gen_tps_tdefault_loaded"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_null()) << k;
  }
  ASSERT_EQ(j["runs"].size(), 4u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["engine"], "nvfp4");
    if (run["threads"] == 1) EXPECT_EQ(run["dispatches_per_token"].get<double>(), 0.0);
    else EXPECT_GT(run["dispatches_per_token"].get<double>(), 0.0);
  }
}

// The server is its own executable (nvfp4-server); `nvfp4` does not load the HTTP library and
// the OpenSSL, zlib and brotli it is built with, and `nvfp4 serve` runs the server with every
// argument as given.
TEST(CliModel, ServeIsItsOwnExecutableAndNvfp4LoadsNoHttpLibrary) {
  FILE* p = ::popen((std::string("ldd ") + NVFP4_BINARY + " 2>&1").c_str(), "r");
  std::string ldd;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) ldd.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << ldd;
  for (const char* lib : {"libcpp-httplib", "libssl", "libcrypto", "libbrotli"})
    EXPECT_EQ(ldd.find(lib), std::string::npos) << lib << " in\n" << ldd;
  const Result help = cli("serve --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--port"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("nvfp4 serve"), std::string::npos) << help.out;
  const Result bad = cli("serve --no-such-flag");
  EXPECT_EQ(bad.rc, 2) << bad.out;  // a usage error, as every command's
}
