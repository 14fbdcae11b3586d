// The runtime, split as vLLM's and llama.cpp's are: a Model (the weights: immutable, shared by
// every sequence and thread), Sequences (a state per layer, sequence_state.h, and a position
// each), a Workspace (the scratch of one forward pass, owned by whoever steps) and forward():
// one step over a flat list of tokens, each with its sequence and position, so that prompt
// chunks and decode tokens of many sequences share one pass and every weight is decoded once for
// all of them. Context is the one-sequence convenience over those parts.
//
// The architecture comes from the table (include/nvfp4/arch.h): Llama 2/3.x, Mistral, Qwen2 and
// Qwen3, run by its family's block (src/models/<family>.cpp): RMSNorm, q/k/v projections (bias,
// per-head q/k RMSNorm where the family has them), RoPE (adjacent pairs or NeoX halves; llama3 /
// linear scaling), grouped-query attention over an F32 or F16 cache, SwiGLU MLP, tied or own head.
//
// NVFP4 layers run through Linear in the chosen Mode, float layers through DenseLinear (f32), the
// head and embedding through PinnedDense. Every float step outside the linear layers follows a
// pinned order (docs/DETERMINISM.md), so in the integer-exact modes a token's logits are the same
// bits for any thread count, ISA, step size and step composition (which other sequences share it).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/arch.h"
#include "nvfp4/checkpoint.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/sequence_state.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

struct RopeConfig {
  RopeStyle style = RopeStyle::adjacent;
  double theta = 10000.0;
  double linear_factor = 1.0;       // rope.scaling.type linear: positions divided by it
  std::vector<float> freq_factors;  // llama3 (or a GGUF rope_freqs.weight): frequency i divided by
                                    // freq_factors[i]; empty: none
  // Gemma 4's "proportional" RoPE: NeoX pairs (x[i], x[i + head_dim/2]) over the whole head, the
  // first n_rot/2 of them rotated at theta^(-2i/head_dim), the rest left as they are (frequency 0).
  bool proportional = false;
};

// One attention layer's own shape where a family's layers differ (Gemma 4: sliding-window layers
// and global ones with their own head size, KV heads and RoPE). ModelConfig::attn_layers holds one
// per layer (empty: every attention layer as the model-wide fields say).
struct AttnLayerConfig {
  int64_t head_dim = 0, n_kv = 0;
  int64_t window = 0;     // 0: every position; else the last `window` positions (its own included)
  int rope = 0;           // its RoPE table: ModelConfig::ropes[rope]
  bool k_eq_v = false;    // no v_proj: the values are k_proj's output (before the key's norm and RoPE)
  float scale = 0.0f;     // the scores' scale; 0: 1/sqrt(head_dim)
  int64_t kv_from = -1;   // KV shared (Gemma 4): the earlier layer whose keys and values it reads
                          // (no k/v projections, no cache of its own); -1: its own
};
// A RoPE table a family's layers pick by index (AttnLayerConfig::rope).
struct RopeLayerConfig {
  RopeConfig rope;
  int64_t head_dim = 0, n_rot = 0;  // n_rot: as RopeTable::init (0: the whole head)
};

// What a layer mixes tokens with (its sequence state's kind follows): attention (a KV cache),
// linear attention (Gated DeltaNet: a recurrent state), Mamba-2 (Nemotron-H: a recurrent state),
// or nothing (Nemotron-H's MLP and MoE layers: no state).
enum class MixerKind { attention, linear_attention, mamba, none };

// A Mamba-2 layer's sizes (Nemotron-H; kernels/mamba2.h): n_heads heads of head_dim channels,
// n_groups groups of B and C (d_state each) shared by n_heads / n_groups heads, the causal conv's
// taps, dt clamped to [dt_min, dt_max] (time_step_limit) and the gated RMSNorm's group size.
struct MambaConfig {
  int64_t n_heads = 0, head_dim = 0, d_state = 0, n_groups = 0, conv_kernel = 0;
  double dt_min = 0.0, dt_max = 0.0;  // dt_max <= 0: no upper limit
  int64_t inner() const { return n_heads * head_dim; }
  int64_t conv_dim() const { return inner() + 2 * n_groups * d_state; }
  int64_t norm_group() const { return n_groups > 0 ? inner() / n_groups : 0; }
  // A sequence's state for one layer: the conv window, then each head's [d_state][head_dim].
  int64_t state_floats() const { return conv_dim() * (conv_kernel - 1) + n_heads * d_state * head_dim; }
};

