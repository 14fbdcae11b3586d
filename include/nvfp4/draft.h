// The draft-model proposer of speculative decoding (`run --spec draft --model-draft FILE`): a
// second, smaller or cheaper model with the target's vocabulary drafts greedily, with its own
// Sequence and Workspace; the target verifies the draft in one step (generate.h). The draft's
// cache is kept in step with the accepted tokens: before drafting it keeps the longest common
// prefix of what it holds and the history (the rest, rejected drafts, is truncated) and evaluates
// the tokens it has not seen. The draft cannot change the output, only the speed: every emitted
// token is the target's pick.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "nvfp4/tokenizer.h"

namespace nvfp4 {

// Throws nvfp4::Error naming both files unless the draft's vocabulary is the target's: the same
// token count (tokenizer and model rows), the same bytes for every token id, the same special
// flags, bos/eos ids and add_bos. (llama.cpp's common_speculative_are_compatible checks the
// vocabulary type, add_bos/bos, add_eos/eos, a token count within 128 and the token texts from id
// 5 on; we ask for equality, since a draft token the target names differently is never accepted.)
void check_draft_vocab(const Tokenizer& target, int64_t target_rows, const std::string& target_file,
                       const Tokenizer& draft, int64_t draft_rows, const std::string& draft_file);

// The softmax probability of logits[top] (the draft's argmax): 1 / sum(exp(l - l[top])), in double.
// --draft-p-min compares it; it decides which drafts are proposed, never the output.
double top_probability(const float* logits, int64_t n_vocab, int32_t top);

class DraftModelProposer {
 public:
  // n_ctx: the target sequence's positions (the draft never needs more); n_batch: tokens per
  // forward pass when catching up (the prompt).
  DraftModelProposer(const Model& draft, ThreadPool& pool, int64_t n_ctx, int64_t n_batch = 64,
                     KvType kv = KvType::f32);

  int n_min = 0;       // --draft-min: a draft shorter than this is dropped (0: keep any)
  float p_min = 0.0f;  // --draft-p-min: stop drafting at a token whose draft probability is below

  // Brings the draft's cache to `history` (it then holds all of it) without drafting.
  void sync(std::span<const int32_t> history);
  // Up to k tokens continuing `history`, each the draft model's argmax.
  std::vector<int32_t> propose(std::span<const int32_t> history, int k);
  // Forgets everything (a new generation).
  void reset();
  int64_t evaluated() const { return evaluated_; }  // tokens the draft model has run

 private:
  // Feeds history[held_.size()..] after truncating to the common prefix; logits_ then holds the
  // draft's logits after history.back().
  void catch_up(std::span<const int32_t> history);
  void feed(std::span<const int32_t> tokens);

  const Model& model_;
  ThreadPool& pool_;
  Sequence seq_;
  Workspace ws_;
  std::vector<int32_t> held_;  // the tokens in seq_, in order
  std::vector<float> logits_;
  int64_t evaluated_ = 0;
};

}  // namespace nvfp4
