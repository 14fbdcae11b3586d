// `bench model --verify-drafts K`: what a speculative verify step of k drafts (1 + k tokens, the
// recurrent layers' snapshots taken first and the drafts rolled back after) costs against a plain
// decode step of one token, for k = 1 .. K, on the same sequence after a prompt.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>

#include "nvfp4/dflash_draft.h"
#include "nvfp4/gemma4_assistant.h"
#include "nvfp4/model.h"

namespace nvfp4::cli {

// Per k: the median over `reps` of the mean step time of `steps` steps (k = 0 is the plain step),
// the k's interleaved within each repeat; {"k": [...], "step_ms": [...], "vs_plain": [...]}.
// profile: one more pass of `steps` steps per k timed by part (StepProfile's parts, "snapshots":
// begin_verify and end_verify, "other"), ms per step: {"parts_ms": [{part: ms, ...} per k]}.
nlohmann::json verify_cost(const Model& m, KvType kv, int threads, int64_t prompt, int max_k, int steps, int reps,
                           bool profile = false);

// `bench model --dflash DIR`: what DFlash speculation costs per step against a plain decode step,
// after a prompt, for drafts of k = 3, 7, .. block_size - 1 tokens (a block of k + 1 rows): the
// drafter's block pass, and the verify step of the k + 1 tokens with the drafter's taps (the
// target's step, every draft rejected and rolled back) with the drafter's context update of those
// rows (observe). Medians over `reps` of the mean of `steps` steps, interleaved with plain steps
// on a sequence of their own: {"plain_ms", "drafts": [{"k", "draft_ms", "verify_ms", "observe_ms",
// "break_even_accepted" (the accepted drafts a step needs to match plain decoding),
// "speedup_all_accepted"}]}.
nlohmann::json dflash_cost(const Model& m, const DflashDrafter& d, KvType kv, int threads, int64_t prompt, int steps, int reps);

// `bench model --assistant DIR`: the same for Gemma 4's assistant, for k = 1 .. 4 chained drafts:
// its k draft steps, then the verify step of the k + 1 tokens (every draft rejected) with the hidden
// states handed over (observe). {"plain_ms", "drafts": [{"k", "draft_ms", "verify_ms",
// "break_even_accepted", "speedup_all_accepted"}]}.
nlohmann::json assistant_cost(const Model& m, const Gemma4Assistant& a, KvType kv, int threads, int64_t prompt, int steps, int reps);

}  // namespace nvfp4::cli
