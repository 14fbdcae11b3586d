#include "runtime/kv_state.h"

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

}  // namespace nvfp4
