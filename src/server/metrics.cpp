#include "server/metrics.h"

#include <sstream>

namespace nvfp4::server {

std::string Metrics::render() const {
  std::ostringstream o;
  const auto metric = [&](const char* name, const char* type, const char* help, double v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << v << "\n";
  };
  const double busy_s = static_cast<double>(step_ns.load()) * 1e-9;
  metric("nvfp4_requests_total", "counter", "HTTP requests handled", static_cast<double>(requests.load()));
  metric("nvfp4_requests_failed_total", "counter", "HTTP requests answered with an error status",
         static_cast<double>(requests_failed.load()));
  metric("nvfp4_generations_total", "counter", "completions finished", static_cast<double>(generations.load()));
  metric("nvfp4_generations_cancelled_total", "counter", "generations ended because the client left",
         static_cast<double>(cancelled.load()));
  metric("nvfp4_prompt_tokens_total", "counter", "prompt tokens processed", static_cast<double>(prompt_tokens.load()));
  metric("nvfp4_prompt_tokens_cached_total", "counter", "prompt tokens reused from the prompt cache",
         static_cast<double>(prompt_tokens_cached.load()));
  metric("nvfp4_prompt_tokens_copied_total", "counter", "prompt tokens of those copied from another slot's cache",
         static_cast<double>(prompt_tokens_copied.load()));
  metric("nvfp4_generated_tokens_total", "counter", "tokens generated", static_cast<double>(generated_tokens.load()));
  metric("nvfp4_spec_drafted_tokens_total", "counter", "speculative draft tokens verified",
         static_cast<double>(spec_drafted.load()));
  metric("nvfp4_spec_accepted_tokens_total", "counter", "speculative draft tokens accepted (equal to the pick)",
         static_cast<double>(spec_accepted.load()));
  metric("nvfp4_spec_backed_off", "gauge", "1 while speculative decoding is backed off to plain decoding",
         static_cast<double>(spec_backed_off.load()));
  metric("nvfp4_spec_backoffs_total", "counter", "times speculative decoding backed off to plain decoding",
         static_cast<double>(spec_backoffs.load()));
  metric("nvfp4_spec_speedup_estimate", "gauge",
         "speculation's estimated speed-up over plain decoding in the last window of requests (0: none yet)",
         spec_speedup.load());
  metric("nvfp4_steps_total", "counter", "forward steps", static_cast<double>(steps.load()));
  metric("nvfp4_step_seconds_total", "counter", "seconds spent stepping", busy_s);
  metric("nvfp4_generated_tokens_per_second", "gauge", "tokens generated per second of stepping",
         busy_s > 0 ? static_cast<double>(generated_tokens.load()) / busy_s : 0.0);
  metric("nvfp4_constrained_masks_total", "counter", "token masks computed for constrained output",
         static_cast<double>(masks.load()));
  metric("nvfp4_constrained_mask_seconds_total", "counter", "seconds spent computing token masks",
         static_cast<double>(mask_ns.load()) * 1e-9);
  metric("nvfp4_constrained_mask_refusals_total", "counter",
         "picks the token mask allowed and the grammar refused (masked and picked again)",
         static_cast<double>(mask_refusals.load()));
  metric("nvfp4_queue_depth", "gauge", "requests waiting for a slot", static_cast<double>(queue_depth.load()));
  metric("nvfp4_slots_active", "gauge", "slots generating", static_cast<double>(active_slots.load()));
  metric("nvfp4_slots_total", "gauge", "slots (--parallel)", static_cast<double>(slots));
  if (experts) {
    const ExpertStats e = experts();
    metric("nvfp4_experts_slots", "gauge", "experts the memory budget holds (--experts-budget)", static_cast<double>(e.slots));
    metric("nvfp4_experts_hits_total", "counter", "routed experts found resident", static_cast<double>(e.hits));
    metric("nvfp4_experts_misses_total", "counter", "routed experts read from the experts file", static_cast<double>(e.misses));
    metric("nvfp4_experts_prefetched_total", "counter", "experts read ahead (the next layer's likely ones)", static_cast<double>(e.prefetched));
    metric("nvfp4_experts_disk_bytes_total", "counter", "bytes read from the experts file", static_cast<double>(e.bytes_read));
    metric("nvfp4_experts_read_seconds_total", "counter", "seconds steps waited on expert reads", e.read_s);
  }
  return o.str();
}

}  // namespace nvfp4::server
