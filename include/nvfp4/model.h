// The Llama-family runtime: token embedding, RMSNorm, RoPE (adjacent pairs, GGUF row order),
// grouped-query attention over a KV cache (F32 or F16), SwiGLU MLP, tied or untied head.
//
// Each linear layer runs as the checkpoint stores it: NVFP4 layers through Linear in the chosen
// Mode, float layers through DenseLinear (f32). The head and embedding use PinnedDense. Every float
// step outside the linear layers follows a pinned order (docs/DETERMINISM.md), so in the
// integer-exact modes the logits are the same bits for any thread count, ISA and batch size.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

struct ModelConfig {
  std::string arch;
  int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_vocab = 0, n_ctx_train = 0, rope_dim = 0;
  double rope_theta = 10000.0;
  float rms_eps = 1e-5f;
  bool tied_head = false;
};

struct LoadOptions {
  Mode mode = Mode::a16q8;
  // Quantize float linear layers to NVFP4 at load (SPEC.md section 4, as `nvfp4 convert` does).
  bool quantize = false;
  // Activation scales (amax / 2688) per linear layer ("blk.0.attn_q"), for w4a4 on layers
  // quantized at load; a checkpoint's own input scales take precedence.
  std::map<std::string, float> input_scales;
};

enum class KvType { f32, f16 };

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
  ~Model();

  const ModelConfig& config() const;
  Mode mode() const;
  // Human-readable lines: mode, storage and kernel of each kind of layer, weight bytes.
  std::vector<std::string> describe() const;
  size_t weight_bytes() const;  // bytes of the weights as the kernels hold them
  // Bytes of weights read per generated token (every linear layer, norms, the head).
  size_t bytes_per_token() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Model();
  std::unique_ptr<Impl> impl_;
};

class Context {
 public:
  // Allocates every buffer (KV cache, activations for n_batch tokens, logits) up front.
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

  // Called with every linear layer's input (name like "blk.3.ffn_down", x[n][n_in]); for
  // calibrating activation scales.
  using Observer = std::function<void(const std::string& layer, const float* x, int64_t n, int64_t n_in)>;
  void set_observer(Observer obs);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4
