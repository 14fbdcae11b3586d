// The one implementation of speculative decoding's bookkeeping that `run` (generate.cpp) and
// `serve` (server/scheduler.cpp, spec_slot.cpp, spec_draft.cpp) share: how long a draft may be,
// the snapshot before a verify step, which drafts a verify step accepts, and going back to what
// was accepted; and the prefix of a sequence a prompt cache or a draft model's catch-up can keep.
// Everything reaches the sequence's layers through Sequence (sequence_state.h), so a layer that
// cannot truncate (recurrent) keeps the snapshots going back needs.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nvfp4/model.h"

namespace nvfp4 {

// The adaptive draft length: k starts at the most a draft may have; it is halved (at least 1)
// after a draft rejected at its first token and doubled back (at most the maximum) after a draft
// accepted whole.
class DraftLength {
 public:
  void reset(int max) { k_ = max; }
  int k() const { return k_; }
  // After a verify step of `drafted` drafts, `kept` of them accepted.
  void verified(size_t drafted, size_t kept, int max);

 private:
  int k_ = 8;
};

// The drafts a verify step may carry: min(k, budget, the sequence's room after the fed token,
// remaining - 1, the snapshots its recurrent layers keep). The step's last row gives a token beyond the drafts, so drafts stop one short
// of the tokens left to generate (an accepted draft is always one the sequence keeps, as plain
// decoding's is). 0 or less: no drafts.
int64_t draft_limit(int64_t k, const Sequence& seq, int64_t remaining, int64_t budget);

// Before a verify step of `n_draft` drafts that starts at seq.pos(): the sequence keeps what
// going back to any accepted prefix needs (a recurrent layer's snapshots).
void begin_verify(Sequence& seq, size_t n_draft);

// What a verify step's rows gave. pick(i) samples row i (the logits after the step's token i: the
// fed token, then the drafts) and says what became of it.
struct Pick {
  int32_t token = -1;
  bool emitted = false;  // the token went out (an end-of-generation token does not)
  bool more = true;      // generation goes on after it
};
struct Verdict {
  size_t accepted = 0;  // emitted tokens equal to their draft
  size_t kept = 0;      // accepted drafts followed by another row: the sequence keeps them
  bool ended = false;   // generation ended at a row
  int32_t next = -1;    // when not ended: the last row's pick, fed at the next step
};
// Rows 0 .. draft.size() in order, while the picks equal the drafts: the picks are the tokens
// plain decoding makes (generate.h says why), so the output never depends on the drafts.
Verdict verify_drafts(std::span<const int32_t> draft, const std::function<Pick(size_t row)>& pick);

// After the verify step that started at p0: the sequence keeps the fed token and the kept drafts.
void end_verify(Sequence& seq, int64_t p0, size_t kept);

// The longest prefix of `held` (the tokens `seq` holds, held.size() == seq.pos()) that continues
// into `want`, less its last token (whose logits are needed), that the sequence can go back to.
int64_t reusable_prefix(const Sequence& seq, std::span<const int32_t> held, std::span<const int32_t> want);
// Keeps reusable_prefix(seq, held, want) positions of seq and of held; returns their count.
int64_t keep_reusable_prefix(Sequence& seq, std::vector<int32_t>& held, std::span<const int32_t> want);

}  // namespace nvfp4
