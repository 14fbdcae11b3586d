// The internals of a forward step shared by the step driver (step.cpp) and the blocks
// (src/models/*_block.cpp): the workspace's buffers, the step's tokens as attention sees them, and
// the shared pieces a block is built from (as llama.cpp's build_norm / build_ffn / build_attn).
#pragma once
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/linear.h"
#include "nvfp4/model.h"
#include "ops/attention.h"
#include "ops/model_impl.h"
#include "ops/rope.h"
#include "ops/step_profile.h"

namespace nvfp4 {

struct Sequence::Impl {
  // The full-attention layers' keys and values, in one cache as before (model layer l is cache
  // layer l); each layer's FullAttentionState is its view. Empty for a sequence of other states.
  KvCache kv;
  // The caches of the other KV shapes (kv_group_map: Gemma 4's global layers beside its sliding ones).
  std::vector<KvCache> kv_more;
  KvCache& kv_group(int g) { return g == 0 ? kv : kv_more[static_cast<size_t>(g - 1)]; }
  const KvCache& kv_group(int g) const { return g == 0 ? kv : kv_more[static_cast<size_t>(g - 1)]; }
  std::vector<std::unique_ptr<LayerState>> layers;  // one per layer (sequence_state.h)
  int64_t pos = 0, n_ctx = 0;
  std::string source;  // the model's file, for errors
};

// A view of part of the workspace's activation arena (as a vector's data() and size()).
struct ActBuf {
  float* p = nullptr;
  size_t n = 0;
  float* data() const { return p; }
  size_t size() const { return n; }
};

struct Workspace::Impl {
  const Model::Impl& m;
  int64_t n_batch = 0;
  // [n_batch][width] activations: residual stream, normed (also the final-normed rows of the
  // logits), q/k/v, attention output, projection output, gate/up. Views of one arena: buffers
  // whose lives in a layer do not overlap share storage (xn with att, q with o, k with g, v with
  // u; see the constructor), so no two that one operation reads and writes are the same memory.
  std::vector<float> arena;
  ActBuf x, xn, q, k, v, att, o, g, u;
  // Mixture of experts: router logits [n][n_expert], each (token, rank)'s expert and weight, the
  // pairs grouped by expert (moe_count: prefix sums by expert), gathered rows and their outputs,
  // and the expert outputs by (token, rank) [n * k][n_embd].
  std::vector<float> moe_logits, moe_w, moe_x, moe_y, moe_g, moe_u;
  std::vector<float> moe_lat, moe_sum;  // LatentMoE: the rows in the latent width, the experts' sum there
  std::vector<int32_t> moe_sel;
  std::vector<int64_t> moe_count, moe_pairs, moe_tok;
  std::vector<float> attn_scratch;
  // Hybrids: the attention's q_proj output with its gate [n][2 * q_dim] and the gate [n][q_dim];
  // a Gated DeltaNet layer's input projections [n][conv_dim], [n][value_dim], [n][n_v_heads] x 2
  // (Qwen3-Next's fused ones [n][conv_dim + value_dim], [n][2 n_v_heads]) and its output
  // [n][value_dim]. Grown on first use.
  std::vector<float> qgate, gate_att, lin_qkv, lin_z, lin_b, lin_a, lin_fused, lin_fused_ba, lin_y;
  // The step's sequences in order of first appearance, each with its tokens' indices in step
  // order: a recurrent layer folds a sequence's tokens in that order (forward() fills it).
  struct SeqTokens {
    Sequence* seq = nullptr;
    std::vector<int64_t> tok;
  };
  std::vector<SeqTokens> seqs;
  std::vector<float> pre;  // the input times a layer's pre_quant_scale (grown on first use)
  std::vector<float> mtp_cat;
  // Gemma 4's per-layer inputs [n][n_layer][ple] (made before layer 0) and the step's token ids.
  std::vector<float> ple;
  std::vector<float> moe_in, moe_out;  // Gemma 4's MoE: the router's and experts' input rows, the experts' output
  std::vector<int32_t> token_ids;  // an MTP step's concat(embedding, hidden) rows [n][2 n_embd]
  RopeTable rope;
  std::vector<RopeTable> ropes;  // ModelConfig::ropes (a family's per-layer RoPE: Gemma 4)
  LinearScratch lin;
  Observer obs;
  StepProfile* prof = nullptr;
  AttnStep step;
  Impl(const Model::Impl& model, int64_t nb);
};

// One step in flight: the model, the workspace, the pool and the token count.
//
// The seam for a second backend: a block (src/models/) touches activations only through these
// ops and attention(); a device backend would implement the same ops over its own buffers (the
// Model's weights uploaded once into a backend buffer, the Workspace's activations living there),
// with the step driver (step.cpp) unchanged. Only the CPU implementation exists.
struct StepRun {
  const Model::Impl& m;
  Workspace::Impl& ws;
  ThreadPool& pool;
  int64_t n = 0;

