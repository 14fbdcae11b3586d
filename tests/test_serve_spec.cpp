// `nvfp4 serve --spec ngram` on the bundled SmolLM2 (a16q8, 4 slots, 16 tokens per step): the same
// requests (greedy and seeded, chat and completions, text that repeats so drafts are accepted,
// some streamed, with logprobs and stop strings) served at once with speculation give the
// tokens, text, logprobs and finish reasons (==) that the server without speculation gives each
// alone, and so does each alone with speculation; drafts were accepted (the metrics and the
// responses' timings say how many). In f32 speculation is refused at startup. The server-wide
// back-off (spec_backoff.h) turns speculation off and on again without changing a bit, and
// --draft-p-min drafts fewer tokens with the same output.
#include <gtest/gtest.h>

#include <future>

#include "model_path.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

using nlohmann::json;

struct SpecReq {
  const char* text;
  bool chat;
  const char* stop;  // empty: none
};

const SpecReq kSpecReqs[] = {
    {"red green blue red green blue red green", false, ""},
    {"Repeat after me, five times: one two three four five.", true, ""},
    // Greedy: " 13, 14, 15," within the 12 tokens of a sanitizer build (digits are tokens of their
    // own), so the stop string cuts this request on every build and cache type.
    {"1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,", false, " 15"},
    {"def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n", false, ""},
    {"Write the word 'hello' ten times, separated by spaces.", true, ""},
    {"The quick brown fox jumps over the lazy dog. The quick brown fox", false, "dog"},
    {"SELECT name, age FROM users WHERE age > 30; SELECT name, age FROM", false, ""},
    {"List the days of the week, twice.", true, "Friday"},
};
constexpr int kNReqs = sizeof(kSpecReqs) / sizeof(kSpecReqs[0]);

using SpecOut = Completion;

json spec_body(int i) {
  const SpecReq& q = kSpecReqs[i];
  json b;
  if (q.chat) b["messages"] = json::array({{{"role", "user"}, {"content", q.text}}});
  else b["prompt"] = q.text;
  b["max_tokens"] = kUnderSanitizer ? 12 : 32;
  b["return_tokens"] = true;
  if (*q.stop) b["stop"] = json::array({q.stop});
  if (i % 3 != 2) {
    if (q.chat) {
      b["logprobs"] = true;
      b["top_logprobs"] = 2;
    } else {
      b["logprobs"] = 2;
    }
  }
  if (i % 2 == 0) {
    b["temperature"] = 0;
  } else {
    b["temperature"] = 0.8;
    b["top_k"] = 20;
    b["seed"] = 77 + i;
  }
  return b;
}

SpecOut spec_run(int port, int i, bool stream) { return complete(port, spec_body(i), stream); }

