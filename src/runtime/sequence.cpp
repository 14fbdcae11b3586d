// Sequence: a state per layer (include/nvfp4/sequence_state.h) and the positions it holds. Every
// question about going back (truncate, snapshot, copy_prefix) is asked of each layer's kind.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "nvfp4/error.h"
#include "runtime/kv_state.h"
#include "ops/step_impl.h"

namespace nvfp4 {

namespace {
// Runs f(l, state) over the layers; a layer's refusal comes out naming the sequence's model file
// and the layer.
template <class F>
void each_layer(Sequence::Impl& q, F&& f) {
  for (size_t l = 0; l < q.layers.size(); ++l) {
    try {
      f(l, *q.layers[l]);
    } catch (const Error& e) {
      if (!e.file().empty()) throw;
      throw Error(q.source, e.tensor(), "layer " + std::to_string(l) + ": " + e.rule(), e.expected(), e.found());
    }
  }
}
}  // namespace

namespace {

std::vector<StateSpec> model_state_specs(const Model& model, int64_t n_ctx) {
  const ModelConfig& c = model.config();
  const std::string& src = model.impl().source;
  if (n_ctx < 1) throw Error(src, "", "context size (--ctx)", ">= 1", std::to_string(n_ctx));
  if (c.sliding_window > 0 && n_ctx > c.sliding_window)
    throw Error(src, "", "the model declares a sliding window (attention.sliding_window), which this runtime does not apply: the context may not exceed it",
                "--ctx <= " + std::to_string(c.sliding_window), std::to_string(n_ctx));
  std::vector<StateSpec> specs;
  for (int64_t l = 0; l < c.n_layer; ++l) specs.push_back(layer_state_spec(c, l));
  return specs;
}
}  // namespace

Sequence::Sequence(const Model& model, int64_t n_ctx, KvType kv)
    : Sequence(model_state_specs(model, n_ctx), n_ctx, kv, model.impl().source) {
  // An FP8 cache divides each layer's keys and values by the model's scales for that layer (a
  // KV-shared layer stores nothing: its source's scales hold).
  const Model::Impl& m = model.impl();
  if (kv != KvType::fp8 || m.kv_scales.empty()) return;
  const ModelConfig& c = m.cfg;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const size_t li = static_cast<size_t>(l);
    if (li >= m.kv_group.size() || m.kv_group[li] < 0 || m.kv_layer[li] < 0) continue;
    if (!c.attn_layers.empty() && c.attn_layers[li].kv_from >= 0) continue;
    try {
      impl_->kv_group(m.kv_group[li]).set_scales(m.kv_layer[li], m.kv_scales[2 * li], m.kv_scales[2 * li + 1]);
    } catch (const Error& e) {
      throw Error(impl_->source, "", "layer " + std::to_string(l) + ": " + e.rule(), e.expected(), e.found());
    }
  }
}

Sequence::Sequence(std::span<const StateSpec> layers, int64_t n_ctx, KvType kv, std::string source)
    : impl_(std::make_unique<Impl>()) {
  if (n_ctx < 1) throw Error(source, "", "context size (--ctx)", ">= 1", std::to_string(n_ctx));
  impl_->n_ctx = n_ctx;
  impl_->source = std::move(source);
  // The full-attention layers' keys and values: one cache per KV group (kv_group_map), as they
  // always were for a family of one shape (layer l of the model is layer l of the cache while
  // every layer is full attention).
  std::vector<int> group;
  std::vector<int64_t> index;
  const std::vector<KvGroup> groups = kv_group_map(layers, group, index);
  if (groups.size() > 1) impl_->kv_more.resize(groups.size() - 1);
  for (size_t g = 0; g < groups.size(); ++g) {
    const StateSpec& gs = groups[g].spec;
    if (gs.kind == StateKind::sliding_window && gs.window < 1)
      throw Error(impl_->source, "", "a sliding-window layer's window", ">= 1", std::to_string(gs.window));
    // A sliding-window group holds a ring of its window and the slack, at most the context.
    const int64_t positions = gs.kind == StateKind::sliding_window ? std::min(n_ctx, gs.window - 1 + kSlidingSlack) : n_ctx;
    impl_->kv_group(static_cast<int>(g)).init(groups[g].layers, gs.n_kv, gs.head_dim, positions, kv);
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    const StateSpec& s = layers[l];
    switch (s.kind) {
      case StateKind::full_attention:
        impl_->layers.push_back(std::make_unique<FullAttentionState>(impl_->kv_group(group[l]), index[l]));
        break;
      case StateKind::sliding_window:
        impl_->layers.push_back(std::make_unique<SlidingWindowState>(impl_->kv_group(group[l]), index[l], s.window, n_ctx));
        break;
      case StateKind::shared_kv:
        if (s.source < 0 || static_cast<size_t>(s.source) >= l || group[l] < 0)
          throw Error(impl_->source, "", "layer " + std::to_string(l) + ": a shared-KV layer's source",
                      "an earlier attention layer", std::to_string(s.source));
        impl_->layers.push_back(std::make_unique<SharedKvState>(s.source));
        break;
      case StateKind::none:
        impl_->layers.push_back(std::make_unique<StatelessState>());
        break;
      case StateKind::recurrent:
        try {
          impl_->layers.push_back(std::make_unique<RecurrentState>(s.floats, s.max_snapshots));
        } catch (const Error& e) {
          throw Error(impl_->source, "", "layer " + std::to_string(l) + ": " + e.rule(), e.expected(), e.found());
        }
        break;
    }
  }
}