// A Gated DeltaNet layer's sizes (Qwen3.5 / Qwen3.6 / Qwen3-Next; kernels/gated_delta.h).
struct LinearAttnConfig {
  int64_t n_k_heads = 0, n_v_heads = 0, d_k = 0, d_v = 0, conv_kernel = 0;
  int64_t key_dim() const { return n_k_heads * d_k; }
  int64_t value_dim() const { return n_v_heads * d_v; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  // A sequence's state for one layer: the conv window and the heads' matrices.
  int64_t state_floats() const { return conv_dim() * (conv_kernel - 1) + n_v_heads * d_k * d_v; }
};

struct ModelConfig {
  std::string arch;                 // the table entry's name: "qwen3"
  const ArchInfo* info = nullptr;
  int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_vocab = 0, n_ctx_train = 0;
  int64_t sliding_window = 0;       // 0: none; else sequences longer than it are refused
  RopeConfig rope;
  float rms_eps = 1e-5f;
  bool tied_head = false;
  bool qkv_bias = false, o_bias = false, qk_norm = false;
  QkNormSpan qk_norm_span = QkNormSpan::head;
  // Mixture of experts (n_expert > 0): every layer's FFN is n_expert routed experts of n_ff_exp,
  // n_expert_used per token, plus a shared expert of n_ff_shexp when that is > 0.
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  MoeGating gating = MoeGating::softmax_all;
  bool norm_topk = false;  // renormalise the selected weights (softmax_all)
  // Hybrids: each layer's mixer (empty: every layer attention), the Gated DeltaNet sizes, RoPE over
  // the first n_rot dimensions of a head (0: all), and q_proj's output gate (its rows hold each
  // head's queries, then that head's gate: 2 * q_dim rows).
  std::vector<MixerKind> mixers;
  LinearAttnConfig linear;
  MambaConfig mamba;
  int64_t n_rot = 0;
  bool attn_out_gate = false;
  // Per-layer attention shapes and their RoPE tables (Gemma 4; empty for every other family), the
  // embedding's scale (0: none; Gemma: sqrt(n_embd) in float) and the final logits' soft cap
  // (0: none; else cap * tanh(logit / cap)).
  std::vector<AttnLayerConfig> attn_layers;
  std::vector<RopeLayerConfig> ropes;
  float embd_scale = 0.0f, final_softcap = 0.0f;
  // Gemma 4: the MLP width of the KV-shared layers (use_double_wide_mlp: 2 n_ff; 0: n_ff), and the
  // per-layer embeddings' width per layer (hidden_size_per_layer_input; 0: none).
  int64_t n_ff_kv_shared = 0, n_embd_per_layer = 0;
  // Muse Glimmer: the embedding RMSNorm-ed without a weight (eps rms_eps), the logits times
  // logit_scale before the soft cap (0: none), the norms after attention and FFN with their own eps.
  bool embd_norm = false;
  float logit_scale = 0.0f, post_norm_eps = 0.0f;
  // Nemotron-H: attention without RoPE; the router's sigmoid scores with a correction bias
  // (MoeGating::sigmoid_bias) chosen in n_group groups of which topk_group are kept, the weights
  // times routed_scale; experts in a latent width (0: n_embd) between two projections.
  bool no_rope = false;
  std::string pattern;  // Nemotron-H: each layer's kind, hybrid_override_pattern's letters (M * - E)
  int64_t n_group = 1, topk_group = 1, moe_latent = 0;
  float routed_scale = 1.0f;
  // The recurrent state's floats of layer l (0 for a layer without one).
  int64_t recurrent_floats(int64_t l) const {
    const MixerKind k = mixer(l);
    return k == MixerKind::linear_attention ? linear.state_floats() : k == MixerKind::mamba ? mamba.state_floats() : 0;
  }
  int64_t max_q_dim() const {
    int64_t q = q_dim();
    for (const AttnLayerConfig& a : attn_layers) q = std::max(q, n_head * a.head_dim);
    return q;
  }
  int64_t max_kv_dim() const {
    int64_t k = kv_dim();
    for (const AttnLayerConfig& a : attn_layers) k = std::max(k, a.n_kv * a.head_dim);
    return k;
  }
  MixerKind mixer(int64_t l) const { return mixers.empty() ? MixerKind::attention : mixers[static_cast<size_t>(l)]; }
  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

inline constexpr int64_t kExpertsBudgetAuto = -2;

// What a model's expert store did (LoadOptions::experts_budget; all zero without one).
struct ExpertStats {
  std::string file;
  int64_t slots = 0, slot_bytes = 0;  // the budget's slots, each the largest expert's size
  int64_t experts = 0;                // experts in the file
  int64_t hits = 0, misses = 0;       // experts the steps asked for: resident, or read from the file
  int64_t prefetched = 0;             // read ahead of the step that asked for them (the next layer's likely ones)
  int64_t prefetch_used = 0;          // of those, asked for while still resident
  int64_t bytes_read = 0;             // read from the file (misses and reads ahead)
  double read_s = 0;                  // wall seconds the steps waited on those reads
  int64_t written = 0;                // bytes written to the file at load (0: it held them all)
};

struct LoadOptions {
  Mode mode = Mode::a16q8;
  // Quantize float linear layers to NVFP4 at load (SPEC.md section 4, as `nvfp4 convert` does).
  bool quantize = false;
  // Activation scales (amax / 2688) per linear layer ("blk.0.attn_q"), for w4a4 on layers
  // quantized at load; a checkpoint's own input scales take precedence.
  std::map<std::string, float> input_scales;
  // Float linear layers (not quantized) through PinnedDense (docs/DETERMINISM.md: the same bits on
  // every ISA) instead of DenseLinear (whose order follows the vector width): calibration.
  bool pinned_float = false;
  // The checkpoint's multi-token-prediction (MTP) layers as well (Model::mtp(), --spec mtp): read
  // from `mtp_source` when set (a side file), else from the checkpoint itself (opened with
  // OpenOptions::mtp). Each tensor in its own storage (BF16, FP8, NVFP4), never the trunk's.
  bool mtp = false;
  const Checkpoint* mtp_source = nullptr;
  // The MTP module's float linear layers quantized to NVFP4 at load (`--draft-quantize`), the
  // trunk as stored: a cheaper draft step; its drafts are verified, so the output is the same.
  bool mtp_quantize = false;
  // Routed NVFP4 experts read from disk on demand (src/models/expert_store.h): at most
  // experts_budget bytes of them resident, the rest in experts_file (the kernels' packed layout,
  // written at load unless it holds them already). < 0, or a budget that holds every expert: all
  // resident, no file. The same bits as all resident.
  // kExpertsBudgetAuto: what memory allows once the dense weights are in (nvfp4/memory_info.h,
  // less 256 MiB and a twentieth), which the caller may then lower for its KV caches
  // (Model::set_experts_budget).
  int64_t experts_budget = -1;
  std::string experts_file;
  // With a store: read the next MoE layer's likely experts (its router on this layer's input)
  // while a step of a few tokens computes. Off by default: on random weights the guess was right
  // for 38% of the reads and generation slower (docs/BENCHMARKS.md section 34).
  bool experts_read_ahead = false;
  // Threads that pack the NVFP4 weights into the kernels' layout at load (the same bytes however
  // many); the CLI passes its -t.
  int threads = 1;
};

// The KV cache's element: float, IEEE half, or FP8 E4M3 (`--kv fp8`: each attention layer's keys
// divided by its k scale and values by its v scale, rounded to E4M3 saturating at +-448, and read
// back as the byte's value times the scale; the scales are the checkpoint's calibrated k_scale /
// v_scale where it has them, else 1.0, as vLLM's default).
enum class KvType { f32, f16, fp8 };

struct ContextOptions {
  int64_t n_ctx = 2048;   // KV cache positions
  int64_t n_batch = 64;   // prompt tokens per forward pass
  KvType kv = KvType::f32;
};

class Model {
 public:
  // Builds the model from a validated checkpoint. Throws nvfp4::Error for a missing or misshapen
  // tensor, an unsupported architecture, or a mode the checkpoint cannot serve (w4a4 without input
  // scales) before any inference.
  static std::unique_ptr<Model> load(const Checkpoint& ck, const LoadOptions& opt);
  // load's checks and nothing else (`inspect`): the configuration, every tensor the family reads
  // present and shaped, FP8 weights free of NaN bytes, no tensor left unread. No weight is prepared
  // or copied, so it needs little memory; a mode's own needs (w4a4's input scales) are not checked.
  static void check(const Checkpoint& ck, const LoadOptions& opt);
  ~Model();