  // out[t] = RMSNorm(in[t]) * w over rows of width d (n rows): sum of squares in double,
  // ascending; scale = float(1 / sqrt(mean + eps)); (x * scale) * w in float.
  void rmsnorm(const float* in, const std::vector<float>& w, float* out, int64_t rows, int64_t d) const;
  // The same with its own eps (Muse Glimmer's post-attention and post-FFN norms).
  void rmsnorm(const float* in, const std::vector<float>& w, float* out, int64_t rows, int64_t d, float eps) const;
  // One linear layer (bias added in float when it has one), with the observer (which sees the
  // input before a pre_quant_scale).
  void run(const MatMul& mm, const float* in, float* out) const;
  // Layers that read the same input (q/k/v, gate/up): NVFP4 ones share one activation
  // preparation and one dispatch (Linear::forward_group, same bits as one by one) when their
  // pre_quant_scales are equal (ModelOpt's export gives a fused group one); else one by one.
  void run_group(std::initializer_list<std::pair<const MatMul*, float*>> mms, const float* in) const;
  // run_group of layers with one n_out (gate and up), then rows(r0, r1) over every output row
  // range for all n columns (an elementwise op of their outputs, e.g. SwiGLU). NVFP4 layers
  // without biases run it inside the matmul's own dispatch (Linear::forward_rows: no hand-off
  // of its own); others run the group, then rows() split across the pool. Same bits either way.
  void run_group_rows(std::initializer_list<std::pair<const MatMul*, float*>> mms, const float* in,
                      const std::function<void(int64_t, int64_t)>& rows) const;
  // x[i] += o[i] for the step's rows of width d.
  void residual(float* x, const float* o, int64_t d) const;
  // in, or ws.pre = in[t][i] * s[i] when s is non-empty.
  const float* pre_scaled(const std::vector<float>& s, const float* in, int64_t n_in) const;

  // The rest of what a block may ask for, so that src/models/ never names the thread pool (the
  // seam above): the same step over its first `rows` tokens; fn(b, e) over [0, count) split
  // across the pool; attention of layer l over the step's caches (ops/attention.h); a float
  // matrix of pinned order (routers); one linear layer without observer or bias; and Linear's
  // grouped, many-input and routed forms (nvfp4/linear.h), in the model's mode.
  StepRun rows(int64_t rows) const { return StepRun{m, ws, pool, rows}; }
  void parallel(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align = 1) const;
  void attention(int64_t layer, const float* q, float* out) const;
  // Attention of one layer of its own shape and window (ops/attention.h attention_layer), over the
  // step's tokens or `part` of them (q and out then that part's rows).
  void attention_layer(const AttnView& v, const float* q, float* out, const AttnStep* part = nullptr) const;
  void dense(const PinnedDense& d, const float* x, int64_t rows, float* y) const;
  void linear(const MatMul& mm, const float* x, int64_t rows, float* y) const;
  void linear_group(std::span<const Linear* const> layers, const float* x, int64_t rows, std::span<float* const> y) const;
  void linear_many(std::span<const Linear* const> layers, std::span<const float* const> xs, std::span<const int64_t> ns,
                   std::span<float* const> ys) const;
  void linear_routed(std::span<const Linear* const> layers, const float* x, int64_t rows,
                     std::span<const int64_t* const> sel, std::span<const int64_t> ns, std::span<float* const> ys) const;
};

// The dense MLP's tokens per pass: in the integer-exact modes a token's result does not depend on
// the rows a layer runs with (docs/DETERMINISM.md), so a prompt window's MLP runs kMlpRows tokens
// at a time and its gate/up rows (the workspace's largest buffers) are kMlpRows wide, not
// n_batch; the float modes keep one pass. kMlpRows is well above the GEMM kernels' kPrefillN.
// The head's n logits as the model finishes them: times logit_scale (Muse Glimmer's
// output_multiplier), then capped (Gemma's final_softcap: cap * tanh(x / cap) from the pinned exp).
void finish_logits(const ModelConfig& c, float* logits, int64_t n);

inline constexpr int64_t kMlpRows = 128;
inline int64_t mlp_rows(Mode mode, int64_t n) {
  return mode == Mode::a16q8 || mode == Mode::w4a4 ? std::min(n, kMlpRows) : n;
}

}  // namespace nvfp4
