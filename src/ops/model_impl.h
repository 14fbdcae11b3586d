// Model internals shared by loading (src/models/model_load.cpp), the blocks (src/models/) and the
// step (src/runtime/step.cpp).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/fp8_linear.h"
#include "nvfp4/linear.h"
#include "nvfp4/model.h"
#include "ops/head.h"
#include "ops/row_table.h"
#include "kernels/pinned_dense.h"

namespace nvfp4 {

class ExpertStore;  // src/models/expert_store.h

// One linear layer: NVFP4 (Linear, in the model's mode) or float (DenseLinear f32).
struct MatMul {
  std::string name;  // "blk.0.attn_q"
  bool nvfp4 = false;
  Linear lin;
  DenseLinear dense;
  Fp8Linear fp8;       // instead of dense: an FP8 E4M3 layer in the integer-exact modes
  Head q8;             // instead of dense: a GGUF Q8_0 layer in the integer-exact modes (head_q8.h)
  bool use_q8 = false;
  PinnedDense pinned;  // instead of dense with LoadOptions::pinned_float
  bool use_pinned = false;
  int64_t n_out = 0, n_in = 0;
  size_t bytes = 0;  // weight bytes as stored for the kernels
  std::vector<float> bias;  // [n_out], empty: none (added to the output in float)
  // NVFP4_AWQ's per-input-channel pre_quant_scale [n_in], empty: none. StepRun::run/run_group
  // multiply the input by it (x[i] * s[i], one float product) before the layer reads it.
  std::vector<float> pre_scale;
  // An FP8 layer kept as its E4M3 bytes (dense of DType::e4m3): its scale, one value or one per
  // output row, multiplies each output in float (y = scale * (e4m3 . x)); empty: none.
  std::vector<float> out_scale;
  // The checkpoint declares the FP8 layer W8A8 (a static input_scale): not honoured (the input runs
  // as the mode quantizes it); Model::describe says so.
  bool fp8_input_scale = false;
  void forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool, LinearScratch* scratch) const {
    if (nvfp4) lin.forward(mode, x, n, y, pool, scratch);
    else if (fp8) fp8.forward(x, n, y, pool);
    else if (use_q8) q8.forward(mode, x, n, y, pool);
    else if (use_pinned) pinned.forward(x, n, y, pool);
    else dense.forward(x, n, y, pool);
    if (!out_scale.empty())
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < n_out; ++r) y[t * n_out + r] *= out_scale[out_scale.size() == 1 ? 0 : static_cast<size_t>(r)];
  }
  std::string kernel(Mode mode, int64_t n) const {
    return nvfp4 ? lin.kernel_name(mode, n) : fp8 ? fp8.kernel_name() : use_q8 ? q8.kernel_name(mode)
           : use_pinned ? pinned.kernel_name() : dense.kernel_name(n);
  }
};

// One routed expert: its own three projections, each with its own tensor scale applied to its
// own output (never folded into a neighbour).
struct Expert {
  MatMul gate, up, down;
};

// What a layer's FFN is (its mixer: MixerKind, nvfp4/model.h): the kinds a family's block
// dispatches on (src/models/builders.h).
// none: a layer without an FFN (Nemotron-H's Mamba and attention layers). A dense FFN or an
// expert without a gate projection (gate.n_out == 0) is Nemotron-H's non-gated squared ReLU:
// down(relu(up(x))^2).
enum class FfnKind { dense, moe, none };

// A Gated DeltaNet layer's weights (Qwen3.5 / Qwen3.6: in_proj_qkv, in_proj_z, in_proj_b,
// in_proj_a; Qwen3-Next: the fused in_proj_qkvz and in_proj_ba, grouped per key head), conv1d
// [conv_dim][kernel], A_log and dt_bias [n_v_heads], the gated norm's weight [d_v], out_proj.
struct LinearAttnWeights {
  // b, a, ba: a few rows each, left float by the producers; a float one runs through
  // PinnedDense (the same bits on every ISA, as the routers).
  MatMul qkv, z, qkvz, out, b, a, ba;
  std::vector<float> conv_w, A_log, dt_bias, norm;
};