  const ModelConfig& config() const;
  Mode mode() const;
  // Human-readable lines: mode, storage and kernel of each kind of layer, weight bytes.
  std::vector<std::string> describe() const;
  size_t weight_bytes() const;  // bytes of the weights as the kernels hold them
  // Whether the checkpoint has calibrated FP8 KV cache scales (ModelOpt k_proj.k_scale /
  // v_proj.v_scale, compressed-tensors self_attn.k_scale / v_scale), which an FP8 cache
  // (KvType::fp8) uses; without them it uses 1.0.
  bool kv_scales_calibrated() const;
  // Bytes of weights read per generated token (every linear layer, norms, the head).
  size_t bytes_per_token() const;
  // The MTP module loaded with LoadOptions::mtp (nullptr otherwise): a model of one layer of the
  // family's block whose step reads, beside each token, the trunk's final-normed hidden state at
  // the position before (forward_mtp); it shares the trunk's embedding and head.
  const Model* mtp() const;
  // The expert store's figures so far (LoadOptions::experts_budget); zero without one.
  ExpertStats expert_stats() const;
  // Another budget for the expert store, between steps (what is resident goes): `--experts-budget
  // auto` once the caller knows its KV caches. Throws nvfp4::Error without a store, or when the
  // budget holds fewer experts than a token routes to.
  void set_experts_budget(int64_t bytes);

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Model();
  static std::unique_ptr<Model> build(const Checkpoint& ck, const LoadOptions& opt, bool check_only);
  std::unique_ptr<Impl> impl_;
};

// The snapshots a model's recurrent layers keep per sequence: the longest draft a verify step of
// `run` or `serve` may carry there (their memory is taken on the first verify step).
inline constexpr int kSequenceSnapshots = 16;
// The positions a sliding-window layer keeps beyond its window (Gemma 4): how far it can go back
// (a rejected draft: at least kSequenceSnapshots) and the most tokens of one sequence a step
// stores before they attend (the block runs a longer step's tokens in waves of this many).
inline constexpr int kSlidingSlack = 64;
static_assert(kSlidingSlack >= kSequenceSnapshots + 1);

// One sequence: a state per layer (sequence_state.h: a full-attention layer's KV cache of n_ctx
// positions, allocated up front; a linear-attention layer's recurrent state) and how many
// positions it holds.
class Sequence {
 public:
  // The states the model's layers ask for. Throws nvfp4::Error when n_ctx < 1 or exceeds the
  // model's sliding window.
  Sequence(const Model& model, int64_t n_ctx, KvType kv = KvType::f32);
  // A sequence of the states `layers` ask for, one per layer (a test's toy recurrent model; a
  // family whose layers are not all attention). The full-attention layers of one KV shape share a
  // KV cache of n_ctx positions of type kv; sliding-window layers of one shape and window a ring
  // (runtime/kv_state.h).
  // `source` is named in errors.
  Sequence(std::span<const StateSpec> layers, int64_t n_ctx, KvType kv = KvType::f32, std::string source = "");
  ~Sequence();
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;

