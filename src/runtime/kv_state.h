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

}  // namespace nvfp4
