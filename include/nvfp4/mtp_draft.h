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
#include <memory>
#include <span>
#include <vector>

#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

class Head;  // ops/head.h

class MtpProposer {
 public:
  // trunk: a model loaded with LoadOptions::mtp (throws nvfp4::Error naming the file when it has
  // no MTP module); slots: sequences drafted for (serve's slots; run has one); n_ctx: a trunk
  // sequence's positions; n_batch: MTP entries per step when catching up.
  MtpProposer(const Model& trunk, int64_t n_ctx, int64_t n_batch = 64, KvType kv = KvType::f32, int slots = 1);
  ~MtpProposer();

  float p_min = 0.0f;  // --draft-p-min: stop drafting at a token whose draft probability is below
  int n_min = 0;       // --draft-min: a draft shorter than this is dropped

  // --draft-vocab: the module's head reads only the trunk head's first n rows (rounded up to 64),
  // the tokens a byte-pair vocabulary merged first, its most frequent (FR-Spec's draft
  // vocabulary); drafts are those ids' argmax and p_min their softmax. The head is most of an MTP
  // step's bytes at a small model's size. 0 or n >= the vocabulary: the whole head. The output is
  // the same bits either way (the trunk verifies every draft). Throws nvfp4::Error for an NVFP4
  // head. Returns the rows drafted over.
  int64_t set_draft_vocab(int64_t n);
  int64_t draft_vocab() const { return nv_; }

  // After each trunk step holding slot's sequence: the final-normed hidden states (forward(...,
  // hidden)) of its tokens at positions p0 .. p0 + n - 1, rows of n_embd.
  void observe(int slot, int64_t p0, const float* hidden, int64_t n);
  void observe(int64_t p0, const float* hidden, int64_t n) { observe(0, p0, hidden, n); }

  struct Ask {
    int slot = 0;
    std::span<const int32_t> history;  // its last token is the one the trunk runs next
    int64_t limit = 0;                 // drafts wanted
    std::vector<int32_t>* out = nullptr;
  };
  // Up to `limit` tokens continuing each ask's history (the trunk holds history.size() - 1
  // positions of it), every slot's catch-up and each chained draft step batched in one MTP step.
  // An ask whose hidden states were not observed gets no draft.
  void propose(std::span<const Ask> asks, ThreadPool& pool);
  std::vector<int32_t> propose(std::span<const int32_t> history, int k, ThreadPool& pool);
  // A slot takes the first n positions of another's (a prompt cache's prefix copied in serve):
  // the entries the other holds exactly for them.
  void copy_prefix(int slot, int from, int64_t n);
  void reset(int slot);
  void reset();                                    // every slot: a new generation
  int64_t evaluated() const { return evaluated_; }  // MTP entries run (catch-up and drafts)

 private:
  struct Slot;
  const Model& mtp_;
  std::shared_ptr<const Head> draft_head_;  // the head of --draft-vocab, or null
  std::vector<std::unique_ptr<Slot>> slots_;
  Workspace ws_;
  std::vector<float> logits_, h_in_, out_, rows_;
  int64_t evaluated_ = 0;
  int64_t d_ = 0, nv_ = 0;
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