Sequence::~Sequence() = default;
Sequence::Sequence(Sequence&&) noexcept = default;
Sequence& Sequence::operator=(Sequence&&) noexcept = default;
int64_t Sequence::pos() const { return impl_->pos; }
int64_t Sequence::n_ctx() const { return impl_->n_ctx; }
int64_t Sequence::n_layer() const { return static_cast<int64_t>(impl_->layers.size()); }
LayerState& Sequence::layer(int64_t l) { return *impl_->layers.at(static_cast<size_t>(l)); }
const LayerState& Sequence::layer(int64_t l) const { return *impl_->layers.at(static_cast<size_t>(l)); }

size_t Sequence::bytes() const {
  size_t b = 0;
  for (const auto& s : impl_->layers) b += s->bytes();
  return b;
}

int64_t Sequence::max_draft() const {
  int64_t k = INT64_MAX;
  for (const auto& s : impl_->layers)
    if (const auto* r = dynamic_cast<const RecurrentState*>(s.get())) k = std::min<int64_t>(k, r->max_snapshots());
    else if (const auto* w = dynamic_cast<const SlidingWindowState*>(s.get())) k = std::min<int64_t>(k, w->slack());
  return k;
}

bool Sequence::can_truncate() const {
  return std::all_of(impl_->layers.begin(), impl_->layers.end(), [](const auto& s) { return s->caps().truncate; });
}

int64_t Sequence::keepable(int64_t n) const {
  const int64_t held = impl_->pos;
  n = std::clamp<int64_t>(n, 0, held);
  // Each layer can only lower n; the layers agree once a pass lowers none.
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& s : impl_->layers) {
      const int64_t k = s->keepable(n, held);
      if (k < n) {
        n = k;
        moved = true;
      }
    }
  }
  return n;
}

void Sequence::truncate(int64_t n) {
  Impl& q = *impl_;
  if (n < 0 || n > q.pos)
    throw Error(q.source, "", "keep a prefix of a sequence", "0 .. " + std::to_string(q.pos) + " positions", std::to_string(n));
  for (size_t l = 0; l < q.layers.size(); ++l) {
    const LayerState& s = *q.layers[l];
    if (s.keepable(n, q.pos) != n)
      throw Error(q.source, "",
                  "keep a prefix of a sequence: layer " + std::to_string(l) + " (" + state_kind_name(s.kind()) + ", " +
                      s.shape() + ") goes back only to 0 positions, all " + std::to_string(q.pos) + ", or a snapshot",
                  "at most " + std::to_string(s.keepable(n, q.pos)) + " positions kept", std::to_string(n));
  }
  each_layer(q, [&](size_t, LayerState& s) { s.go_back(n, q.pos); });
  q.pos = n;
}

void Sequence::snapshot(int64_t k) {
  Impl& q = *impl_;
  if (k < 0) throw Error(q.source, "", "a verify step's drafts", ">= 0", std::to_string(k));
  each_layer(q, [&](size_t, LayerState& s) { s.snapshot(q.pos, k); });
}

void Sequence::copy_prefix(const Sequence& from, int64_t n) {
  Impl& q = *impl_;
  const Impl& f = *from.impl_;
  if (n < 0 || n > f.pos)
    throw Error(q.source, "", "copy a sequence's prefix", "0 .. " + std::to_string(f.pos) + " positions", std::to_string(n));
  if (f.n_ctx != q.n_ctx)
    throw Error(q.source, "", "copy a sequence's prefix: the same context size (--ctx)", std::to_string(q.n_ctx),
                std::to_string(f.n_ctx));
  if (f.layers.size() != q.layers.size())
    throw Error(q.source, "", "copy a sequence's prefix: the same layers", std::to_string(q.layers.size()) + " layers",
                std::to_string(f.layers.size()) + " in " + (f.source.empty() ? "the other" : f.source));
  if (from.keepable(n) != n)
    throw Error(q.source, "", "copy a sequence's prefix that every layer of it can go back to (a recurrent layer: 0 positions, all, or a snapshot)",
                "at most " + std::to_string(from.keepable(n)) + " positions", std::to_string(n));
  for (size_t l = 0; l < q.layers.size(); ++l) {
    const LayerState &a = *q.layers[l], &b = *f.layers[l];
    if (a.kind() != b.kind() || a.shape() != b.shape())
      throw Error(q.source, "", "copy a sequence's prefix: layer " + std::to_string(l) + " of the same kind and shape",
                  std::string(state_kind_name(a.kind())) + ", " + a.shape(), std::string(state_kind_name(b.kind())) + ", " + b.shape());
  }
  if (&from != this) each_layer(q, [&](size_t l, LayerState& s) { s.copy_prefix(*f.layers[l], n, f.pos); });
  else each_layer(q, [&](size_t, LayerState& s) { s.go_back(n, q.pos); });
  q.pos = n;
}

}  // namespace nvfp4
