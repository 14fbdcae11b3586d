// The server's back-off of speculative decoding (src/server/spec_backoff.h) on step times made from
// a known cost line t(n) = a + b n: the fit recovers the line, a window whose drafts are accepted
// is estimated faster than plain decoding by the factor the line gives and does not back off; one
// whose drafts are all rejected (and cost the draft model's time) backs off, stays off for the
// next window, probes again, and stays off twice as long after a second back-off in a row.
#include <gtest/gtest.h>

#include <cstdio>

#include "server/spec_backoff.h"

namespace nvfp4::server {
namespace {

constexpr double kA = 0.020, kB = 0.002;  // seconds per step, per token
double cost(double n) { return kA + kB * n; }

TEST(SpecBackoff, FitRecoversALineAndClamps) {
  StepTimeFit f;
  EXPECT_FALSE(f.ready());
  for (int i = 0; i < 6; ++i) f.add(5, cost(5));
  EXPECT_FALSE(f.ready()) << "one step size tells no slope";
  EXPECT_EQ(f.b(), 0);
  EXPECT_NEAR(f.a(), cost(5), 1e-12);
  for (int n : {1, 9, 16, 3, 64, 2}) f.add(n, cost(n));
  ASSERT_TRUE(f.ready());
  EXPECT_NEAR(f.a(), kA, 1e-9);
  EXPECT_NEAR(f.b(), kB, 1e-9);
  EXPECT_NEAR(f.at(7), cost(7), 1e-9);

  StepTimeFit down;  // time falling with size: a flat line at the (recent-weighted) mean
  for (int n : {1, 2, 3, 4, 5, 6}) down.add(n, 1.0 - 0.1 * n);
  EXPECT_EQ(down.b(), 0);
  EXPECT_GT(down.a(), 1.0 - 0.1 * 6);
  EXPECT_LT(down.a(), 1.0 - 0.1 * 3.5);  // the later (faster) steps weigh more
  StepTimeFit steep;  // a negative intercept: a line through the origin
  for (int n : {10, 11, 12, 13}) steep.add(n, 1.0 * n - 9.0);
  EXPECT_EQ(steep.a(), 0);
  EXPECT_GT(steep.b(), 0);
}

// One request on one slot: a 16-token prompt step, then `steps` decode steps, each with a draft of
// `k` tokens of which `acc` are accepted; the draft model (if any) costs draft_s per step.
void request(SpecBackoff& b, int steps, int k, int acc, double draft_s) {
  b.step(16, 0, 0, 16, false, cost(16), 0);
  for (int i = 0; i < steps; ++i) {
    const bool spec = b.active() && k > 0;
    const int d = spec ? k : 0, picks = spec ? acc + 1 : 1;
    b.step(1 + d, 1, picks, 0, spec, cost(1 + d), spec ? draft_s : 0);
  }
}

TEST(SpecBackoff, AcceptedDraftsDoNotBackOff) {
  SpecBackoff b(4, 1.0);
  for (int r = 0; r < 12; ++r) {
    request(b, 10, 4, 4, 0.0);
    EXPECT_EQ(b.finished(), "") << r;
    EXPECT_TRUE(b.active()) << r;
  }
  EXPECT_EQ(b.backoffs(), 0);
  // Each step makes 5 tokens in t(5); plain decoding needs 5 steps of t(1).
  EXPECT_NEAR(b.speedup(), 5 * cost(1) / cost(5), 1e-6);
  EXPECT_GT(b.speedup(), 1.0);
}

TEST(SpecBackoff, RejectedDraftsBackOffThenProbe) {
  const int w = 3;
  SpecBackoff b(w, 1.0);
  for (int r = 0; r < w - 1; ++r) {
    request(b, 10, 4, 0, 0.004);
    EXPECT_EQ(b.finished(), "");
  }
  EXPECT_EQ(b.speedup(), 0) << "no estimate before a window ends";
  request(b, 10, 4, 0, 0.004);
  std::string line = b.finished();
  EXPECT_FALSE(b.active());
  EXPECT_EQ(b.backoffs(), 1);
  // One token per step in t(5) + the draft's time, where plain decoding needs t(1).
  const double want = cost(1) / (cost(5) + 0.004);
  EXPECT_NEAR(b.speedup(), want, 1e-6);
  EXPECT_NE(line.find("backed off: estimated speed-up"), std::string::npos) << line;
  char fig[16];
  std::snprintf(fig, sizeof fig, "%.3fx", want);
  EXPECT_NE(line.find(fig), std::string::npos) << line << " (" << fig << ")";
  EXPECT_NE(line.find("next 3 requests"), std::string::npos) << line;
  // Off for a window: the steps are plain, the window measures nothing.
  for (int r = 0; r < w - 1; ++r) {
    request(b, 10, 4, 0, 0.004);
    EXPECT_EQ(b.finished(), "");
    EXPECT_FALSE(b.active());
  }
  request(b, 10, 4, 0, 0.004);
  line = b.finished();
  EXPECT_TRUE(b.active());
  EXPECT_NE(line.find("on again after 3 requests"), std::string::npos) << line;
  // The probe fails too: off for twice as long.
  for (int r = 0; r < w; ++r) {
    request(b, 10, 4, 0, 0.004);
    line = b.finished();
  }
  EXPECT_FALSE(b.active());
  EXPECT_EQ(b.backoffs(), 2);
  EXPECT_NE(line.find("next 6 requests"), std::string::npos) << line;
  for (int r = 0; r < 2 * w - 1; ++r) {
    request(b, 10, 4, 0, 0.004);
    EXPECT_EQ(b.finished(), "");
  }
  EXPECT_FALSE(b.active());
  request(b, 10, 4, 0, 0.004);
  EXPECT_NE(b.finished(), "");
  EXPECT_TRUE(b.active());
}

TEST(SpecBackoff, SharedStepsAndThresholds) {
  // Two slots that sampled 6 tokens (3 each) with 4 prompt tokens in the step: plain decoding
  // needs 3 steps holding 10 tokens.
  for (const double min : {0.0, 1.0, 1e9}) {
    SpecBackoff b(1, min);
    for (int n : {1, 2, 8, 16, 32}) b.step(n, 0, 0, n, false, cost(n), 0);
    b.step(2 + 4 + 4, 2, 6, 4, true, cost(10), 0.001);
    const std::string line = b.finished();
    EXPECT_NEAR(b.speedup(), (3 * kA + 10 * kB) / (cost(10) + 0.001), 1e-6);
    EXPECT_EQ(b.active(), min < 1e9) << min;
    EXPECT_EQ(line.empty(), min < 1e9) << line;
  }
  // No speculative step in the window: nothing is judged.
  SpecBackoff idle(1, 1e9);
  for (int n : {1, 2, 8, 16, 32}) idle.step(n, 1, 1, n - 1, false, cost(n), 0);
  EXPECT_EQ(idle.finished(), "");
  EXPECT_TRUE(idle.active());
  EXPECT_EQ(idle.speedup(), 0);
}

}  // namespace
}  // namespace nvfp4::server
