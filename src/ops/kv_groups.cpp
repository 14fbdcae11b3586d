// The state each layer of a model asks for, and how a sequence's attention layers group into
// caches (ops/model_impl.h): read by Model::load (src/models) and Sequence (src/runtime).
#include "ops/model_impl.h"

namespace nvfp4 {

// The state layer l of a model asks for: a full-attention layer its keys and values (of its own
// shape and window where the family's layers differ), a linear-attention (Gated DeltaNet) layer
// its conv window and head matrices; a KV-shared layer (Gemma 4) nothing: it reads its source's.
StateSpec layer_state_spec(const ModelConfig& c, int64_t l) {
  StateSpec s;
  if (c.mixer(l) == MixerKind::linear_attention || c.mixer(l) == MixerKind::mamba) {
    s.kind = StateKind::recurrent;
    s.floats = c.recurrent_floats(l);
    s.max_snapshots = kSequenceSnapshots;
    return s;
  }
  if (c.mixer(l) == MixerKind::none) {
    s.kind = StateKind::none;
    return s;
  }
  s.kind = StateKind::full_attention;
  s.n_kv = c.n_head_kv;
  s.head_dim = c.head_dim;
  if (!c.attn_layers.empty()) {
    const AttnLayerConfig& a = c.attn_layers[static_cast<size_t>(l)];
    s.n_kv = a.n_kv;
    s.head_dim = a.head_dim;
    s.window = a.window;
    if (a.window > 0) s.kind = StateKind::sliding_window;
    if (a.kv_from >= 0) {
      s.kind = StateKind::shared_kv;
      s.source = a.kv_from;
    }
  }
  return s;
}

std::vector<KvGroup> kv_group_map(std::span<const StateSpec> layers, std::vector<int>& group, std::vector<int64_t>& index) {
  std::vector<KvGroup> groups;
  group.assign(layers.size(), -1);
  index.assign(layers.size(), -1);
  for (size_t l = 0; l < layers.size(); ++l) {
    const StateSpec& s = layers[l];
    if (s.kind == StateKind::shared_kv && s.source >= 0 && static_cast<size_t>(s.source) < l) {
      group[l] = group[static_cast<size_t>(s.source)];  // its source's cache layer: no layer of its own
      index[l] = index[static_cast<size_t>(s.source)];
      continue;
    }
    if (s.kind != StateKind::full_attention && s.kind != StateKind::sliding_window) continue;
    size_t g = 0;
    while (g < groups.size() && !(groups[g].spec.kind == s.kind && groups[g].spec.n_kv == s.n_kv &&
                                  groups[g].spec.head_dim == s.head_dim && groups[g].spec.window == s.window))
      ++g;
    if (g == groups.size()) groups.push_back({s, 0});
    group[l] = static_cast<int>(g);
    index[l] = groups[g].layers++;
  }
  return groups;
}

}  // namespace nvfp4
