// One generation request as the scheduler serves it: what to generate (set before submit) and
// its progress (written by the stepping thread, read by the HTTP thread that waits for it).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nvfp4/sampler.h"
#include "server/api_error.h"
#include "server/grammar_compile.h"
#include "server/logprobs.h"

namespace nvfp4::server {

struct Job {
  // Input, fixed before submit.
  std::vector<int32_t> prompt;
  int64_t max_tokens = 1;
  SamplerOptions sampling;
  std::vector<std::string> stop;
  bool cache_prompt = true;  // may reuse a slot's KV of a common prefix (when the server allows it)
  int top_logprobs = -1;     // -1: no logprobs; else the logprob of each token and this many best
  // The output's grammar (grammar_compile.h): tokens it refuses are masked before sampling, and
  // the job ends ("stop") when the text is whole and nothing may follow. Null: unconstrained.
  std::shared_ptr<const CompiledOutput> grammar;
  // An embedding (embeddings.h): the prompt is run and its final-normed hidden states pooled into
  // `embedding` (the mean, or the last token's, or every token's row in order for Tokens; set under
  // mu before done); nothing is generated. None: not an embedding job.
  enum class Embed { None, Mean, Last, Tokens } embed = Embed::None;
  std::vector<float> embedding;

  // The client is gone or the server stops: the scheduler frees the slot at its next step.
  std::atomic<bool> cancelled{false};

  // Progress, under mu; cv is notified at every change.
  std::mutex mu;
  std::condition_variable cv;
  std::string text;              // sendable text not yet taken by the HTTP thread
  std::vector<int32_t> tokens;   // generated ids not yet taken
  std::vector<TokenLogprob> logprobs;  // one per token in `tokens` when asked for
  int64_t n_generated = 0;       // tokens counted in usage
  int64_t n_cached = 0;          // prompt tokens whose KV came from the prompt cache
  int64_t n_drafted = 0, n_accepted = 0;  // speculative drafts fed, and those equal to the pick
  bool started = false;          // given a slot
  bool done = false;
  std::string finish_reason;     // "stop" or "length" when done without error
  std::string stop_sequence;     // the stop string that ended it ("" : none did)
  std::optional<ApiError> error;
};

// What the HTTP thread takes from a job at once.
struct JobUpdate {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  bool done = false;
  std::string finish_reason;
  std::string stop_sequence;
  std::optional<ApiError> error;
  int64_t n_generated = 0;
  int64_t n_cached = 0;
  int64_t n_drafted = 0, n_accepted = 0;
};

// Waits up to `wait` for new text or the end; takes what there is.
JobUpdate take(Job& job, std::chrono::milliseconds wait);

}  // namespace nvfp4::server