// A Mamba-2 layer's weights (Nemotron-H; kernels/mamba2.h): in_proj (z | xBC | dt rows), conv1d
// [conv_dim][kernel] and its bias (empty: none), A_log, dt_bias and D [n_heads], the gated
// norm's weight [inner], out_proj.
struct MambaWeights {
  MatMul in, out;
  std::vector<float> conv_w, conv_b, A_log, dt_bias, D, norm;
};

struct LayerWeights {
  MixerKind mixer = MixerKind::attention;
  FfnKind ffn = FfnKind::dense;
  std::vector<float> attn_norm, ffn_norm;
  // Gemma 4: the norms of the attention's and the FFN's outputs before their residual adds, and
  // the scalar the layer's output is multiplied by (1: none).
  std::vector<float> post_attn_norm, post_ffn_norm;
  std::vector<float> v_norm;  // Gemma 4's value norm has no weight: ones (x * 1 is x)
  float out_scale = 1.0f;
  // Gemma 4's per-layer input (ModelConfig::n_embd_per_layer > 0): the gate [ple][n_embd], the
  // projection back [n_embd][ple] and its output's norm [n_embd].
  MatMul ple_gate, ple_proj;
  std::vector<float> ple_post_norm;
  // Gemma 4's MoE beside its dense MLP: the experts' input norm, the norms of the MLP's and the
  // experts' outputs (before their sum is post_ffn_norm-ed), the router's input scale [n_embd]
  // (after a weightless norm and hidden^-0.5) and each expert's weight scale [n_expert].
  std::vector<float> ffn_norm_exp, post_ffn_norm_mlp, post_ffn_norm_exp, router_scale, expert_scale;
  std::vector<float> router_norm;  // the router's weightless norm: ones
  std::vector<float> q_norm, k_norm;  // [head_dim] (Qwen3) or [q_dim]/[kv_dim] (OLMoE), empty: none
  MatMul q, k, v, o, gate, up, down;  // gate/up/down: the dense FFN (absent in MoE layers)
  MatMul attn_gate;                   // Muse Glimmer: the attention output's gate [q_dim][n_embd]
  // Mixture of experts: the router (float32 logits in the pinned order of PinnedDense), the
  // experts, and Qwen2-MoE's shared expert with its one-row sigmoid gate.
  PinnedDense router;
  std::vector<Expert> experts;
  MatMul sh_gate, sh_up, sh_down;
  PinnedDense sh_gate_inp;
  LinearAttnWeights lin;  // mixer linear_attention (q, k, v, o then unused)
  MambaWeights mamba;     // mixer mamba
  // Nemotron-H's router: e_score_correction_bias [n_expert] (MoeGating::sigmoid_bias), and the
  // latent projections around the experts (LatentMoE: n_embd -> moe_latent -> n_embd; n_out 0: none).
  std::vector<float> exp_bias;
  MatMul lat_in, lat_out;
  // Every linear layer of the layer, for counting and checks.
  std::vector<const MatMul*> matmuls() const {
    std::vector<const MatMul*> out;
    const auto add = [&](std::initializer_list<const MatMul*> ms) {
      for (const MatMul* m : ms)
        if (m->n_out > 0) out.push_back(m);  // (Gemma 4's K=V layers have no v, its KV-shared ones no k; non-gated FFNs no gate)
    };
    if (mixer == MixerKind::linear_attention) add({&lin.qkv, &lin.z, &lin.qkvz, &lin.out, &lin.b, &lin.a, &lin.ba});
    else if (mixer == MixerKind::mamba) add({&mamba.in, &mamba.out});
    else if (mixer == MixerKind::attention) add({&q, &k, &v, &o, &attn_gate, &ple_gate, &ple_proj});
    if (ffn == FfnKind::dense || gate.n_out > 0) add({&gate, &up, &down});  // (Gemma 4: a dense MLP beside its experts)
    if (ffn == FfnKind::moe) {
      for (const Expert& e : experts) add({&e.gate, &e.up, &e.down});
      add({&sh_gate, &sh_up, &sh_down, &lat_in, &lat_out});
    }
    return out;
  }
};

