// Counters for GET /metrics (Prometheus text exposition format 0.0.4).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "nvfp4/model.h"

namespace nvfp4::server {

struct Metrics {
  std::atomic<int64_t> requests{0};          // HTTP requests handled
  std::atomic<int64_t> requests_failed{0};   // answered with status >= 400
  std::atomic<int64_t> generations{0};       // completions finished
  std::atomic<int64_t> cancelled{0};         // generations ended because the client left
  std::atomic<int64_t> prompt_tokens{0};          // evaluated
  std::atomic<int64_t> prompt_tokens_cached{0};   // taken from the prompt cache instead
  std::atomic<int64_t> prompt_tokens_copied{0};   // of those, copied from another slot's cache
  std::atomic<int64_t> generated_tokens{0};
  std::atomic<int64_t> spec_drafted{0};      // speculative draft tokens verified
  std::atomic<int64_t> spec_accepted{0};     // of those, the ones equal to the pick
  std::atomic<int64_t> spec_backed_off{0};  // 1 while speculation is backed off (spec_backoff.h)
  std::atomic<int64_t> spec_backoffs{0};     // times it backed off
  std::atomic<double> spec_speedup{0};       // the last window's estimated speed-up (0: none yet)
  std::atomic<int64_t> steps{0};
  std::atomic<int64_t> step_ns{0};           // time in forward() and sampling
  std::atomic<int64_t> masks{0};             // constrained output: token masks computed
  std::atomic<int64_t> mask_ns{0};           // and the time spent on them
  std::atomic<int64_t> mask_refusals{0};     // picks the mask allowed and the grammar refused (picked again)
  std::atomic<int64_t> queue_depth{0};       // waiting for a slot
  std::atomic<int64_t> active_slots{0};
  int64_t slots = 0;
  // The model's expert store (--experts-budget), read at each render; empty: none.
  std::function<ExpertStats()> experts;

  std::string render() const;
};

}  // namespace nvfp4::server
