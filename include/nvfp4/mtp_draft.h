// The MTP proposer of speculative decoding (`run --spec mtp`, `serve --spec mtp`): the
// checkpoint's own multi-token-prediction module (Model::mtp()) drafts from the trunk's hidden
// states. Entry p of the module's sequence reads the trunk's final-normed hidden state at
// position p and the token at p + 1, and predicts the token at p + 2 (vLLM's MTP proposer, the
// layout of llama.cpp's nextn layers). Before drafting, the entries of the positions the trunk
// has run since are computed in one step (the trunk's hidden states kept by observe()); the
// first draft comes out of the last of them, each further one from the module's own output
// fed back with the draft before it. Drafts never change the output (generate.h): only how
// many a verify step accepts.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

class MtpProposer {
 public:
  // trunk: a model loaded with LoadOptions::mtp (throws nvfp4::Error naming the file when it has
  // no MTP module); n_ctx: the trunk sequence's positions; n_batch: entries per step when catching up.
  MtpProposer(const Model& trunk, int64_t n_ctx, int64_t n_batch = 64, KvType kv = KvType::f32);

  float p_min = 0.0f;  // --draft-p-min: stop drafting at a token whose draft probability is below
  int n_min = 0;       // --draft-min: a draft shorter than this is dropped

  // After each trunk step of the sequence: the final-normed hidden states (forward(..., hidden))
  // of its tokens at positions p0 .. p0 + n - 1, rows of n_embd.
  void observe(int64_t p0, const float* hidden, int64_t n);
  // Up to k tokens continuing `history`, whose last token is the one the trunk runs next (the
  // trunk holds history.size() - 1 positions). Empty when the hidden states it needs were not
  // observed.
  std::vector<int32_t> propose(std::span<const int32_t> history, int k, ThreadPool& pool);
  void reset();                                    // a new generation
  int64_t evaluated() const { return evaluated_; }  // MTP entries run (catch-up and drafts)

 private:
  const Model& mtp_;
  Sequence seq_;  // the module's entries: exact ones for positions 0 .. seq_.pos() - 1
  Workspace ws_;
  std::vector<int32_t> held_;    // the tokens those entries read: history[0 .. seq_.pos()]
  std::vector<float> hidden_;    // observed trunk rows of positions h0_ .. h0_ + rows - 1
  int64_t h0_ = 0;
  std::vector<float> logits_, out_;
  int64_t evaluated_ = 0;
  int64_t d_ = 0;
};

// The MTP module's acceptance on `ids` with the trunk's own greedy picks as the truth: the share of
// positions p < n - 2 at which the module's argmax from the trunk's hidden state at p and token
// p + 1 equals the trunk's argmax after p + 1 (the first draft of a verify step, accepted when
// they agree). `--spec mtp` measures it at load on a fixed text and refuses a module below a
// floor: wrong precision, missing or mismatched weights show as a figure near 0.
double mtp_acceptance(const Model& trunk, std::span<const int32_t> ids, ThreadPool& pool);

// The text the load-time check reads (English prose; its tokens are the model's own).
extern const char* const kMtpCheckText;

}  // namespace nvfp4
