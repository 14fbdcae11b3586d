#include "server/spec_backoff.h"

#include <algorithm>
#include <cstdio>

namespace nvfp4::server {

void StepTimeFit::add(double n, double seconds) {
  w_ = kDecay * w_ + 1;
  sn_ = kDecay * sn_ + n;
  snn_ = kDecay * snn_ + n * n;
  st_ = kDecay * st_ + seconds;
  snt_ = kDecay * snt_ + n * seconds;
  ++count_;
}

namespace {
// Weighted variance of n below this (in tokens squared): the sizes do not tell a slope.
constexpr double kMinVar = 0.25;
}  // namespace

bool StepTimeFit::ready() const { return count_ >= 4 && w_ > 0 && snn_ / w_ - (sn_ / w_) * (sn_ / w_) >= kMinVar; }

double StepTimeFit::b() const {
  if (w_ <= 0) return 0;
  const double var = snn_ / w_ - (sn_ / w_) * (sn_ / w_);
  if (var < kMinVar) return 0;
  const double b = (snt_ / w_ - (sn_ / w_) * (st_ / w_)) / var;
  if (b < 0) return 0;                                         // flat: a is the mean
  if (st_ / w_ - b * (sn_ / w_) < 0) return snn_ > 0 ? snt_ / snn_ : 0;  // through the origin
  return b;
}

double StepTimeFit::a() const {
  if (w_ <= 0) return 0;
  return std::max(0.0, st_ / w_ - b() * (sn_ / w_));
}

void SpecBackoff::open_window() {
  done_ = 0;
  measured_s_ = plain_steps_ = plain_tokens_ = 0;
  spec_steps_ = 0;
}

void SpecBackoff::step(int64_t n, int64_t g, int64_t picks, int64_t p, bool speculative, double forward_s,
                       double draft_s) {
  if (n > 0) fit_.add(static_cast<double>(n), forward_s);
  if (!active_ || g <= 0) return;
  measured_s_ += forward_s + draft_s;
  plain_steps_ += static_cast<double>(picks) / static_cast<double>(g);
  plain_tokens_ += static_cast<double>(p + picks);
  spec_steps_ += speculative;
}

std::string SpecBackoff::finished() {
  ++done_;
  char line[320];
  if (!active_) {
    if (done_ < off_for_) return "";
    active_ = true;
    open_window();
    std::snprintf(line, sizeof line, "speculative decoding on again after %d requests of plain decoding (a probe window of %d)",
                  off_for_, window_);
    return line;
  }
  if (done_ < window_) return "";
  if (spec_steps_ == 0 || measured_s_ <= 0) {  // nothing speculated: nothing to judge
    open_window();
    return "";
  }
  if (!fit_.ready()) return "";  // the window goes on until the step times can be fitted
  const double plain_s = fit_.a() * plain_steps_ + fit_.b() * plain_tokens_;
  speedup_ = plain_s / measured_s_;
  const int n = done_;
  const double measured = measured_s_;
  open_window();
  if (min_speedup_ <= 0 || speedup_ >= min_speedup_) {
    in_a_row_ = 0;
    return "";
  }
  active_ = false;
  ++backoffs_;
  off_for_ = window_ * (1 << std::min(in_a_row_, 4));
  ++in_a_row_;
  std::snprintf(line, sizeof line,
                "speculative decoding backed off: estimated speed-up %.3fx over the last %d requests (%.3f s measured, "
                "%.3f s estimated for plain decoding), below %.3gx; plain decoding for the next %d requests",
                speedup_, n, measured, plain_s, min_speedup_, off_for_);
  return line;
}

}  // namespace nvfp4::server
