// The shared pieces a family's block is built from (as llama.cpp's src/models/*.cpp use
// llama-graph.cpp's build_norm / build_attn / build_ffn / build_moe_ffn), over the ops of
// src/ops/ (StepRun) and the step's workspace. A family file (src/models/<family>.cpp) composes
// them into its block; families.cpp picks the file from the architecture table's `block`.
// Each piece's float order is docs/DETERMINISM.md's; a block that calls the same pieces in the
// same order computes the same bits.
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>

#include "ops/step_impl.h"

namespace nvfp4 {

// One layer of the step, in place on ws.x (the residual stream).
using BlockFn = void (*)(StepRun& s, int64_t layer);

// xn = RMSNorm(x) * attn_norm; q, k, v = their projections of xn (one group; biases added).
void build_qkv(StepRun& s, const LayerWeights& L);
// Qwen3: RMSNorm of every head of q and k (weights [head_dim]), each head a row.
void build_qk_norm_heads(StepRun& s, const LayerWeights& L);
// OLMoE: RMSNorm over each token's whole q and k (weights [q_dim] and [kv_dim]).
void build_qk_norm_full(StepRun& s, const LayerWeights& L);
// RoPE of q and k, k and v into each token's cache at layer l, attention over the cache, the
// output gate when there is one (att *= sigmoid(gate[n][q_dim]), Qwen3.5), the output
// projection, and x += o.
void build_attn(StepRun& s, const LayerWeights& L, int64_t layer, const float* gate = nullptr);
// A layer of its own attention shape (ModelConfig::attn_layers[l]: Gemma 4, Muse Glimmer; in
// src/models/layer_attention.cpp): with the step's q, k and v in ws.q / ws.k / ws.v (normed as the
// family norms them), RoPE by the layer's table where it has one, k and v into each token's cache
// (none for a layer that reads an earlier one's: kv_from), and attention over the layer's window
// (all positions when 0) into ws.att. A sliding layer's tokens of one sequence store and attend in
// waves of at most kSlidingSlack (each token's window stays in the ring; no bit changes).
void build_layer_attention(StepRun& s, int64_t layer);
// att *= sigmoid(gate) elementwise in float, gate and att [n][q_dim] (Qwen3.5, Muse Glimmer).
void build_output_gate(StepRun& s, const float* gate, int64_t q_dim);
// Qwen3.5's q_proj: xn = RMSNorm(x) * attn_norm; q_proj's rows hold each head's queries, then
// that head's gate: q and ws.gate_att [n][q_dim] apart, k and v as build_qkv.
void build_qkv_gated(StepRun& s, const LayerWeights& L);
// A Gated DeltaNet layer (Qwen3.5 / Qwen3.6 / Qwen3-Next; src/models/gated_delta_layer.cpp):
// xn = RMSNorm(x) * attn_norm, the input projections, the recurrence of each sequence's tokens in
// step order over its recurrent state (kernels/gated_delta.h), out_proj, and x += out.
void build_gated_delta(StepRun& s, const LayerWeights& L, int64_t layer);
// A Mamba-2 layer (Nemotron-H; src/models/mamba_layer.cpp): xn = RMSNorm(x) * attn_norm, in_proj,
// the scan of each sequence's tokens in step order over its recurrent state (kernels/mamba2.h),
// out_proj, and x += out.
void build_mamba(StepRun& s, const LayerWeights& L, int64_t layer);
// The two layers' token mixers over the step's sequences (recurrent_groups.cpp): items of one
// sequence's head group (groups share nothing), spread over the pool, each folding its sequence's
// tokens in order (fold(state, group, step token, scratch)) and, after a token whose position a
// verify step asked a snapshot of, copying the group's part of the state into the slot
// (copy_part(state, slot, group)); then the snapshots are marked taken. A group's matrices stay
// in cache across a verify step's tokens (BENCHMARKS 33).
using GroupFold = std::function<void(float* state, int64_t group, int64_t t, float* scratch)>;
using GroupCopy = std::function<void(const float* from, float* to, int64_t group)>;
void fold_groups(StepRun& s, int64_t layer, int64_t groups, int64_t scratch_floats, const GroupFold& fold,
                 const GroupCopy& copy_part);
// xn = RMSNorm(x) * ffn_norm, the layer's FFN by its kind (dense SwiGLU or mixture of experts),
// and x += its output.
void build_ffn(StepRun& s, const LayerWeights& L);
// The dense SwiGLU MLP: o = down(silu(gate(xn)) * up(xn)).
void build_dense_ffn(StepRun& s, const LayerWeights& L);

// What a family's MoE FFN does otherwise (Gemma 4); the defaults are every other family's.
struct MoeOptions {
  const float* router_in = nullptr;                   // the router's input rows (nullptr: xn)
  bool gelu = false;                                  // gelu_tanh(gate) * up instead of silu(gate) * up
  const std::vector<float>* expert_scale = nullptr;   // each selected expert's weight times its scale (float)
};
// The mixture-of-experts FFN (src/models/moe_ffn.cpp): out[t] for the step's normed rows xn[t].
void moe_ffn(StepRun& s, const LayerWeights& L, const float* xn, float* out, const MoeOptions& opt = {});
// The router's choice for one token: sel[j] and weight[j] for j < n_expert_used, in rank order.
// bias: MoeGating::sigmoid_bias's e_score_correction_bias [n_expert] (null: none).
void route(const ModelConfig& c, const float* logits, int32_t* sel, float* weight, const float* bias = nullptr);
// g[i] = relu(g[i])^2 in float (Nemotron-H's squared ReLU): r = max(g, 0), r * r.
inline void relu2_rows(float* g, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float r = g[i] > 0.0f ? g[i] : 0.0f;
    g[i] = r * r;
  }
}

}  // namespace nvfp4
