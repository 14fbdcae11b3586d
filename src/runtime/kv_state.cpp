#include "runtime/kv_state.h"

#include <algorithm>

#include "nvfp4/error.h"

namespace nvfp4 {

void FullAttentionState::go_back(int64_t n, int64_t held) {
  if (n < 0 || n > held)
    throw Error("", "KV cache", "a full-attention layer goes back to a prefix of what it holds", "0 .. " + std::to_string(held),
                std::to_string(n));
}

void FullAttentionState::copy_prefix(const LayerState& from, int64_t n, int64_t from_held) {
  const auto* f = dynamic_cast<const FullAttentionState*>(&from);
  if (!f)
    throw Error("", "KV cache", "copy a layer's state from a layer of the same kind", state_kind_name(kind()),
                state_kind_name(from.kind()));
  if (n < 0 || n > from_held)
    throw Error("", "KV cache", "copy a prefix of what the layer holds", "0 .. " + std::to_string(from_held), std::to_string(n));
  cache_->copy_prefix(layer_, *f->cache_, f->layer_, n);
}

int64_t SlidingWindowState::keepable(int64_t n, int64_t held) const {
  n = std::min(n, held);
  return whole() || n >= held - slack() ? n : 0;
}

void SlidingWindowState::go_back(int64_t n, int64_t held) {
  if (n < 0 || n > held || keepable(n, held) != n)
    throw Error("", "KV cache",
                "a sliding-window layer goes back only while the window before the new end is held (" + std::to_string(slack()) +
                    " positions) or to 0",
                "0 or " + std::to_string(std::max<int64_t>(0, held - slack())) + " .. " + std::to_string(held), std::to_string(n));
}

void SlidingWindowState::snapshot(int64_t, int64_t k) {
  if (k > slack())
    throw Error("", "KV cache", "a verify step's drafts on a sliding-window layer: at most the positions it keeps beyond its window",
                "<= " + std::to_string(slack()), std::to_string(k));
}

void SlidingWindowState::copy_prefix(const LayerState& from, int64_t n, int64_t from_held) {
  const auto* f = dynamic_cast<const SlidingWindowState*>(&from);
  if (!f || f->ring() != ring() || f->window_ != window_)
    throw Error("", "KV cache", "copy a layer's state from a sliding-window layer of the same ring and window", shape(), from.shape());
  if (n < 0 || n > from_held || f->keepable(n, from_held) != n)
    throw Error("", "KV cache", "copy a prefix a sliding-window layer can go back to", "0 or >= " + std::to_string(from_held - f->slack()),
                std::to_string(n));
  // Every slot: those of positions before n hold them (n is keepable); the rest are written again
  // before any token reads them.
  if (n > 0) cache_->copy_prefix(layer_, *f->cache_, f->layer_, ring());
}

}  // namespace nvfp4