std::vector<std::string> spec_args(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"serve", "-m", model, "--quantize", "--precision", "a16q8", "-t", "2", "--port", "0",
                                "--ctx", "256", "--batch", "16", "--parallel", "4"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_same(const SpecOut& o, const SpecOut& ref, const std::string& what) {
  ASSERT_EQ(o.status, 200) << what;
  EXPECT_EQ(o.tokens, ref.tokens) << what;
  EXPECT_EQ(o.text, ref.text) << what;
  EXPECT_EQ(o.finish, ref.finish) << what;
  EXPECT_EQ(o.logprobs, ref.logprobs) << what;
}

// Each request alone on the server without speculation (computed once for the tests here).
const std::vector<SpecOut>& plain_refs(const std::string& model) {
  static std::vector<SpecOut> ref;  // empty again when a request failed
  if (!ref.empty()) return ref;
  {
    ServeProcess plain(spec_args(model, {}));
    if (!plain.ready()) {
      ADD_FAILURE() << "the server did not come up:\n" << plain.log();
      return ref;
    }
    for (int i = 0; i < kNReqs; ++i) {
      ref.push_back(spec_run(plain.port(), i, false));
      if (ref.back().status != 200 || ref.back().tokens.empty()) {
        ADD_FAILURE() << "request " << i << ": status " << ref.back().status;
        ref.clear();
        return ref;
      }
      EXPECT_EQ(ref.back().draft_n, -1) << "no timings without speculation";
      if (i % 3 != 2) {
        EXPECT_EQ(ref.back().logprobs.size(), ref.back().tokens.size()) << i;
      }
    }
    EXPECT_EQ(metric(get(plain.port(), "/metrics").body, "nvfp4_spec_drafted_tokens_total"), 0);
    EXPECT_EQ(plain.terminate(), 0) << plain.log();
  }
  // A stop string must have cut some request (else the test checks less than it says).
  int stopped = 0;
  for (int i = 0; i < kNReqs; ++i) stopped += *kSpecReqs[i].stop && ref[i].finish == "stop";
  EXPECT_GT(stopped, 0);
  return ref;
}

// Serves the requests at once (some streamed), then each alone; all must equal `ref`. Returns the
// alone responses.
std::vector<SpecOut> spec_rounds(int port, const std::vector<SpecOut>& ref) {
  std::vector<std::future<SpecOut>> fut;
  for (int i = 0; i < kNReqs; ++i)
    fut.push_back(std::async(std::launch::async, [port, i] { return spec_run(port, i, i % 4 == 1 || i % 4 == 2); }));
  for (int i = 0; i < kNReqs; ++i) expect_same(fut[i].get(), ref[i], "concurrent, request " + std::to_string(i));
  std::vector<SpecOut> alone;
  for (int i = 0; i < kNReqs; ++i) {
    alone.push_back(spec_run(port, i, false));
    expect_same(alone.back(), ref[i], "alone, request " + std::to_string(i));
    EXPECT_GE(alone.back().draft_n, alone.back().draft_n_accepted) << i;
    EXPECT_GE(alone.back().draft_n_accepted, 0) << i;
  }
  return alone;
}

TEST(ServeSpec, NgramGivesTheTokensTextAndLogprobsOfPlainDecoding) {
  NVFP4_REQUIRE_SMOLLM2(model);
  const std::vector<SpecOut>& ref = plain_refs(model);
  ASSERT_EQ(ref.size(), static_cast<size_t>(kNReqs));

  // Never backing off: every request here speculates (the back-off has its own test below).
  ServeProcess s(spec_args(model, {"--spec", "ngram", "--draft-max", "6", "--spec-ngram-max", "3", "--spec-min-speedup", "0"}));
  ASSERT_TRUE(s.ready()) << s.log();
  ASSERT_NE(s.log().find("speculative decoding: prompt lookup"), std::string::npos) << s.log();
  const int port = s.port();
  int64_t accepted = 0, drafted = 0;
  for (const SpecOut& o : spec_rounds(port, ref)) {
    accepted += o.draft_n_accepted;
    drafted += o.draft_n;
  }
  EXPECT_GT(accepted, 0) << "no draft was accepted: the test would not see a wrong acceptance";
  const std::string m = get(port, "/metrics").body;
  EXPECT_GE(metric(m, "nvfp4_spec_accepted_tokens_total"), static_cast<double>(accepted));
  EXPECT_GE(metric(m, "nvfp4_spec_drafted_tokens_total"), metric(m, "nvfp4_spec_accepted_tokens_total"));
  EXPECT_GE(metric(m, "nvfp4_spec_drafted_tokens_total"), static_cast<double>(drafted));
  // 16 requests make two windows of 8: the speed-up was estimated (whatever it is on this machine).
  EXPECT_GT(metric(m, "nvfp4_spec_speedup_estimate"), 0);
  EXPECT_EQ(metric(m, "nvfp4_spec_backed_off"), 0);
  EXPECT_EQ(metric(m, "nvfp4_spec_backoffs_total"), 0);
  std::cerr << "[ serve spec ] alone: " << accepted << " of " << drafted << " drafts accepted; all: "
            << metric(m, "nvfp4_spec_accepted_tokens_total") << " of " << metric(m, "nvfp4_spec_drafted_tokens_total")
            << "; estimated speed-up " << metric(m, "nvfp4_spec_speedup_estimate") << " (not a benchmark)\n";
  EXPECT_EQ(s.terminate(), 0) << s.log();
}

// The target as its own draft: the same picks, so a greedy request that runs to max_tokens has
// every draft accepted. (Such a draft costs what the target does, so speculation cannot pay and
// the back-off is turned off here.) Then --draft-p-min 0.9 drafts fewer tokens, same output.
TEST(ServeSpec, DraftModelGivesTheTokensOfPlainDecoding) {
  NVFP4_REQUIRE_SMOLLM2(model);
  const std::vector<SpecOut>& ref = plain_refs(model);
  ASSERT_EQ(ref.size(), static_cast<size_t>(kNReqs));
  int64_t drafted = 0;
  {
    ServeProcess s(spec_args(model, {"-md", model, "--draft-max", "4", "--spec-min-speedup", "0"}));
    ASSERT_TRUE(s.ready()) << s.log();
    ASSERT_NE(s.log().find("speculative decoding: draft model"), std::string::npos) << s.log();
    const std::vector<SpecOut> alone = spec_rounds(s.port(), ref);
    int full = 0;
    for (int i = 0; i < kNReqs; ++i) {
      drafted += alone[i].draft_n;
      if (i % 2 != 0 || *kSpecReqs[i].stop || alone[i].finish != "length") continue;
      EXPECT_GT(alone[i].draft_n, 0) << i;
      EXPECT_EQ(alone[i].draft_n_accepted, alone[i].draft_n) << i;
      ++full;
    }
    EXPECT_GT(full, 0);
    const std::string m = get(s.port(), "/metrics").body;
    EXPECT_GT(metric(m, "nvfp4_spec_accepted_tokens_total"), 0);
    EXPECT_EQ(metric(m, "nvfp4_spec_backoffs_total"), 0);
    EXPECT_EQ(s.terminate(), 0) << s.log();
  }
  ServeProcess p(spec_args(model, {"-md", model, "--draft-max", "4", "--spec-min-speedup", "0", "--draft-p-min", "0.9"}));
  ASSERT_TRUE(p.ready()) << p.log();
  ASSERT_NE(p.log().find("draft-p-min 0.9"), std::string::npos) << p.log();
  int64_t drafted_p = 0;
  for (int i = 0; i < kNReqs; ++i) {
    const SpecOut o = spec_run(p.port(), i, false);
    expect_same(o, ref[i], "--draft-p-min 0.9, request " + std::to_string(i));
    EXPECT_LE(o.draft_n_accepted, o.draft_n) << i;
    drafted_p += o.draft_n;
  }
  EXPECT_LT(drafted_p, drafted) << "--draft-p-min 0.9 stopped no draft";
  std::cerr << "[ serve spec ] draft = target: " << drafted << " tokens drafted; with --draft-p-min 0.9: " << drafted_p << "\n";
  EXPECT_EQ(p.terminate(), 0) << p.log();
}

// A threshold no speculation can reach: after a window of 2 requests the server backs off (the
// log and /metrics say so), the next window's requests draft nothing, then a probe window
// speculates again; every output stays the plain decoding's.
TEST(ServeSpec, BacksOffBelowTheThresholdAndProbesAgain) {
  NVFP4_REQUIRE_SMOLLM2(model);
  const std::vector<SpecOut>& ref = plain_refs(model);
  ASSERT_EQ(ref.size(), static_cast<size_t>(kNReqs));
  ServeProcess s(spec_args(model, {"--spec", "ngram", "--draft-max", "6", "--spec-window", "2", "--spec-min-speedup", "1e6"}));
  ASSERT_TRUE(s.ready()) << s.log();
  ASSERT_NE(s.log().find("backs off below an estimated 1e+06x speed-up over windows of 2 requests"), std::string::npos)
      << s.log();
  std::vector<double> off;  // the gauge after each request
  int64_t drafted_on = 0;
  int probes = 0;
  for (int i = 0; i < kNReqs; ++i) {
    const SpecOut o = spec_run(s.port(), i, false);
    expect_same(o, ref[i], "request " + std::to_string(i));
    if (!off.empty() && off.back() == 1) {
      EXPECT_EQ(o.draft_n, 0) << "request " << i << " ran backed off, yet drafted";
    } else {
      drafted_on += o.draft_n;
    }
    off.push_back(metric(get(s.port(), "/metrics").body, "nvfp4_spec_backed_off"));
    ASSERT_TRUE(off.back() == 0 || off.back() == 1) << off.back();
    if (i > 0 && off[i - 1] == 1 && off[i] == 0) ++probes;
  }
  EXPECT_GT(drafted_on, 0);
  EXPECT_GT(probes, 0) << "never on again after backing off";
  const std::string m = get(s.port(), "/metrics").body;
  EXPECT_GE(metric(m, "nvfp4_spec_backoffs_total"), 1);
  EXPECT_GT(metric(m, "nvfp4_spec_speedup_estimate"), 0);
  EXPECT_LT(metric(m, "nvfp4_spec_speedup_estimate"), 1e6);
  std::cerr << "[ serve spec ] backed off after each request:";
  for (double v : off) std::cerr << " " << v;
  std::cerr << "; " << metric(m, "nvfp4_spec_backoffs_total") << " back-offs\n";
  const std::string log = s.log();
  EXPECT_NE(log.find("nvfp4: speculative decoding backed off: estimated speed-up "), std::string::npos) << log;
  EXPECT_NE(log.find("nvfp4: speculative decoding on again after 2 requests"), std::string::npos) << log;
  EXPECT_EQ(s.terminate(), 0) << s.log();
}

TEST(ServeSpec, RefusedInF32UnlessDriftIsAllowed) {
  NVFP4_REQUIRE_SMOLLM2(model);
  ServeProcess s({"serve", "-m", model, "--precision", "f32", "-t", "1", "--port", "0", "--ctx", "64", "--spec", "ngram"});
  EXPECT_EQ(s.terminate_wait(std::chrono::seconds(120)), 1) << s.log();
  const std::string log = s.log();
  EXPECT_NE(log.find("--spec-allow-drift"), std::string::npos) << log;
  EXPECT_NE(log.find("--spec: speculative decoding in precision f32"), std::string::npos) << log;
  ServeProcess ok({"serve", "-m", model, "--precision", "f32", "-t", "1", "--port", "0", "--ctx", "64", "--spec",
                   "ngram", "--spec-allow-drift"});
  ASSERT_TRUE(ok.ready()) << ok.log();
  const Reply r = post(ok.port(), "/v1/completions", R"({"prompt": "a b a b a b", "max_tokens": 4})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ok.terminate(), 0) << ok.log();
}

}  // namespace
}  // namespace nvfp4::test
