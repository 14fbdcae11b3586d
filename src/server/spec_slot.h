// Speculative decoding in the server (`serve --spec ngram`): each generating slot may add drafts
// after its next token in the step's one forward(); the scheduler samples every row with the
// slot's own sampler (the draw of generation index i depends on (seed, i) alone, sampler.h) and
// accepts drafts while they equal the pick, so in the integer-exact modes (a16q8, w4a4) a
// request's tokens, text and logprobs are the bits plain decoding gives (generate.h says why).
// This file holds what a slot keeps for it: the draft of this step and its adaptive length.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/generate.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/model.h"
#include "nvfp4/speculate.h"

namespace nvfp4::server {

struct SpecOptions {
  bool ngram = false;            // --spec ngram: prompt lookup
  const Model* draft = nullptr;  // -md: the draft model (spec_draft.h), instead of the lookup
  bool mtp = false;              // --spec mtp: the model's own MTP module (nvfp4/mtp_draft.h), one per slot
  std::string mtp_name;          // where its layers came from, for the log
  const DflashDrafter* dflash = nullptr;  // --spec dflash: a DFlash assistant (nvfp4/dflash_draft.h), one context per slot
  const Gemma4Assistant* assistant = nullptr;  // --spec mtp -md DIR: Gemma 4's assistant (nvfp4/gemma4_assistant.h)
  std::string draft_name;        // its file, for the log
  int draft_max = 8;   // --draft-max: tokens per draft (adapted per slot, as `run` does)
  int draft_min = 0;   // --draft-min: a shorter draft is dropped
  float draft_p_min = 0.0f;  // --draft-p-min: the draft model stops at a token of lower probability
  int64_t draft_vocab = 0;   // --draft-vocab: the MTP module drafts over the head's first rows (0: all)
  int window = 8;            // --spec-window: requests per back-off window (spec_backoff.h)
  double min_speedup = 1.0;  // --spec-min-speedup: back off below this estimate (0: never)
  NgramProposer lookup;
  bool allow_drift = false;  // --spec-allow-drift: speculate in a16/f32 too
  bool on() const { return ngram || draft || mtp || dflash || assistant; }
  std::string describe() const;  // for the startup log
};

// Throws nvfp4::Error (naming --spec-allow-drift) when speculation is on in a mode whose logits
// may depend on the step's composition.
void check_spec_mode(const SpecOptions& o, Mode mode);

class SpecSlot {
 public:
  void reset(const SpecOptions& o) {
    k_.reset(o.draft_max);
    draft_.clear();
  }
  // The draft length this step may have: draft_limit (speculate.h) of k, the slot's sequence, the
  // tokens it has left and the step's budget; 0 when speculation is off (or backed off).
  int64_t want(const SpecOptions& o, const Sequence& seq, int64_t remaining, int64_t budget, bool active = true) const {
    return o.on() && active ? draft_limit(k_.k(), seq, remaining, budget) : 0;
  }
  // Sets the draft of this step by prompt lookup: at most `n` tokens continuing `history` (what
  // the slot's sequence holds once its next token is fed, that token included).
  void lookup(const SpecOptions& o, std::span<const int32_t> history, int64_t n);
  // Sets the draft of this step (a draft model's); one shorter than --draft-min is dropped.
  void set(const SpecOptions& o, std::vector<int32_t> draft);
  // After verification: `kept` of the draft's tokens were accepted and kept. Adapts k
  // (DraftLength, as `run` does) and drops the draft.
  void verified(const SpecOptions& o, size_t kept);
  const std::vector<int32_t>& draft() const { return draft_; }
  int k() const { return k_.k(); }

 private:
  DraftLength k_;
  std::vector<int32_t> draft_;
};

}  // namespace nvfp4::server