// An MTP module's own input side (llama.cpp's nextn tensors; HF mtp.pre_fc_norm_embedding,
// mtp.pre_fc_norm_hidden, mtp.fc): the norms of the embedding and of the trunk's hidden state and
// the projection of their concatenation [n_embd][2 n_embd] (embedding first).
struct MtpWeights {
  std::vector<float> enorm, hnorm;
  MatMul eh_proj;
};

struct StepRun;

// The KV groups of a sequence (src/runtime/sequence.cpp): full-attention layers of one KV shape
// and window share a cache, the groups in order of their first layer. kv_group_map fills group[l]
// and index[l] (layer l's group and its layer in that group's cache; -1 for a layer of another
// kind) and returns each group's shape and layer count.
struct KvGroup {
  StateSpec spec;
  int64_t layers = 0;
};
std::vector<KvGroup> kv_group_map(std::span<const StateSpec> layers, std::vector<int>& group, std::vector<int64_t>& index);
// The state layer l of a model asks for (a full-attention layer's KV shape and window, a linear
// layer's recurrent state).
StateSpec layer_state_spec(const ModelConfig& c, int64_t l);

struct Model::Impl {
  ModelConfig cfg;
  // The family's block (src/models/<family>.cpp, chosen by ArchInfo::block): runs one layer.
  void (*block)(StepRun& s, int64_t layer) = nullptr;
  Mode mode = Mode::a16q8;
  std::vector<LayerWeights> layers;
  // Model layer l's layer in a sequence's KV cache (the full-attention layers, in order); -1 for
  // a layer of another mixer.
  std::vector<int64_t> kv_layer;
  int64_t n_kv_layer = 0;
  // The KV group of each layer (kv_group_map; kv_layer is then its layer in that group's cache) and
  // the groups: one, of every attention layer, for all families but those whose layers differ.
  std::vector<int> kv_group;
  std::vector<KvGroup> kv_groups;
  // Each layer's FP8 KV cache scales (k_scale, v_scale: the checkpoint's calibrated ones, else
  // 1.0), 2 per layer; what a sequence's FP8 cache (KvType::fp8) divides by and reads back at.
  std::vector<float> kv_scales;
  bool kv_scales_calibrated = false;  // read from the checkpoint (else all 1.0)
  std::vector<float> output_norm;
  std::vector<float> embd_norm;  // Muse Glimmer's weightless embedding norm: ones [n_embd]
  // Gemma 4's per-layer embeddings: the token table [n_vocab][n_layer * ple] (read where the file
  // holds it), the projection of the scaled embedding [n_layer * ple][n_embd] and its norm [ple].
  RowTable ple_table;
  MatMul ple_model_proj;
  std::vector<float> ple_norm;
  Head embd;      // F16/F32, Q8_0 or NVFP4 (ops/head.h)
  Head head_own;  // used when the head is not tied
  // An MTP module's: the trunk whose embedding and head it shares, and its input side.
  const Impl* trunk = nullptr;
  MtpWeights nextn;
  const Head& embedding() const { return trunk ? trunk->embd : embd; }
  const Head& head() const { return trunk ? trunk->head() : cfg.tied_head ? embd : head_own; }
  std::unique_ptr<Model> mtp;  // the trunk's MTP module (LoadOptions::mtp), or null
  // The routed experts read from disk on demand (LoadOptions::experts_budget), or null: all
  // resident. It lends the layers' expert Linears their streams (moe_ffn acquires, releases).
  std::shared_ptr<ExpertStore> experts;
  std::string experts_note;  // Model::describe's line on the experts' budget, when one was given
  std::string source;
};

}  // namespace nvfp4
