// `--spec mtp` through the real binaries on the Qwen3.5 release layout (fixtures/hybrid/qwen3_5/
// float-vlm, its MTP layer beside the text model) and Nemotron 3 Super's (fixtures/nemotron_h/
// nemotron3_latent/float-mtp; both quantized at load to run a16q8): run gives the
// ids of plain decoding and says what drafted; serve gives them alone and under concurrent load
// and counts the drafts in /metrics (serve with a draft vocabulary, run with and without); a
// checkpoint without MTP layers is refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <future>

#include "cli_util.h"
#include "serve_util.h"
#include "test_util.h"

namespace {

using nvfp4::test::cli;
using nvfp4::test::json_of;
using nvfp4::test::Result;

using nvfp4::test::ids_of;

// A speculating server's greedy completion of `prompt` (24 tokens) alone and under three
// concurrent requests (streamed and not) is `plain`; /metrics counts drafts; its log names what
// drafted (`drafter`); it exits cleanly.
void expect_serve_gives(nvfp4::test::ServeProcess& srv, const std::string& prompt, const std::vector<int32_t>& plain,
                        const std::string& drafter) {
  ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
  const nlohmann::json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"return_tokens", true}};
  const auto alone = nvfp4::test::complete(srv.port(), body, false);
  ASSERT_EQ(alone.status, 200) << srv.log();
  EXPECT_EQ(alone.tokens, plain);
  std::vector<std::future<nvfp4::test::Completion>> many;
  for (int i = 0; i < 3; ++i)
    many.push_back(std::async(std::launch::async, [&srv, &body, i] { return nvfp4::test::complete(srv.port(), body, i % 2 == 1); }));
  for (auto& f : many) {
    const auto c = f.get();
    ASSERT_EQ(c.status, 200) << srv.log();
    EXPECT_EQ(c.tokens, plain);
  }
  const auto metrics = nvfp4::test::get(srv.port(), "/metrics");
  EXPECT_GT(nvfp4::test::metric(metrics.body, "nvfp4_spec_drafted_tokens_total"), 0.0) << metrics.body;
  EXPECT_NE(srv.log().find(drafter), std::string::npos) << srv.log();
  EXPECT_EQ(srv.terminate(), 0) << srv.log();
}
// The Qwen3.5 release layout (one MTP layer) and Nemotron 3 Super's (an attention and a MoE layer
// after Mamba-2 layers whose states roll back through snapshots).
struct MtpRelease {
  const char* dir;
  int64_t n_vocab;
};
class CliMtpRelease : public ::testing::TestWithParam<MtpRelease> {};

TEST_P(CliMtpRelease, RunAndServeGiveThePlainTokens) {
  const std::string m = nvfp4::test::fixture_path(GetParam().dir);
  const std::string args = " --quantize -p 'hello world, hello' -n 24 --ctx 64 -t 2 --json";
  const auto plain = ids_of(cli("run -m " + m + args));
  ASSERT_EQ(plain.size(), 24u);
  const Result r = cli("run -m " + m + args + " --spec mtp --draft-max 3 --spec-allow-low-acceptance");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(ids_of(r), plain);
  const nlohmann::json sj = json_of(r)["speculative"];
  EXPECT_EQ(sj["method"], "mtp");
  EXPECT_EQ(sj["proposer"], "MTP module");
  EXPECT_GT(sj["draft_evaluated"].get<int64_t>(), 0);
  EXPECT_EQ(sj["draft_vocab"], GetParam().n_vocab);
  // A draft vocabulary (--draft-vocab, rounded up to 64 rows): other drafts, the same ids.
  const Result dv = cli("run -m " + m + args + " --spec mtp --draft-max 3 --spec-allow-low-acceptance --draft-vocab 100");
  ASSERT_EQ(dv.rc, 0) << dv.out;
  EXPECT_EQ(ids_of(dv), plain);
  EXPECT_EQ(json_of(dv)["speculative"]["draft_vocab"], 128);
  const Result log = cli("run -m " + m + " --quantize -p 'hello world, hello' -n 4 --ctx 64 --spec mtp --spec-allow-low-acceptance", true);
  ASSERT_EQ(log.rc, 0) << log.out;
  EXPECT_NE(log.out.find("the checkpoint's MTP module"), std::string::npos) << log.out;
  EXPECT_EQ(log.out.find("left out: multi-token-prediction"), std::string::npos) << log.out;  // read, not set aside

  nvfp4::test::ServeProcess srv({"serve", "-m", m, "--quantize", "--port", "0", "-t", "2", "--ctx", "64", "--parallel", "3",
                                 "--spec", "mtp", "--spec-allow-low-acceptance", "--draft-max", "3", "--spec-min-speedup", "0",
                                 "--draft-vocab", "256"});
  expect_serve_gives(srv, "hello world, hello", plain, "the checkpoint's MTP module");
}

