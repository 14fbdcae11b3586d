// The KV cache and causal grouped-query attention, each in a pinned float order
// (docs/DETERMINISM.md): per (token, head) one thread computes everything, sequentially.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nvfp4/huge_pages.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "kernels/attention_kernels.h"

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
  // An FP8 cache's scales of layer l (finite and > 0, else nvfp4::Error naming the layer): keys
  // are stored as E4M3(k / k_scale), values as E4M3(v / v_scale) (kv_fp8_byte), and read as
  // the byte's value times the scale. 1.0 until set. Set them before storing.
  void set_scales(int64_t l, float k_scale, float v_scale);
  float k_scale(int64_t l) const { return scales_[static_cast<size_t>(2 * l)]; }
  float v_scale(int64_t l) const { return scales_[static_cast<size_t>(2 * l + 1)]; }
  // Stores the k and v vectors ([n_kv * head_dim] each) of layer l at position pos.
  void store(int64_t l, int64_t pos, const float* k, const float* v);
  // Copies positions [0, n) of layer src_l of src into layer l (the same heads, head size,
  // positions, type and scales, else nvfp4::Error naming both shapes).
  void copy_prefix(int64_t l, const KvCache& src, int64_t src_l, int64_t n);
  // Keys of KV head h of layer l, tiled as above (whole tiles: key_tiles(n_ctx) * kKeyTile * hd
  // elements), and its values as [j * head_dim + d], in place: float for an F32 cache, uint16_t
  // (F16) for an F16 one, uint8_t (E4M3) for an FP8 one; attention widens them in registers as it
  // reads.
  const void* keys(int64_t l, int64_t h) const;
  const void* values(int64_t l, int64_t h) const;
  size_t bytes() const { return f_.size() * 4 + h_.size() * 2 + b_.size(); }
  size_t layer_bytes() const { return static_cast<size_t>(layer_size()) * elem_bytes(); }
  size_t elem_bytes() const { return type_ == KvType::f32 ? 4 : type_ == KvType::f16 ? 2 : 1; }
  std::string layer_shape() const;  // "3 KV heads of 64, 256 positions, F16"
  KvType type() const { return type_; }
  int64_t n_ctx() const { return n_ctx_; }
  // Whether it holds n_layer layers of n_kv heads of head_dim (a sequence made for this model).
  bool fits(int64_t n_layer, int64_t n_kv, int64_t head_dim) const { return n_layer_ == n_layer && n_kv_ == n_kv && hd_ == head_dim; }

 private:
  int64_t n_layer_ = 0, n_kv_ = 0, hd_ = 0, n_ctx_ = 0, k_ctx_ = 0;  // k_ctx_: n_ctx rounded up to a whole tile
  KvType type_ = KvType::f32;
  HugeVector<float> f_;     // per layer: K [n_kv][tiles][hd][kKeyTile], then V [n_kv][n_ctx][hd]
  HugeVector<uint16_t> h_;  // the same in F16
  HugeVector<uint8_t> b_;   // the same in E4M3
  std::vector<float> scales_;  // per layer: k_scale, v_scale (FP8)
  int64_t layer_size() const { return n_kv_ * hd_ * (k_ctx_ + n_ctx_); }
};

// An FP8 cache's byte for x at scale s: x / s in float, rounded to nearest E4M3 (ties to even),
// saturated at +-448 as vLLM's FP8 cache writes do; NaN stays NaN (0x7F with its sign).
uint8_t kv_fp8_byte(float x, float scale);

// The tokens of a step as attention sees them: each reads its own sequence's cache, keys
// [0, pos] (causal; the step's own keys are stored before attention runs).
struct AttnToken {
  KvCache* kv = nullptr;  // written by the block (this step's keys and values), read by attention
  int64_t pos = 0;
  KvCache* kv_more = nullptr;  // the sequence's caches of KV groups 1.. (Sequence::Impl::kv_more)
  KvCache* cache(int group) const { return group == 0 ? kv : kv_more + (group - 1); }
};
struct AttnStep {
  std::vector<AttnToken> tok;
  int64_t max_len = 0;  // 1 + the largest position read
  // Fills tok and max_len.
  void set(std::span<const AttnToken> tokens);
};

// One attention layer as attention_layer() reads it: its place in the caches (KV group and layer
// within it), its shape, the scores' scale and its window (0: every position; else the last
// `window` positions of each token, its own included).
struct AttnView {
  int group = 0;
  int64_t layer = 0, head_dim = 0, n_head = 0, n_kv = 0, window = 0;
  float scale = 0.0f;
};

// As attention() for one layer of the view's shape. Without a window it is attention() itself
// (the same items, the same bits); with one, each (token, KV head) item reads only the window's
// keys, gathered in position order into scratch of its own, so a token's bits depend on its
// position and the window's keys alone.
void attention_layer(const AttnView& v, const AttnStep& step, const float* q, float* out, std::vector<float>& scratch,
                     ThreadPool& pool);

// out[t][h*hd .. ] = softmax(q_t,h . K / sqrt(hd)) V for each token t of the step, over keys
// [0, pos_t] of its cache. q, out: [n][n_head*hd]. scratch grows to what the step needs.
void attention(const ModelConfig& c, const AttnStep& step, int64_t layer, const float* q, float* out,
               std::vector<float>& scratch, ThreadPool& pool);

}  // namespace nvfp4
