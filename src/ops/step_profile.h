// Timing a part of a step into the Workspace's StepProfile (bench model --profile), when one is set.
#pragma once
#include <chrono>

#include "nvfp4/model.h"

namespace nvfp4 {

class PartTimer {
 public:
  PartTimer(StepProfile* p, int part, double bytes = 0) : p_(p), part_(part) {
    if (!p_) return;
    p_->bytes[part_] += bytes;
    t0_ = std::chrono::steady_clock::now();
  }
  ~PartTimer() {
    if (p_) p_->seconds[part_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  PartTimer(const PartTimer&) = delete;
  PartTimer& operator=(const PartTimer&) = delete;

 private:
  StepProfile* p_;
  int part_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace nvfp4
