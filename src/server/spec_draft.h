// The draft-model proposer of `serve -md DRAFT` (`--spec draft`): every slot keeps its own draft
// Sequence; one call drafts for all the slots of a step, the catch-up of every slot's history
// and each greedy draft step batched in one forward() of the draft model. As in `run`, the draft
// cannot change the output, only how many drafts are accepted: every emitted token is the
// target's own pick (spec_slot.h).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4::server {

class DraftBatch {
 public:
  // One draft Sequence of n_ctx positions per slot; catch-up steps of at most n_batch tokens.
  DraftBatch(const Model& draft, int slots, int64_t n_ctx, int64_t n_batch, KvType kv);

  struct Ask {
    int slot = 0;
    std::span<const int32_t> history;  // what the target's sequence holds once its next token is fed
    int64_t limit = 0;                 // drafts wanted (0: none)
    std::vector<int32_t>* out = nullptr;
  };
  // Fills each ask's `out` with up to `limit` greedy draft tokens continuing its history.
  void propose(std::span<const Ask> asks, ThreadPool& pool);
  int64_t evaluated() const { return evaluated_; }

  float p_min = 0.0f;  // --draft-p-min: a slot's draft stops at a token whose draft probability is below

 private:
  void draft(std::span<const Ask> asks, ThreadPool& pool);
  void run(std::vector<StepToken>& step, const std::vector<int>& row_ask, ThreadPool& pool);

  const Model& model_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  std::vector<std::vector<int32_t>> held_;  // the tokens in each slot's draft sequence
  Workspace ws_;
  std::vector<float> logits_;               // a step's rows
  std::vector<std::vector<float>> last_;    // per ask (of the current call): its latest logits
  int64_t evaluated_ = 0;
};

}  // namespace nvfp4::server