INSTANTIATE_TEST_SUITE_P(Releases, CliMtpRelease,
                         ::testing::Values(MtpRelease{"hybrid/qwen3_5/float-vlm", 503}, MtpRelease{"nemotron_h/nemotron3_latent/float-mtp", 504}),
                         [](const auto& i) { return std::string(i.param.dir).substr(0, std::string(i.param.dir).find('/')); });

// The fixture's MTP layer is random: its acceptance on the check text is far below the floor, so
// --spec mtp refuses it with the figure unless told otherwise.
TEST(CliMtp, AModuleBelowTheAcceptanceFloorIsRefused) {
  const std::string m = nvfp4::test::fixture_path("hybrid/qwen3_5/float-vlm");
  const Result r = cli("run -m " + m + " --quantize -p hi -n 4 --spec mtp", true);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("acceptance on the check text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--spec-allow-low-acceptance"), std::string::npos) << r.out;
  const Result ok = cli("run -m " + m + " --quantize -p hi -n 4 --spec mtp --spec-allow-low-acceptance --json");
  ASSERT_EQ(ok.rc, 0) << ok.out;
  const double a = json_of(ok)["speculative"]["check_acceptance"].get<double>();
  EXPECT_GE(a, 0.0);
  EXPECT_LT(a, 0.2);
}

// --draft-quantize with --spec mtp: the release's own MTP layers (BF16 here) quantized to NVFP4 at
// load, the trunk as stored (float, run in f32: drift allowed); the load log says what each holds.
TEST(CliMtp, DraftQuantizeQuantizesTheReleasesMtpLayersOnly) {
  const std::string m = nvfp4::test::fixture_path("hybrid/qwen3_5/float-vlm");
  const std::string args = " -p 'hello world, hello' -n 8 --ctx 64 -t 2 --spec mtp --spec-allow-low-acceptance --spec-allow-drift";
  const Result as_stored = cli("run -m " + m + args, true);
  ASSERT_EQ(as_stored.rc, 0) << as_stored.out;
  EXPECT_NE(as_stored.out.find("0 NVFP4 and"), std::string::npos) << as_stored.out;
  const Result q = cli("run -m " + m + args + " --draft-quantize", true);
  ASSERT_EQ(q.rc, 0) << q.out;
  EXPECT_NE(q.out.find("linear layers: 0 NVFP4"), std::string::npos) << q.out;  // the trunk as stored
  EXPECT_NE(q.out.find("and 0 float linear layers"), std::string::npos) << q.out;  // the module all NVFP4
}

TEST(CliMtp, WithoutMtpLayersItIsRefusedByName) {
  const std::string m = nvfp4::test::fixture_path("hybrid/qwen3_5/float");
  const Result r = cli("run -m " + m + " --quantize -p hi -n 4 --spec mtp", true);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("mtp.fc"), std::string::npos) << r.out;
  const Result side = cli("run -m " + m + " --quantize -p hi -n 4 --spec ngram --mtp " + m, true);
  EXPECT_NE(side.rc, 0);
  EXPECT_NE(side.out.find("--mtp is the MTP side file of --spec mtp"), std::string::npos) << side.out;
}

}  // namespace

