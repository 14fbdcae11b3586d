// Gemma 4's assistant drafter of speculative decoding (`run --spec mtp --model-draft DIR`, or `-md
// DIR` alone): the small model Google releases beside each Gemma 4 (google/gemma-4-*-it-assistant;
// transformers' gemma4_assistant, Gemma4AssistantForCausalLM) that drafts one token at a time from
// the target's last hidden state and the target's own keys and values.
//
// What it computes (transformers 5.17, generation/candidate_generator.py's
// SinglePositionMultiTokenCandidateGenerator over modeling_gemma4_assistant.py): the target holds
// positions 0 .. P - 1 and picked t (at P). A draft step at P:
//   x = pre_projection(concat(the target's scaled embedding of t, h)), h: the target's final-normed
//       hidden state at P - 1 for the first draft, post_projection of the step before after that;
//   its Gemma 4 layers (src/models/gemma4.cpp's block), every one KV-shared: q = q_norm(q_proj(n1))
//       rotated at P by its layer type's RoPE, attending (scale 1) over the target's keys and values
//       of the target's last full-attention layer with keys of its own (all of 0 .. P - 1) or of
//       its last such sliding layer (the last window + 1 of them: transformers' bidirectional
//       sliding mask |q - k| <= window, flipped to the past); o_proj, post-attention norm,
//       residual; GeGLU MLP between its norms, residual; times the layer scalar;
//   the final norm, then the logits: the tied lm_head over the whole vocabulary, or with
//       use_ordered_embeddings the centroid-masked embedder (the top centroid_intermediate_top_k of
//       num_centroids centroid logits; their vocabulary slices of token_ordering scored against
//       the lm_head's rows, every other token masked); the draft is the argmax;
//   and post_projection of the normed state: the next draft's h, at the same position P.
// The assistant keeps no keys of its own: a draft step reads only what the target holds (the
// candidate generator slices the target's verify-step states to the new length, which after a
// rejection still holds the rejected draft's key at P; the engine reads positions < P, what the
// target keeps). Drafts never change the output (generate.h): the target verifies them.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

class Gemma4Assistant {
 public:
  // Opens the assistant directory (config.json, model.safetensors) for `target`, a Gemma 4 model:
  // its backbone_hidden_size and vocabulary must be the target's, each layer's head size and KV
  // heads those of the target layer it reads. Its layers run in the target's mode (a16q8 for a
  // w4a4 target); quantize: its float linear layers to NVFP4 at load (--draft-quantize).
  // Throws nvfp4::Error naming the file, the key or tensor, the rule, expected and found.
  Gemma4Assistant(const std::string& dir, const Model& target, bool quantize = false);
  ~Gemma4Assistant();
  Gemma4Assistant(const Gemma4Assistant&) = delete;
  Gemma4Assistant& operator=(const Gemma4Assistant&) = delete;

  const Model& target() const;
  int64_t weight_bytes() const;
  // "Gemma 4 assistant DIR: 4 layers (3 sliding, 1 full) of 256, reading target layers 22 and
  // 23, ordered embeddings (top 32 of 2048 centroids), BF16, N MiB"
  std::string describe() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Whether `dir` holds a Gemma 4 assistant (config.json's model_type gemma4_assistant, or
// gemma4_unified_assistant: the same model, Gemma 4 12B's), without loading it; gemma4_assistant_type
// names which ("" when none).
std::string gemma4_assistant_type(const std::string& dir);
inline bool is_gemma4_assistant(const std::string& dir) { return !gemma4_assistant_type(dir).empty(); }
// The refusal of an assistant given as the model to run: what it is and how it runs.
std::string gemma4_assistant_refusal(const std::string& dir);

class AssistantProposer {
 public:
  // slots: sequences drafted for (serve's slots; run has one).
  explicit AssistantProposer(const Gemma4Assistant& a, int slots = 1);
  ~AssistantProposer();
  const Gemma4Assistant& assistant() const { return a_; }

  float p_min = 0.0f;  // --draft-p-min: stop at the first draft whose probability is below
  int n_min = 0;       // --draft-min: a draft shorter than this is dropped

  // After each target step holding slot's sequence: the final-normed hidden states (forward(...,
  // hidden)) of its tokens at positions p0 .. p0 + n - 1, rows of the target's n_embd.
  void observe(int slot, int64_t p0, const float* hidden, int64_t n);
  void observe(int64_t p0, const float* hidden, int64_t n) { observe(0, p0, hidden, n); }

  struct Ask {
    int slot = 0;
    std::span<const int32_t> history;  // its last token is the one the target runs next
    const Sequence* seq = nullptr;     // the target's sequence: history.size() - 1 positions
    int64_t limit = 0;                 // drafts wanted
    std::vector<int32_t>* out = nullptr;
  };
  // Up to `limit` chained drafts for each ask, every ask's step j in one pass of the assistant. An
  // ask whose hidden state at P - 1 was not observed, or whose sequence does not hold P positions,
  // gets none.
  void propose(std::span<const Ask> asks, ThreadPool& pool);
  std::vector<int32_t> propose(std::span<const int32_t> history, int k, const Sequence& seq, ThreadPool& pool);
  // The logits [steps][n_vocab] of slot's last drafts (masked tokens hold min(kept) - 1, as
  // transformers fills them); tests compare them.
  const std::vector<float>& last_logits(int slot = 0) const;
  // A slot takes another's observed state for a shared prefix of n positions (serve's prompt cache).
  void copy_prefix(int slot, int from, int64_t n);
  void reset(int slot);
  void reset();
  int64_t evaluated() const { return evaluated_; }  // draft steps run

 private:
  struct Slot;
  struct Ropes;  // each layer's RoPE table, grown as positions do (not rebuilt per draft)
  const Gemma4Assistant& a_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<Ropes> ropes_;
  int64_t evaluated_ = 0;
};

// The assistant's acceptance on `ids` with the target's greedy picks as the truth: at up to 16
// positions P over the text's second half, its first draft from the target's state after ids[0 ..
// P) and t = ids[P] against the target's argmax after ids[0 .. P]. `--spec mtp --model-draft` with
// an assistant measures it at load on the MTP check text (mtp_draft.h) and refuses one below the
// floor. *positions gets how many were compared.
double assistant_acceptance(const Gemma4Assistant& a, std::span<const int32_t> ids, ThreadPool& pool, int64_t* positions = nullptr);

}  // namespace nvfp4
