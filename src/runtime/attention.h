// The KV cache and causal grouped-query attention, each in a pinned float order
// (docs/DETERMINISM.md): per (token, head) one thread computes everything, sequentially.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "nvfp4/huge_pages.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

// Keys are stored in tiles of kKeyTile positions: key d of position j at
// [(j / kKeyTile) * hd + d] * kKeyTile + j % kKeyTile, so a chunk of keys of every dimension is one
// contiguous run (the scores stream it; a [hd][n_ctx] layout made them hop a row per dimension).
// The layout changes no arithmetic: every score is still its sum over d ascending.
inline constexpr int64_t kKeyTile = 16;
inline int64_t key_tiles(int64_t n) { return (n + kKeyTile - 1) / kKeyTile; }

class KvCache {
 public:
  void init(int64_t n_layer, int64_t n_kv, int64_t head_dim, int64_t n_ctx, KvType type);
  // Stores the k and v vectors ([n_kv * head_dim] each) of layer l at position pos.
  void store(int64_t l, int64_t pos, const float* k, const float* v);
  // Copies positions [0, n) of every layer from src (same shape and type, else nvfp4::Error).
  void copy_prefix(const KvCache& src, int64_t n);
  // Keys of head h at positions [0, n) as float, tiled as above (key_tiles(n) * kKeyTile * hd
  // floats); values as out[j * head_dim + d]. F32 caches are read in place (the pointer
  // returned), F16 ones converted (exactly: every F16 value is a float) by the active ISA's F16C loop.
  const float* keys(int64_t l, int64_t h, int64_t n, float* scratch) const;
  const float* values(int64_t l, int64_t h, int64_t n, float* scratch) const;
  // Parts of keys() / values() of an F16 cache: key tiles [tb, te) and value positions [jb, je)
  // of head h widened into dst, a buffer laid out as keys() / values() fill theirs.
  void widen_keys(int64_t l, int64_t h, int64_t tb, int64_t te, float* dst) const;
  void widen_values(int64_t l, int64_t h, int64_t jb, int64_t je, float* dst) const;
  size_t bytes() const { return f_.size() * 4 + h_.size() * 2; }
  bool is_f16() const { return type_ == KvType::f16; }
  int64_t n_ctx() const { return n_ctx_; }

 private:
  int64_t n_layer_ = 0, n_kv_ = 0, hd_ = 0, n_ctx_ = 0, k_ctx_ = 0;  // k_ctx_: n_ctx rounded up to a whole tile
  KvType type_ = KvType::f32;
  HugeVector<float> f_;     // per layer: K [n_kv][tiles][hd][kKeyTile], then V [n_kv][n_ctx][hd]
  HugeVector<uint16_t> h_;  // the same in F16
  int64_t layer_size() const { return n_kv_ * hd_ * (k_ctx_ + n_ctx_); }
};

// The tokens of a step as attention sees them: each reads its own sequence's cache, keys
// [0, pos] (causal; the step's own keys are stored before attention runs). slot: the index of
// the token's cache among the step's distinct caches (an F16 cache is widened once per slot and
// KV head for all the tokens that read it).
struct AttnToken {
  KvCache* kv = nullptr;  // written by the block (this step's keys and values), read by attention
  int64_t pos = 0;
  int64_t slot = 0;
};
struct AttnStep {
  std::vector<AttnToken> tok;
  std::vector<const KvCache*> caches;  // by slot
  std::vector<int64_t> len;            // by slot: 1 + the largest position read
  // Fills tok, caches and len; caches are numbered in order of first appearance.
  void set(std::span<const AttnToken> tokens);
};

// out[t][h*hd .. ] = softmax(q_t,h . K / sqrt(hd)) V for each token t of the step, over keys
// [0, pos_t] of its cache. q, out: [n][n_head*hd]. scratch grows to what the step needs.
// g[i] = silu(g[i]) * u[i] for i < n, vectorized for the active ISA (same bits on each).
void swiglu_rows(float* g, const float* u, int64_t n);

// The per-ISA bodies behind swiglu_rows and the softmax numerators (exp_shifted: out[j] =
// float(exp(double(s[j] - mx)))), exposed so the tests can hold every compiled variant to the
// scalar one; call the avx2/avx512 ones only where the CPU has them.
void swiglu_scalar(float* g, const float* u, int64_t n);
void swiglu_avx2(float* g, const float* u, int64_t n);
void swiglu_avx512(float* g, const float* u, int64_t n);
void exp_shifted_scalar(const float* s, float mx, float* out, int64_t n);
void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n);
void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n);
// F16 -> F32 (exact), per ISA: the avx2/avx512 ones with F16C.
void f16_to_f32_scalar(const uint16_t* h, float* f, int64_t n);
void f16_to_f32_avx2(const uint16_t* h, float* f, int64_t n);
void f16_to_f32_avx512(const uint16_t* h, float* f, int64_t n);

void attention(const ModelConfig& c, const AttnStep& step, int64_t layer, const float* q, float* out,
               std::vector<float>& scratch, ThreadPool& pool);

}  // namespace nvfp4