namespace {
// Muse Glimmer's release drafter (a DFlash block drafter: fixtures/muse_glimmer/assistant): run
// alone it is refused as what it is, before the tokenizer it does not have, naming how it runs;
// as the draft of its target (-md DIR alone picks --spec dflash) it gives the ids of plain
// decoding, and its random weights' acceptance on the check text is refused below the floor.
TEST(CliMtp, ABlockDrafterRunsAsItsTargetsDraft) {
  const std::string dir = nvfp4::test::fixture_path("muse_glimmer");
  const Result alone = cli("run -m " + dir + "/assistant -p hi -n 4", true);
  EXPECT_NE(alone.rc, 0);
  EXPECT_NE(alone.out.find("a speculative drafter (muse_glimmer_assistant"), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("--spec dflash --model-draft"), std::string::npos) << alone.out;
  EXPECT_EQ(alone.out.find("tokenizer.json"), std::string::npos) << alone.out;
  const Result zalone = cli("run -m " + nvfp4::test::fixture_path("dflash") + "/qwen3 -p hi -n 4", true);  // z-lab's layout
  EXPECT_NE(zalone.rc, 0);
  EXPECT_NE(zalone.out.find("a speculative drafter (DFlashDraftModel"), std::string::npos) << zalone.out;
  const Result zinspect = cli("inspect " + nvfp4::test::fixture_path("dflash") + "/qwen3", true);
  EXPECT_NE(zinspect.rc, 0);
  EXPECT_NE(zinspect.out.find("drafter:   DFlash (DFlashDraftModel)"), std::string::npos) << zinspect.out;
  const std::string args = " --quantize -p 'The quick brown fox jumps over the lazy dog. The quick brown' -n 24 --ctx 96 -t 2 --json";
  const auto plain = ids_of(cli("run -m " + dir + "/float" + args));
  ASSERT_FALSE(plain.empty());
  const Result low = cli("run -m " + dir + "/float" + args + " -md " + dir + "/assistant", true);
  EXPECT_NE(low.rc, 0);
  EXPECT_NE(low.out.find("the DFlash assistant's acceptance on the check text"), std::string::npos) << low.out;
  const Result r = cli("run -m " + dir + "/float" + args + " -md " + dir + "/assistant --spec-allow-low-acceptance --draft-max 3");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(ids_of(r), plain);
  const nlohmann::json sj = json_of(r)["speculative"];
  EXPECT_EQ(sj["method"], "dflash");
  EXPECT_EQ(sj["proposer"], "DFlash assistant");
  EXPECT_EQ(sj["block_size"], 4);
  EXPECT_GE(sj["check_acceptance"].get<double>(), 0.0);
  EXPECT_GT(sj["draft_evaluated"].get<int64_t>(), 0);
  EXPECT_GT(sj["drafted"].get<int64_t>(), 0);
  const Result wrong = cli("run -m " + dir + "/float" + args + " --spec draft -md " + dir + "/assistant", true);
  EXPECT_NE(wrong.rc, 0);
  EXPECT_NE(wrong.out.find("--spec dflash"), std::string::npos) << wrong.out;

  // bench model --dflash: the draft and verify steps timed for k = 3 (the block's 3 drafts here).
  const Result b = cli("bench model -m " + dir + "/float --quantize -t 1 --prompt-tokens 12 --gen-tokens 4 --reps 1 --json --dflash " +
                       dir + "/assistant");
  ASSERT_EQ(b.rc, 0) << b.out;
  const nlohmann::json bj = json_of(b)["dflash"];
  EXPECT_EQ(bj["block_size"], 4);
  ASSERT_EQ(bj["drafts"].size(), 1u) << bj.dump();
  EXPECT_EQ(bj["drafts"][0]["k"], 3);
  EXPECT_GT(bj["drafts"][0]["draft_ms"].get<double>(), 0.0);
  EXPECT_GT(bj["drafts"][0]["verify_ms"].get<double>(), 0.0);
  EXPECT_GT(bj["plain_ms"].get<double>(), 0.0);
  EXPECT_NE(bj["drafter"].get<std::string>().find("muse_glimmer_assistant"), std::string::npos);
  // serve: one assistant context per slot; alone and under concurrent load, the plain ids.
  nvfp4::test::ServeProcess srv({"serve", "-m", dir + "/float", "--quantize", "--port", "0", "-t", "2", "--ctx", "96", "--parallel", "3",
                                 "-md", dir + "/assistant", "--spec-allow-low-acceptance", "--draft-max", "3", "--spec-min-speedup", "0"});
  expect_serve_gives(srv, "The quick brown fox jumps over the lazy dog. The quick brown", plain, "DFlash assistant");
}

// Gemma 4's assistant (gemma4_assistant) as its target's draft: -md DIR picks --spec mtp; refused
// alone, with another method, below the acceptance floor; the plain ids in run and under serve's load.
TEST(CliMtp, GemmasAssistantRunsAsItsTargetsDraft) {
  const std::string target = nvfp4::test::fixture_path("gemma4") + "/float", dir = nvfp4::test::fixture_path("gemma4_assistant");
  const Result alone = cli("run -m " + dir + "/assistant -p hi -n 4", true);
  EXPECT_NE(alone.rc, 0);
  EXPECT_NE(alone.out.find("a speculative drafter (gemma4_assistant"), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("--spec mtp --model-draft"), std::string::npos) << alone.out;
  const Result insp = cli("inspect " + dir + "/assistant", true);
  EXPECT_NE(insp.rc, 0);
  EXPECT_NE(insp.out.find("drafter:   Gemma 4 assistant (gemma4_assistant)"), std::string::npos) << insp.out;
  const std::string args = " --quantize -p 'The quick brown fox jumps over the lazy dog. The quick brown' -n 24 --ctx 96 -t 2 --json";
  const auto plain = ids_of(cli("run -m " + target + args));
  ASSERT_FALSE(plain.empty());
  const Result low = cli("run -m " + target + args + " -md " + dir + "/assistant", true);
  EXPECT_NE(low.rc, 0);
  EXPECT_NE(low.out.find("the Gemma 4 assistant's acceptance on the check text"), std::string::npos) << low.out;
  for (const char* a : {"assistant", "assistant-plain"}) {
    const Result r = cli("run -m " + target + args + " --spec mtp -md " + dir + "/" + a + " --spec-allow-low-acceptance --draft-max 3");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(ids_of(r), plain) << a;
    const nlohmann::json sj = json_of(r)["speculative"];
    EXPECT_EQ(sj["method"], "mtp");
    EXPECT_EQ(sj["proposer"], "Gemma 4 assistant");
    EXPECT_GE(sj["check_acceptance"].get<double>(), 0.0);
    EXPECT_GT(sj["draft_evaluated"].get<int64_t>(), 0);
    EXPECT_GT(sj["drafted"].get<int64_t>(), 0);
  }
  const Result wrong = cli("run -m " + target + args + " --spec dflash -md " + dir + "/assistant", true);
  EXPECT_NE(wrong.rc, 0);
  EXPECT_NE(wrong.out.find("a Gemma 4 assistant drafts with --spec mtp"), std::string::npos) << wrong.out;
  const Result other = cli("run -m " + nvfp4::test::fixture_path("arch/qwen3") + "/float" + args + " -md " + dir + "/assistant", true);
  EXPECT_NE(other.rc, 0);
  EXPECT_NE(other.out.find("a Gemma 4 assistant drafts for a Gemma 4 target"), std::string::npos) << other.out;
  // bench model --assistant: k = 1 .. 4 chained drafts and their verify step timed.
  const Result b = cli("bench model -m " + target + " --quantize -t 1 --prompt-tokens 12 --gen-tokens 4 --reps 1 --json --assistant " +
                       dir + "/assistant");
  ASSERT_EQ(b.rc, 0) << b.out;
  const nlohmann::json bj = json_of(b)["assistant"];
  ASSERT_EQ(bj["drafts"].size(), 4u) << bj.dump();
  EXPECT_EQ(bj["drafts"][3]["k"], 4);
  EXPECT_GT(bj["drafts"][0]["draft_ms"].get<double>(), 0.0);
  EXPECT_GT(bj["drafts"][0]["verify_ms"].get<double>(), 0.0);
  EXPECT_GT(bj["plain_ms"].get<double>(), 0.0);
  EXPECT_NE(bj["drafter"].get<std::string>().find("gemma4_assistant"), std::string::npos);
  // serve: every slot's draft step in one pass; alone and under concurrent load, the plain ids.
  nvfp4::test::ServeProcess srv({"serve", "-m", target, "--quantize", "--port", "0", "-t", "2", "--ctx", "96", "--parallel", "3",
                                 "-md", dir + "/assistant", "--spec-allow-low-acceptance", "--draft-max", "3", "--spec-min-speedup", "0"});
  expect_serve_gives(srv, "The quick brown fox jumps over the lazy dog. The quick brown", plain, "Gemma 4 assistant");
}
}  // namespace
