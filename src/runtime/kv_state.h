// The full-attention kind of sequence state (sequence_state.h): one layer's keys and values. The
// full-attention layers of a sequence keep their keys and values in one KvCache (attention.h), as
// they always have: layer l of the model is layer l of the cache, the same layout and the same
// bits; each layer's state is its view of that cache.
#pragma once
#include "nvfp4/sequence_state.h"
#include "ops/attention.h"

namespace nvfp4 {

class FullAttentionState final : public LayerState {
 public:
  FullAttentionState(KvCache& cache, int64_t layer) : cache_(&cache), layer_(layer) {}
  StateKind kind() const override { return StateKind::full_attention; }
  StateCaps caps() const override { return {true, false, true}; }
  size_t bytes() const override { return cache_->layer_bytes(); }
  std::string shape() const override { return cache_->layer_shape(); }
  // Any prefix: the positions past it are written again before attention reads them.
  int64_t keepable(int64_t n, int64_t held) const override { return n < held ? n : held; }
  void go_back(int64_t n, int64_t held) override;
  void snapshot(int64_t, int64_t) override {}
  void copy_prefix(const LayerState& from, int64_t n, int64_t from_held) override;

 private:
  KvCache* cache_;
  int64_t layer_;
};

// The sliding-window kind (sequence_state.h): one layer's keys and values of its last ring()
// positions, ring = min(n_ctx, window - 1 + kSlidingSlack), position p in slot p % ring of its
// group's KvCache (which holds ring positions). Memory is bounded by the window, not the context.
// What it can go back to: with a ring shorter than the context, a prefix of n positions while the
// window before n is still held (n >= held - (ring - window + 1), the slack), or 0; never further
// (those keys were overwritten): keepable() says so and truncate/copy_prefix refuse it. A verify
// step of k <= slack drafts needs no snapshot (the slack holds what going back needs); more is
// refused. With a ring of the whole context it is a full-attention layer: any prefix.
class SlidingWindowState final : public LayerState {
 public:
  SlidingWindowState(KvCache& cache, int64_t layer, int64_t window, int64_t n_ctx)
      : cache_(&cache), layer_(layer), window_(window), n_ctx_(n_ctx) {}
  StateKind kind() const override { return StateKind::sliding_window; }
  StateCaps caps() const override { return {whole(), false, whole()}; }
  size_t bytes() const override { return cache_->layer_bytes(); }
  std::string shape() const override { return cache_->layer_shape() + ", window " + std::to_string(window_); }
  int64_t keepable(int64_t n, int64_t held) const override;
  void go_back(int64_t n, int64_t held) override;
  void snapshot(int64_t held, int64_t k) override;
  void copy_prefix(const LayerState& from, int64_t n, int64_t from_held) override;
  int64_t ring() const { return cache_->n_ctx(); }
  // How far back it can go (and the longest draft a verify step may carry); n_ctx for a whole ring.
  int64_t slack() const { return whole() ? n_ctx_ : ring() - window_ + 1; }

 private:
  bool whole() const { return ring() >= n_ctx_; }
  KvCache* cache_;
  int64_t layer_, window_, n_ctx_;
};

// The shared-KV kind (sequence_state.h): a layer that reads layer `source`'s keys and values and
// holds nothing; truncate, copy_prefix and rollback are its source's (which the sequence asks too).
class SharedKvState final : public LayerState {
 public:
  explicit SharedKvState(int64_t source) : source_(source) {}
  StateKind kind() const override { return StateKind::shared_kv; }
  StateCaps caps() const override { return {true, false, true}; }
  size_t bytes() const override { return 0; }
  std::string shape() const override { return "layer " + std::to_string(source_) + "'s keys and values"; }
  int64_t keepable(int64_t n, int64_t held) const override { return n < held ? n : held; }
  void go_back(int64_t, int64_t) override {}
  void snapshot(int64_t, int64_t) override {}
  void copy_prefix(const LayerState&, int64_t, int64_t) override {}

 private:
  int64_t source_;
};

}  // namespace nvfp4
