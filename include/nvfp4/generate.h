// Generation over one sequence: plain decoding (one token per step), or speculative decoding
// with prompt-lookup (n-gram) or draft-model (draft.h) drafts verified in one step of k+1 tokens.
//
// Why speculation changes nothing but speed here: in the integer-exact modes (a16q8, w4a4) a
// token's logits are the same bits whatever else its step holds (docs/DETERMINISM.md), so the
// verification step's row i is exactly the logits plain decoding computes at that position; and
// the sampler's draw for generation index i depends on (seed, i) alone (sampler.h). The verifier
// picks the token plain decoding would pick at each position and accepts drafts while they equal
// it; so tokens and logits are bit-identical to plain decoding, greedy and sampled. In the float
// modes (a16, f32) the step composition may change the last bits, and speculation is refused
// unless drift is allowed explicitly.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/dflash_draft.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/draft.h"
#include "nvfp4/model.h"
#include "nvfp4/mtp_draft.h"
#include "nvfp4/sampler.h"

namespace nvfp4 {

// Drafts by prompt lookup: the longest suffix of the history (n_max down to n_min tokens) that
// occurred before; the tokens that followed its latest earlier occurrence are the draft.
struct NgramProposer {
  int n_min = 1, n_max = 4;
  // At most k tokens continuing `history`; empty when no suffix recurs.
  std::vector<int32_t> propose(std::span<const int32_t> history, int k) const;
};

struct GenerateOptions {
  int64_t n_predict = 128;
  SamplerOptions sampling;
  bool speculative = false;  // --spec ngram, or --spec draft with `draft` set
  int draft_max = 8;         // tokens per draft (adapted: halved after a rejection at the first
                             // draft token, doubled back after a fully accepted one)
  NgramProposer ngram;
  // The draft-model proposer (--spec draft); when set, it drafts instead of `ngram`. generate()
  // resets it and evaluates the prompt into it.
  DraftModelProposer* draft = nullptr;
  // The MTP proposer (--spec mtp): when set, it drafts from the trunk's hidden states, which
  // every step then also writes (forward(..., hidden)). generate() resets it.
  MtpProposer* mtp = nullptr;
  // The DFlash proposer (--spec dflash): when set, every step also writes the target's hidden
  // states at its drafter's taps (forward(..., LayerTaps)) and hands them over. generate() resets it.
  DflashProposer* dflash = nullptr;
  // Gemma 4's assistant (--spec mtp --model-draft DIR): when set, it drafts from the target's
  // hidden states (written by every step, as for `mtp`) and its sequence's keys and values.
  // generate() resets it.
  AssistantProposer* assistant = nullptr;
  // Speculation backs off to plain decoding when, over the last 16 verification steps, it made
  // fewer tokens per second than the plain steps measured before it (two plain steps first, only
  // when on). The drafts, their length and the verify step are speculate.h's, shared with serve.
  bool backoff = true;
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string stop = "length";  // "length" or "eog"
  int64_t steps = 0;            // decode steps after the prompt
  int64_t drafted = 0, accepted = 0;
  double draft_s = 0;  // seconds in the proposer (the draft model's prompt and drafting)
  bool backed_off = false;
  double prompt_s = 0, gen_s = 0;
};

// Evaluates `prompt` into `seq` (which must be empty), then generates. is_eog(token) ends
// generation (the token is not emitted); on_token(token) sees each token as it is emitted.
// Throws nvfp4::Error when speculation is asked for in a mode where the identity does not hold
// (a16, f32, f64) unless allow_drift.
GenerateResult generate(const Model& model, Sequence& seq, Workspace& ws, ThreadPool& pool,
                        std::span<const int32_t> prompt, const GenerateOptions& opt,
                        const std::function<bool(int32_t)>& is_eog, const std::function<void(int32_t)>& on_token,
                        bool allow_drift = false);

}  // namespace nvfp4
