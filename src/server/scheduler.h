// Continuous batching: one stepping thread owns the thread pool and the workspace; --parallel
// slots hold a Sequence each. Every step takes the next token of every generating slot plus a
// chunk of the prompts waiting (at most n_batch prompt tokens), runs forward() once, and samples
// each slot with its request's own seeded Sampler. In the integer-exact modes a token's logits do
// not depend on the rest of the step, so a request's tokens are the same whatever else runs.
// With speculation on, SpecBackoff (spec_backoff.h) judges each window of finished requests and
// turns the slots' drafting off when it did not pay, and on again for a probe window later.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/tokenizer.h"
#include "server/job.h"
#include "server/metrics.h"
#include "server/spec_backoff.h"
#include "nvfp4/mtp_draft.h"
#include "server/spec_draft.h"
#include "server/spec_slot.h"
#include "server/grammar_compile.h"

namespace nvfp4::server {

struct SchedulerOptions {
  int parallel = 4;
  int64_t n_ctx = 2048;   // positions per slot
  int64_t n_batch = 64;   // prompt tokens per step
  int queue = 64;         // requests waiting for a slot before 429
  int threads = 1;
  KvType kv = KvType::f32;
  // Prompt cache: a slot keeps the KV of its last request; a new request takes the free slot
  // whose cached tokens share the longest prefix with its prompt (ties: the least recently used)
  // and evaluates only the rest. In a16q8 and w4a4 a position's keys and values depend on the
  // tokens up to it alone, so the results are the same bits as computing it all again.
  bool cache_prompt = true;
  // Speculative decoding (spec_slot.h): drafts share the step's n_batch tokens with the prompts.
  SpecOptions spec;
};

class Scheduler {
 public:
  Scheduler(const Model& model, const Tokenizer& tok, const SchedulerOptions& opt, Metrics& metrics);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job. Throws ApiError 429 when the queue is full, 503 when draining.
  void submit(std::shared_ptr<Job> job);
  // Stops taking jobs and ends the waiting ones (503); running ones go on until `grace` has
  // passed, then end with 503 too.
  void drain(std::chrono::milliseconds grace);
  // Ends every job and joins the stepping thread.
  void stop();
  const SchedulerOptions& options() const { return opt_; }

 private:
  struct Slot;
  void loop();
  bool admit();  // under mu_; whether any slot is busy
  void step(std::vector<float>& logits, Workspace& ws, ThreadPool& pool);
  // Samples rows [row, row + 1 + drafts) of the slot's step; emits, accepts, truncates. Returns
  // the tokens it sampled (the rows plain decoding would have needed a step each for).
  int64_t verify(Slot& s, const float* rows, int64_t p0);
  void finish(Slot& s, const std::string& reason, const std::optional<ApiError>& err);
  // A constrained slot's row with the tokens its grammar refuses at -inf (in masked_); null when
  // it refuses every token.
  const float* masked(Slot& s, const float* row);
  // An embedding job's prompt chunk in a step: its tokens [first, first + n) of the step.
  struct Embedded {
    Slot* s;
    size_t first, n;
  };
  // Adds the chunks' hidden rows (hidden_) to their jobs' pools; a job whose prompt is done gets
  // its embedding and ends.
  void pool_embeddings(const std::vector<Embedded>& chunks);

  const Model& model_;
  const Tokenizer& tok_;
  SchedulerOptions opt_;
  Metrics& metrics_;
  std::vector<std::unique_ptr<Slot>> slots_;  // touched by the stepping thread only
  std::unique_ptr<DraftBatch> draft_;          // -md: the slots' draft sequences
  std::unique_ptr<MtpProposer> mtp_;           // --spec mtp: every slot's MTP sequence
  std::vector<float> hidden_;                  // --spec mtp: the step's final-normed hidden rows
  std::vector<std::unique_ptr<DflashProposer>> dflash_;  // --spec dflash: each slot's assistant context
  std::vector<float> taps_;                    // --spec dflash: the step's rows at the assistant's taps
  std::unique_ptr<AssistantProposer> assistant_;  // --spec mtp -md DIR: Gemma 4's assistant, a slot per slot
  SpecBackoff backoff_;                        // whether the slots may draft now (stepping thread)
  uint64_t admitted_ = 0;
  // Constrained output (stepping thread): the masked row and the mask of the token being picked.
  std::vector<float> masked_;
  std::vector<uint8_t> allowed_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;
  bool draining_ = false, stopping_ = false;
  std::chrono::steady_clock::time_point deadline_{};
  std::thread thread_;
};

}  // namespace nvfp4::server
