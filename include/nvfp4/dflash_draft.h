// The DFlash block drafter of speculative decoding (`run --spec dflash --model-draft DIR`): a
// release's separate assistant checkpoint (transformers' muse_glimmer_assistant,
// MuseGlimmerAssistantModel; vLLM's "dflash" method) that reads the target's hidden states
// between layers and proposes a whole block of tokens in one pass.
//
// What it computes (transformers 5.17, generation/candidate_generator.py's
// DFlashTokenCandidateGenerator over modeling_muse_glimmer_assistant.py):
// - Context: for every position p the target has run and kept, c_p = RMSNorm_enc(fc(concat of the
//   target's hidden_states[i] at p, i in target_layer_ids)) (the engine's LayerTaps). Each
//   assistant layer keeps keys k_norm(k_proj(c_p)) rotated at p and values v_proj(c_p): the
//   assistant's cache holds accepted positions only.
// - A draft step at P (the positions the target holds; the anchor, the target's latest pick, is
//   the token at P): the target's raw embeddings (no embedding norm or scale) of
//   [anchor, mask x (block_size - 1)] at positions P .. P + block_size - 1 through the layers:
//   x = RMSNorm_in(h); queries q_norm(q_proj(x)) rotated (NeoX halves); the block's own keys and
//   values from x the same way; attention NOT causal: every block query sees each context key and
//   each block key within its layer's window (sliding layers: |q - k| <= window, inclusive; full
//   layers: all), scale head_dim^-0.5, grouped-query; o_proj, residual; RMSNorm_post, SwiGLU MLP,
//   residual. Then the final RMSNorm and the target's head as a plain linear (no multiplier or
//   soft cap) on rows 1 .. block_size - 1: that many greedy drafts at once. The block's keys are
//   dropped after the step. RMSNorm here is w * x / sqrt(mean(x^2) + eps), in float.
// Drafts never change the output (generate.h): the target verifies them.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

// The assistant's weights and configuration, for one target.
class DflashDrafter {
 public:
  // Opens the assistant directory (config.json, model.safetensors) for `target`: its hidden size
  // and vocabulary must be the target's, its taps within the target's layers; every tensor in its
  // own storage, run in the target's mode (BF16 layers as stored in the integer-exact modes).
  // Throws nvfp4::Error naming the file, the key or tensor, the rule, expected and found.
  // quantize: its float linear layers quantized to NVFP4 at load (--draft-quantize; SPEC.md
  // section 4, as `convert` does): a quarter of the bytes a draft step reads.
  DflashDrafter(const std::string& dir, const Model& target, bool quantize = false);
  ~DflashDrafter();
  DflashDrafter(const DflashDrafter&) = delete;
  DflashDrafter& operator=(const DflashDrafter&) = delete;

  const Model& target() const;
  // The target's hidden_states indices it reads, in its fc's order (LayerTaps::layers).
  std::span<const int> taps() const;
  int64_t block_size() const;
  int32_t mask_token() const;
  int64_t weight_bytes() const;  // what a draft step reads of its own weights (the target's head aside)
  // "DFlash assistant DIR (format): 5 layers (sliding window 2048), block 16, taps [1, 13, ...], BF16, N MiB"
  std::string describe() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Whether `dir` holds a DFlash drafter (its config.json's model_type muse_glimmer_assistant, or
// architectures DFlash*DraftModel), without loading it; dflash_format names which ("" when none).
bool is_dflash_assistant(const std::string& dir);
std::string dflash_format(const std::string& dir);
// The refusal of a DFlash drafter given as the model to run: what it is and how it runs.
std::string dflash_run_alone_refusal(const std::string& dir);

class DflashProposer {
 public:
  // n_ctx: the target sequence's positions; kv: its cache's element (as --kv).
  DflashProposer(const DflashDrafter& drafter, int64_t n_ctx, KvType kv = KvType::f32);
  ~DflashProposer();
  const DflashDrafter& drafter() const { return d_; }

  float p_min = 0.0f;  // --draft-p-min: stop at the first draft whose probability is below
  int n_min = 0;       // --draft-min: a draft shorter than this is dropped

  // After each target step: the taps (forward(..., LayerTaps{taps(), out})) of its tokens at
  // positions p0 .. p0 + n - 1, rows [n][taps().size()][n_embd].
  void observe(int64_t p0, const float* taps, int64_t n, ThreadPool& pool);
  // observe() of several proposers of one drafter (serve's slots) with their rows in one matmul
  // of each layer: each ends as its own observe() would leave it, bit for bit.
  struct Observed {
    DflashProposer* p = nullptr;
    int64_t p0 = 0;
    const float* taps = nullptr;
    int64_t n = 0;
  };
  static void observe(std::span<const Observed> parts, ThreadPool& pool);
  // Up to min(k, block_size - 1) tokens continuing `history` (the target holds history.size() - 1
  // positions of it; its last token is the anchor), from a block of min(k + 1, block_size) rows.
  // Empty when the taps of a held position were not observed. Its block's keys take the context's
  // places after the anchor's: the positions from there must be observed again before a later
  // propose reads them (the target's next step does that).
  std::vector<int32_t> propose(std::span<const int32_t> history, int k, ThreadPool& pool);
  // propose() of several proposers of one drafter (serve's slots), their blocks' rows in one matmul
  // of each layer and one pass of the head: each gets the drafts its own propose() would give.
  struct Ask {
    DflashProposer* p = nullptr;
    std::span<const int32_t> history;
    int k = 0;
    std::vector<int32_t>* out = nullptr;
  };
  static void propose(std::span<const Ask> asks, ThreadPool& pool);
  // The logits [rows - 1][n_vocab] of the last propose()'s block (tests compare them).
  const std::vector<float>& last_logits() const { return logits_; }
  // Takes the first n context positions of another proposer of the same drafter (a prompt cache's
  // prefix copied in serve: the same tokens).
  void copy_prefix(const DflashProposer& from, int64_t n);
  void reset();
  int64_t evaluated() const { return evaluated_; }  // context positions and block rows run

 private:
  struct State;
  const DflashDrafter& d_;
  std::unique_ptr<State> s_;
  std::vector<float> logits_;
  int64_t evaluated_ = 0;
};

// The assistant's acceptance on `ids` with the target's own greedy picks as the truth: at up to 16
// positions P spread over the text's second half, the block anchored at ids[P] over the context
// ids[0 .. P) drafts its first token, compared with the target's argmax after ids[0 .. P] (the
// first draft of a verify step, accepted when they agree). `--spec dflash` measures it at load on
// the MTP check text (mtp_draft.h) and refuses an assistant below the same floor: one made for
// another target, or mismatched weights, show as a figure near 0. Returns the share; *positions
// gets how many were compared.
double dflash_acceptance(const DflashDrafter& drafter, std::span<const int32_t> ids, ThreadPool& pool, int64_t* positions = nullptr);

}  // namespace nvfp4
