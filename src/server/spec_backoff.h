// Server-wide back-off of speculative decoding (`serve --spec ...`). A server step mixes slots,
// drafts and prompt chunks, so one step's time says nothing about speculation by itself. Instead:
//
// - StepTimeFit fits every step's forward time (sampling included, the draft model's time not) as
//   t(n) = a + b n in the step's token count n, by exponentially weighted least squares (recent
//   steps count most: the machine's load changes). a is what a step costs whatever its size (the
//   weights read once), b what each token adds.
// - Over a window of finished requests SpecBackoff adds up, for every step with generating
//   slots, the measured time (the draft model's included) and what plain decoding would have
//   needed for the same tokens: a step with g generating slots that sampled `picks` tokens for
//   them and evaluated p prompt tokens is, without drafts, picks / g steps holding p + picks
//   tokens, t = a * picks / g + b * (p + picks). The estimated speed-up is plain / measured.
// - Below --spec-min-speedup (default 1) speculation is turned off for the next window of
//   requests, then probed again for a window; each back-off in a row doubles the time off (at most
//   16 windows). Output bits never depend on it (generate.h): switching is always safe.
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4::server {

class StepTimeFit {
 public:
  void add(double n, double seconds);
  // Enough steps, of at least two sizes, to fit a line.
  bool ready() const;
  // The fitted a and b, clamped to a >= 0 and b >= 0 (a line through the origin, or a flat one).
  double a() const;
  double b() const;
  double at(double n) const { return a() + b() * n; }

 private:
  static constexpr double kDecay = 0.995;  // per step: a half-life of about 140 steps
  double w_ = 0, sn_ = 0, snn_ = 0, st_ = 0, snt_ = 0;
  int64_t count_ = 0;
};

class SpecBackoff {
 public:
  // window: requests per window (>= 1); min_speedup: back off below this estimate (0: never).
  SpecBackoff(int window, double min_speedup) : window_(window < 1 ? 1 : window), min_speedup_(min_speedup) {}

  // Whether the slots may draft now.
  bool active() const { return active_; }
  // One step: n tokens in all, g generating slots that sampled `picks` tokens, p prompt tokens;
  // speculative: it held drafts or ran the draft model; forward_s: its forward() and sampling,
  // draft_s: the draft model's time.
  void step(int64_t n, int64_t g, int64_t picks, int64_t p, bool speculative, double forward_s, double draft_s);
  // A request ended. Returns a line for the log when speculation was turned off or on, else "".
  std::string finished();

  double speedup() const { return speedup_; }  // the last window's estimate (0: none yet)
  int64_t backoffs() const { return backoffs_; }
  const StepTimeFit& fit() const { return fit_; }

 private:
  void open_window();

  StepTimeFit fit_;
  int window_;
  double min_speedup_;
  bool active_ = true;
  int done_ = 0;        // requests ended in this window (or while off)
  int off_for_ = 0;     // requests to stay off
  int in_a_row_ = 0;    // back-offs since a window that paid
  int64_t backoffs_ = 0;
  double speedup_ = 0;
  // The open window: measured seconds, plain decoding's steps and tokens, speculative steps.
  double measured_s_ = 0, plain_steps_ = 0, plain_tokens_ = 0;
  int64_t spec_steps_ = 0;
};

}  // namespace nvfp4::server
