// Gemma 4 through the real binaries (fixtures/gemma4, tools/gen_gemma4_fixtures.py): inspect of the
// release layout (the vision tower set aside), run with --json on 1 and 2 threads and other
// batches (the same ids), speculative decoding by prompt lookup (the same ids as plain decoding,
// past the sliding layers' ring), and serve (the tokens of run).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "serve_util.h"
#include "test_util.h"

namespace {

using nvfp4::test::cli;
using nvfp4::test::json_of;
using nvfp4::test::Result;

using nvfp4::test::ids_of;
std::string fx(const char* form) { return nvfp4::test::fixture_path(std::string("gemma4/") + form); }

// A prompt that repeats itself (prompt lookup finds drafts) and, with 80 generated tokens, runs
// past the ring of the sliding layers (71 positions).
const std::string kArgs =
    " -p 'The lighthouse keeper climbed the spiral stairs every evening and the lighthouse keeper climbed the stairs again'"
    " -n 80 --ctx 256";

}  // namespace

TEST(CliGemma4, InspectSetsTheVisionTowerAside) {
  const Result vlm = cli("inspect " + fx("float-vlm") + " --json");
  ASSERT_EQ(vlm.rc, 0) << vlm.out;
  EXPECT_EQ(json_of(vlm)["set_aside"].size(), 2u) << vlm.out;
  const Result q = cli("inspect " + fx("modelopt-nvfp4") + " --json");
  ASSERT_EQ(q.rc, 0) << q.out;
  EXPECT_EQ(json_of(q)["set_aside"].size(), 0u) << q.out;
  const Result plain = cli("run -m " + fx("float-vlm") + " -p 'hello world' -n 4 --ctx 64 -t 2", true);
  ASSERT_EQ(plain.rc, 0) << plain.out;
  EXPECT_NE(plain.out.find("vision tower"), std::string::npos) << plain.out;
}

TEST(CliGemma4, RunIsTheSameOnEveryThreadCountBatchAndWithSpeculation) {
  for (const char* prec : {"a16q8", "w4a4"}) {
    SCOPED_TRACE(prec);
    const std::string m = fx("modelopt-nvfp4");
    const Result r = cli("run -m " + m + kArgs + " --precision " + prec + " -t 1 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto ids = ids_of(r);
    ASSERT_EQ(ids.size(), 80u);
    EXPECT_GT(json_of(r)["prompt_ids"].size() + ids.size(), 71u);
    EXPECT_EQ(ids_of(cli("run -m " + m + kArgs + " --precision " + prec + " -t 2 --batch 3 --json")), ids);
    EXPECT_EQ(ids_of(cli("run -m " + m + kArgs + " --precision " + prec + " -t 2 --batch 200 --json")), ids);
    const Result s = cli("run -m " + m + kArgs + " --precision " + prec + " -t 2 --spec ngram --json");
    ASSERT_EQ(s.rc, 0) << s.out;
    EXPECT_EQ(ids_of(s), ids);
    EXPECT_GT(json_of(s)["speculative"]["accepted"].get<int>(), 0) << s.out;
  }
}

TEST(CliGemma4, ServeGivesTheTokensOfRun) {
  const std::string m = fx("ct-nvfp4");
  const auto ids = ids_of(cli("run -m " + m + " -p 'hello world, hello' -n 8 --ctx 64 -t 2 --json"));
  ASSERT_EQ(ids.size(), 8u);
  nvfp4::test::ServeProcess srv({"serve", "-m", m, "--port", "0", "-t", "2", "--ctx", "64", "--parallel", "2"});
  ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
  const auto c = nvfp4::test::complete(srv.port(), {{"prompt", "hello world, hello"}, {"max_tokens", 8}, {"temperature", 0}, {"return_tokens", true}}, false);
  ASSERT_EQ(c.status, 200) << srv.log();
  EXPECT_EQ(c.tokens, ids);
  EXPECT_EQ(srv.terminate(), 0) << srv.log();
}

// The prompt cache over the sliding layers' ring: a request that extends the last one reuses it
// (the ring still holds the window before its end), one that shares only a far prefix reuses
// nothing (the ring no longer holds it); either way the tokens are those without the cache.
TEST(CliGemma4, PromptCacheReusesWhatTheRingHoldsAndChangesNoToken) {
  nvfp4::test::ServeProcess srv({"serve", "-m", fx("modelopt-nvfp4"), "--port", "0", "-t", "2", "--ctx", "256", "--batch", "32",
                                 "--parallel", "1"});
  ASSERT_TRUE(srv.ready(std::chrono::seconds(120))) << srv.log();
  const std::string base =
      "The lighthouse keeper climbed the spiral stairs every evening, carrying a lamp, a book and a small loaf of bread. "
      "At the top he trimmed the wick, wound the clockwork and watched the ships pass the rocks until dawn.";
  struct Out {
    std::vector<int32_t> tokens;
    int64_t cached = -1, prompt = -1;
  };
  const auto ask = [&](const std::string& text, bool cache) {
    const nlohmann::json body = {{"prompt", text}, {"max_tokens", 8}, {"temperature", 0}, {"return_tokens", true}, {"cache_prompt", cache}};
    const nvfp4::test::Reply r = nvfp4::test::post(srv.port(), "/v1/completions", body.dump());
    Out o;
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return o;
    o.tokens = r.json["choices"][0]["tokens"].get<std::vector<int32_t>>();
    o.prompt = r.json["usage"]["prompt_tokens"].get<int64_t>();
    if (r.json["usage"].contains("prompt_tokens_details")) o.cached = r.json["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
    return o;
  };
  const std::string longer = base + " In the morning he wrote the night's log.";
  const std::string other = base.substr(0, 40) + " fell asleep at once and dreamt of the sea.";
  const Out ref_longer = ask(longer, false), ref_other = ask(other, false);
  const Out first = ask(base, true);
  EXPECT_GT(first.prompt, 71);  // longer than the ring of the sliding layers
  const Out a = ask(longer, true);
  EXPECT_EQ(a.tokens, ref_longer.tokens);
  EXPECT_GT(a.cached, first.prompt - 64) << "the extension reuses what the ring holds";
  const Out b = ask(other, true);
  EXPECT_EQ(b.tokens, ref_other.tokens);
  EXPECT_EQ(b.cached, 0) << "a far prefix is no longer in the ring";
  EXPECT_EQ(srv.terminate(), 0) << srv.log();
}
