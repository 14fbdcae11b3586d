// `nvfp4 serve` batch invariance in w4a4 (SmolLM2 quantized at load, activation scales calibrated
// on data/calibration.txt, as `run --precision w4a4 --quantize --calibrate` does): concurrent
// requests of different lengths, greedy and seeded, chat and completions, half streamed, give the
// tokens, text and logprobs (==) each gives alone with the prompt cache off, in two arrival orders,
// and again from a server that speculates (prompt lookup).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "model_path.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

using nlohmann::json;

const char* kW4Prompts[] = {"The capital of France is", "Once upon a time, in a small village,", "def fibonacci(n):",
                            "The three primary colors are", "Water boils at", "1, 2, 3, 4,"};

using W4Out = Completion;

json w4_body(int i, bool cache) {
  json b;
  const bool chat = i % 3 == 0;
  if (chat) b["messages"] = json::array({{{"role", "user"}, {"content", kW4Prompts[i % 6]}}});
  else b["prompt"] = kW4Prompts[i % 6];
  b["max_tokens"] = (kUnderSanitizer ? 3 : 5) + (i * 5) % 11;
  b["return_tokens"] = true;
  b["cache_prompt"] = cache;
  if (chat) b["logprobs"] = true;
  else b["logprobs"] = 0;
  if (i % 2 == 0) {
    b["temperature"] = 0;
  } else {
    b["temperature"] = 0.9;
    b["top_k"] = 40;
    b["seed"] = 500 + i;
  }
  return b;
}

W4Out w4_run(int port, int i, bool cache, bool stream) { return complete(port, w4_body(i, cache), stream); }

// Failed once in about eight runs (2026-12-01, under `ctest -j2`): a thread-pool race (a stale
// ticket claiming against the next job's chunk count), fixed in 84ece15; since then 20 of 20
// repeats passed (--gtest_repeat=10, twice, beside a sanitizer build).
TEST(ServeW4a4, ConcurrentRequestsGiveTheTokensAndLogprobsOfEachAlone) {
  NVFP4_REQUIRE_SMOLLM2(model);
  // Both servers calibrate at start. Under the sanitizers, on the text's first 400 bytes (about 90
  // tokens, not 256): the whole text took 65 s a server there. Any scales do: each server is
  // compared with itself (concurrent against alone) or with the first (the same text).
  std::string calib = (std::filesystem::path(NVFP4_FIXTURES).parent_path() / "data" / "calibration.txt").string();
  if (kUnderSanitizer) {
    std::ifstream in(calib, std::ios::binary);
    std::string text(400, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    ASSERT_GT(text.size(), 200u) << calib;
    calib = (std::filesystem::temp_directory_path() / ("nvfp4_w4a4_calib_" + std::to_string(::getpid()) + ".txt")).string();
    std::ofstream(calib, std::ios::binary) << text;
  }
  struct RemoveAtEnd {
    std::string path;
    ~RemoveAtEnd() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } remove_at_end{kUnderSanitizer ? calib : std::string()};
  ServeProcess s({"serve", "-m", model, "--quantize", "--precision", "w4a4", "--calibrate", calib, "-t", "2",
                  "--port", "0", "--ctx", "256", "--batch", "16", "--parallel", "4"});
  ASSERT_TRUE(s.ready()) << s.log();
  ASSERT_NE(s.log().find("precision w4a4"), std::string::npos) << s.log();
  const int port = s.port();
  const int n = kUnderSanitizer ? 5 : 12;
  std::vector<W4Out> alone;
  for (int i = 0; i < n; ++i) {
    alone.push_back(w4_run(port, i, false, false));
    ASSERT_EQ(alone.back().status, 200) << i;
    ASSERT_FALSE(alone.back().tokens.empty());
    ASSERT_EQ(alone.back().logprobs.size(), alone.back().tokens.size());
  }
  for (int round = 0; round < (kUnderSanitizer ? 1 : 2); ++round) {
    std::vector<std::future<W4Out>> fut;
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      fut.push_back(std::async(std::launch::async, [&, i] { return w4_run(port, i, true, i % 2 == 1); }));
    }
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      const W4Out o = fut[k].get();
      ASSERT_EQ(o.status, 200) << "request " << i;
      EXPECT_EQ(o.tokens, alone[i].tokens) << "request " << i << " round " << round;
      EXPECT_EQ(o.text, alone[i].text) << "request " << i << " round " << round;
      EXPECT_EQ(o.logprobs, alone[i].logprobs) << "request " << i << " round " << round;
    }
  }
  EXPECT_EQ(s.terminate(), 0) << s.log();

  // The same requests, concurrent, from a w4a4 server that speculates (prompt lookup, never
  // backing off): the same bits as plain decoding alone.
  ServeProcess sp({"serve", "-m", model, "--quantize", "--precision", "w4a4", "--calibrate", calib, "-t", "2",
                   "--port", "0", "--ctx", "256", "--batch", "16", "--parallel", "4", "--spec", "ngram",
                   "--draft-max", "6", "--spec-ngram-min", "1", "--spec-min-speedup", "0"});
  ASSERT_TRUE(sp.ready()) << sp.log();
  std::vector<std::future<W4Out>> fut;
  for (int i = 0; i < n; ++i) fut.push_back(std::async(std::launch::async, [&, i] { return w4_run(sp.port(), i, true, i % 2 == 1); }));
  for (int i = 0; i < n; ++i) {
    const W4Out o = fut[i].get();
    ASSERT_EQ(o.status, 200) << "speculating, request " << i;
    EXPECT_EQ(o.tokens, alone[i].tokens) << "speculating, request " << i;
    EXPECT_EQ(o.text, alone[i].text) << "speculating, request " << i;
    EXPECT_EQ(o.logprobs, alone[i].logprobs) << "speculating, request " << i;
  }
  const std::string m = get(sp.port(), "/metrics").body;
  if (!kUnderSanitizer) {  // (the sanitizer build's 5 short requests may draft nothing that matches)
    EXPECT_GT(metric(m, "nvfp4_spec_accepted_tokens_total"), 0) << "no draft accepted: the comparison would not see a wrong acceptance";
  }
  std::cerr << "[ serve w4a4 spec ] " << metric(m, "nvfp4_spec_accepted_tokens_total") << " of "
            << metric(m, "nvfp4_spec_drafted_tokens_total") << " drafts accepted\n";
  EXPECT_EQ(sp.terminate(), 0) << sp.log();
}

}  // namespace
}  // namespace nvfp4::test