  int64_t pos() const;    // positions held: the next token goes there
  int64_t n_ctx() const;
  int64_t n_layer() const;
  LayerState& layer(int64_t l);
  const LayerState& layer(int64_t l) const;
  // Whether every layer can go back to any prefix (no recurrent layer).
  bool can_truncate() const;
  // The most drafts one verify step may carry: the snapshots each recurrent layer keeps
  // (kSequenceSnapshots for a model's sequence); unbounded (INT64_MAX) without recurrent layers.
  int64_t max_draft() const;
  // The longest prefix of at most n positions (0 <= n <= pos()) that every layer can go back to:
  // n when all can truncate; else 0, pos() or a position whose snapshot every layer keeps.
  int64_t keepable(int64_t n) const;
  // Keeps the first n positions (a prompt cache's shared prefix, a rejected draft): n must be
  // keepable(n), else nvfp4::Error naming the layer, its kind and what it can go back to.
  void truncate(int64_t n);
  // Before a step that appends up to 1 + k tokens any prefix of which may be kept (a verify step
  // of k drafts): a layer that cannot truncate keeps what going back needs (speculate.h).
  void snapshot(int64_t k);
  // Holds the first n positions of `from` (n = from.keepable(n)): a prompt cache's shared prefix
  // taken from another sequence of the same model, context and KV type (anything else throws
  // nvfp4::Error). A position's state depends on the tokens up to it alone, so this is the state
  // a forward() of those tokens would have written (bit for bit in the integer-exact modes).
  void copy_prefix(const Sequence& from, int64_t n);
  size_t bytes() const;

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// A token of a step. A sequence's tokens in one step take consecutive positions from its pos(),
// in step order (they may be interleaved with other sequences' tokens).
struct StepToken {
  int32_t token = 0;
  Sequence* seq = nullptr;
  int64_t pos = 0;
  bool logits = false;  // write this token's logits
};

// Called with every linear layer's input (name like "blk.3.ffn_down", x[n][n_in]); for
// calibrating activation scales.
using Observer = std::function<void(const std::string& layer, const float* x, int64_t n, int64_t n_in)>;

// Where the steps' time goes (`bench model --profile`): wall seconds and the bytes each part read
// (weights; for attention the keys and values of the cache), summed over the steps run while it is attached to a Workspace. The parts are timed
// around the calls that make them (the results do not change); `total` is the whole step, so
// total minus the parts is everything else (norms, residuals, the embedding, routing's plumbing).
struct StepProfile {
  // recurrent: the Gated DeltaNet layers' conv and delta rule (bytes: the states read and written).
  enum Part { attn_proj, attention, recurrent, router, experts, mlp, head, n_parts };
  static const char* name(int part);
  double seconds[n_parts] = {};
  double bytes[n_parts] = {};
  double total = 0;
  int64_t steps = 0, tokens = 0;
};

// The scratch of one forward pass of up to n_batch tokens: activations, attention scores and the
// linear layers' prepared activations; the RoPE table. Buffers grow to what a step needs and are
// kept; nothing in it changes a result.
class Workspace {
 public:
  Workspace(const Model& model, int64_t n_batch);
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;
  int64_t n_batch() const;
  size_t bytes() const;
  void set_observer(Observer obs);
  void set_profile(StepProfile* p);  // null: off

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// One forward pass over `tokens` (at most ws.n_batch()): stores each token's keys and values in
// its sequence, advances each sequence by its token count, and writes the logits of the tokens
// marked `logits`, in step order, to logits[k][n_vocab]. Throws nvfp4::Error, before computing
// anything, for a token id out of range, a missing sequence, positions that do not continue
// their sequence, or a sequence that would overflow its cache.
void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits);
// The same step, also writing every token's final-normed hidden state (the rows the head reads)
// to hidden[n][n_embd] when hidden is not null: what an MTP module drafts from.
void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits, float* hidden);
// Hidden states between the layers, for drafters that read the trunk's middle (DFlash, EAGLE-3):
// tap i is the residual stream before layer i, i.e. transformers' output_hidden_states index i
// (0: the embedding as the first layer reads it; i: layer i - 1's output; n_layer: the last
// layer's after the final norm, the rows the head reads, as transformers' last entry).
// out[n][layers.size()][n_embd]: each token's taps side by side, in the order `layers` lists them
// (a drafter's concatenated context).
struct LayerTaps {
  std::span<const int> layers;  // each in [0, n_layer]
  float* out = nullptr;
};
// The step of forward(..., hidden), also writing `taps` (throws nvfp4::Error for a tap out of range).
void forward(const Model& model, std::span<const StepToken> tokens, Workspace& ws, ThreadPool& pool, float* logits, float* hidden,
             const LayerTaps& taps);
// A step of an MTP module (Model::mtp()): token t enters as fc(concat(RMSNorm(embed(token)) * enorm,
// RMSNorm(h_in[t]) * hnorm)), with h_in[n][n_embd] the trunk's hidden state at the position before
// (or the module's own output when drafts are chained); then the family's block over the
// module's own sequence, its final norm (written to hidden[n][n_embd] when not null) and the
// shared head for the tokens marked `logits`.
void forward_mtp(const Model& mtp, std::span<const StepToken> tokens, const float* h_in, Workspace& ws, ThreadPool& pool,
                 float* logits, float* hidden);

// One sequence with its own workspace: eval() appends tokens in steps of n_batch.
class Context {
 public:
  Context(const Model& model, const ContextOptions& opt, ThreadPool& pool);
  ~Context();

  // Appends `n` tokens at the current position, n_batch at a time. Writes the logits of the last
  // token to logits[n_vocab], or (all = true) of every token to logits[n][n_vocab].
  // Throws nvfp4::Error when the cache would overflow or a token id is out of range.
  void eval(const int32_t* tokens, int64_t n, float* logits, bool all = false);
  int64_t pos() const;
  int64_t n_ctx() const;
  void reset();  // empty the KV cache
  size_t bytes() const;  // bytes allocated by this context
  using Observer = nvfp4::Observer;
  void set_observer(Observer obs);
  void set_profile(StepProfile* p);  // null: off
  Sequence& sequence();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4
