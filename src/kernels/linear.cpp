// Linear: the prepared layer. prepare() packs the weights once into the kernels' stream
// (kernels/packed.h), the same for every ISA; forward() prepares the activations of the mode
// once for the window and runs the active ISA's kernel over a fixed partition of row tiles.
#include "nvfp4/linear.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/packed.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/validate.h"

namespace nvfp4 {

namespace {
// The a16q8 activations of a window, split by column across the pool when the window is wide
// enough to pay for the hand-off (each column's quantization is independent: same bits).
void prepare_q8_pooled(const kern::KernelTable& k, const float* x, int64_t n, int64_t n_in, kern::ActQ8& a,
                       ThreadPool& pool) {
  a.shape(n, n_in);
  if (n < 16) {
    k.prep_q8(x, 0, n, a);
    return;
  }
  pool.run(n, [&](int64_t b, int64_t e) { k.prep_q8(x, b, e, a); });
}
}  // namespace

struct LinearScratch::Impl {
  kern::ActQ8 q8;
  std::vector<kern::ActQ8> many;  // forward_many / forward_routed: one per layer
  std::vector<std::vector<float>> routed_x;  // forward_routed outside a16q8: gathered columns
};
LinearScratch::LinearScratch() : impl_(std::make_unique<Impl>()) {}
LinearScratch::~LinearScratch() = default;
LinearScratch::LinearScratch(LinearScratch&&) noexcept = default;
LinearScratch& LinearScratch::operator=(LinearScratch&&) noexcept = default;

struct Linear::Impl {
  kern::Packed w;
  float input_scale = 0.0f;
  std::string name;
};

namespace {
// The Impl of a layer packed from `w` (a row view or the file's ggml blocks, checked by the caller).
template <class View>
std::unique_ptr<Linear::Impl> packed_impl(const View& w, float input_scale, const std::string& name, std::shared_ptr<HugeArena> arena,
                                          ThreadPool* pool) {
  auto impl = std::make_unique<Linear::Impl>();
  impl->w = kern::pack_weights(w, HugePageAllocator<uint8_t>(std::move(arena)), pool);
  impl->input_scale = input_scale;
  impl->name = name;
  return impl;
}
}  // namespace

Linear::Linear() = default;
Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

Linear Linear::prepare(const RowView& w, float input_scale, const std::string& name, std::shared_ptr<HugeArena> arena,
                       ThreadPool* pool) {
  check_n_in(w.n_in, false, "", name);
  check_scale_bytes(w.scales, w.n_out * w.scale_row_bytes(), "", name);
  Linear l;
  l.impl_ = packed_impl(w, input_scale, name, std::move(arena), pool);
  return l;
}

Linear Linear::prepare(const GgmlView& w, float input_scale, const std::string& name, std::shared_ptr<HugeArena> arena,
                       ThreadPool* pool) {
  check_n_in(w.n_in, true, "", name);
  check_ggml_scale_bytes(w.blocks, w.n_out * (w.n_in / kGgmlBlock), "", name);
  Linear l;
  l.impl_ = packed_impl(w, input_scale, name, std::move(arena), pool);
  return l;
}

int64_t Linear::n_out() const { return impl_->w.n_out; }
int64_t Linear::n_in() const { return impl_->w.n_in; }
int64_t Linear::weight_bytes() const {  // the record stream and the block summary the kernels read
  const kern::Packed& w = impl_->w;
  return static_cast<int64_t>(w.stream_bytes()) + static_cast<int64_t>(w.emin.size() + w.narrow.size());
}

std::span<const uint8_t> Linear::stream() const {
  const kern::Packed& w = impl_->w;
  check_resident(*this);
  return {w.data(), static_cast<size_t>(w.stream_bytes())};
}

void Linear::release_stream() {
  impl_->w.bytes = HugeVector<uint8_t>(HugePageAllocator<uint8_t>());  // (an arena's block goes with its arena)
  impl_->w.ext = nullptr;
}

void Linear::attach_stream(const uint8_t* p) { impl_->w.ext = p; }

void Linear::check_resident(const Linear& l) {
  if (!l.impl_->w.resident())
    throw Error("", l.impl_->name, "a linear layer's weight stream resident when it runs (an expert store attaches it)",
                "attached", "released");
}

Linear Linear::clone_with(const HugePageAllocator<uint8_t>& alloc) const {
  check_resident(*this);
  Linear l;
  l.impl_ = std::make_unique<Impl>(*impl_);
  const uint8_t* b = impl_->w.data();
  l.impl_->w.bytes = HugeVector<uint8_t>(b, b + impl_->w.stream_bytes(), alloc);
  l.impl_->w.ext = nullptr;
  return l;
}

Linear Linear::clone(bool huge_pages) const { return clone_with(HugePageAllocator<uint8_t>(huge_pages)); }

Linear Linear::clone(std::shared_ptr<HugeArena> arena) const {
  return clone_with(HugePageAllocator<uint8_t>(std::move(arena)));
}

bool Linear::has_input_scale() const { return impl_->input_scale > 0.0f; }

std::string Linear::kernel_name(Mode mode, int64_t n) const {
  const kern::KernelTable& k = kern::table(active_isa());
  switch (mode) {
    case Mode::a16q8: return n >= kern::kPrefillN ? k.a16q8_gemm_name : k.a16q8_name;
    case Mode::w4a4: return k.w4a4_name;
    case Mode::a16: return k.a16_name;
    case Mode::f32: return k.f32_name;
    case Mode::f64: return k.f64_name;
  }
  return "?";
}

void Linear::forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool, LinearScratch* scratch) const {
  const kern::Packed& w = impl_->w;
  if (mode == Mode::w4a4 && !has_input_scale()) {
    throw Error("", impl_->name, "mode w4a4 needs the checkpoint's activation scale (input_scale)",
                "an input scale", "none");
  }
  if (n <= 0) return;
  check_resident(*this);
  const kern::KernelTable& k = kern::table(active_isa());
  switch (mode) {
    case Mode::a16q8: {
      // The caller's buffers, reused across calls (a prefill window's activations are
      // megabytes; a fresh allocation would be zero-filled and page-faulted each time).
      std::optional<LinearScratch> local;
      kern::ActQ8& a = (scratch ? *scratch : local.emplace()).impl().q8;
      prepare_q8_pooled(k, x, n, w.n_in, a, pool);
      const kern::Q8Fn fn = n >= kern::kPrefillN ? k.a16q8_gemm : k.a16q8;
      pool.run(w.tiles, [&](int64_t b, int64_t e) { fn(w, a, b, e, y); }, 1, ThreadPool::per_thread_for(n));
      break;
    }
    case Mode::w4a4: {
      kern::ActFp4 a;
      kern::prepare_fp4(x, n, w.n_in, impl_->input_scale, a);
      pool.run(w.tiles, [&](int64_t b, int64_t e) { k.w4a4(w, a, b, e, y); }, 1, ThreadPool::per_thread_for(n));
      break;
    }
    case Mode::a16:
      pool.run(w.tiles, [&](int64_t b, int64_t e) { k.a16(w, x, n, b, e, y); }, 1, ThreadPool::per_thread_for(n));
      break;
    case Mode::f32:
      pool.run(w.tiles, [&](int64_t b, int64_t e) { k.f32(w, x, n, b, e, y); }, 1, ThreadPool::per_thread_for(n));
      break;
    case Mode::f64:
      pool.run(w.tiles, [&](int64_t b, int64_t e) { k.f64(w, x, n, b, e, y); }, 1, ThreadPool::per_thread_for(n));
      break;
  }
}

void Linear::forward_group(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                           std::span<float* const> y, ThreadPool& pool, LinearScratch* scratch) {
  if (layers.size() != y.size()) throw Error("", "Linear::forward_group y", "forward_group: one output per layer", std::to_string(layers.size()), std::to_string(y.size()));
  if (n <= 0 || layers.empty()) return;
  const int64_t n_in = layers[0]->n_in();
  for (const Linear* l : layers) {
    if (l->n_in() != n_in) throw Error("", l->impl_->name, "forward_group: layers must read the same input width", std::to_string(n_in), std::to_string(l->n_in()));
    check_resident(*l);
  }
  if (layers.size() == 1) return layers[0]->forward(mode, x, n, y[0], pool, scratch);
  // w4a4: each layer's activations with its own input scale (as its forward() would prepare
  // them, on the calling thread), then the same one dispatch.
  std::vector<kern::ActFp4> fp4;
  if (mode == Mode::w4a4) {
    fp4.resize(layers.size());
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!layers[i]->has_input_scale())
        throw Error("", layers[i]->impl_->name, "mode w4a4 needs the checkpoint's activation scale (input_scale)", "an input scale", "none");
      kern::prepare_fp4(x, n, n_in, layers[i]->impl_->input_scale, fp4[i]);
    }
  }
  // Tile t of the union belongs to the layer whose [first[i], first[i + 1]) holds it.
  std::vector<int64_t> first(layers.size() + 1, 0);
  for (size_t i = 0; i < layers.size(); ++i) first[i + 1] = first[i] + layers[i]->impl_->w.tiles;
  const kern::KernelTable& k = kern::table(active_isa());
  std::optional<LinearScratch> local;  // as in forward()
  kern::ActQ8& a = (scratch ? *scratch : local.emplace()).impl().q8;
  if (mode == Mode::a16q8) prepare_q8_pooled(k, x, n, n_in, a, pool);
  const auto run_tiles = [&](size_t i, int64_t tb, int64_t te) {
    const kern::Packed& w = layers[i]->impl_->w;
    switch (mode) {
      case Mode::a16q8: (n >= kern::kPrefillN ? k.a16q8_gemm : k.a16q8)(w, a, tb, te, y[i]); break;
      case Mode::a16: k.a16(w, x, n, tb, te, y[i]); break;
      case Mode::f32: k.f32(w, x, n, tb, te, y[i]); break;
      case Mode::f64: k.f64(w, x, n, tb, te, y[i]); break;
      case Mode::w4a4: k.w4a4(w, fp4[i], tb, te, y[i]); break;
    }
  };
  pool.run(first.back(), [&](int64_t b, int64_t e) {
    for (size_t i = 0; i < layers.size(); ++i) {
      const int64_t lo = std::max(b, first[i]), hi = std::min(e, first[i + 1]);
      if (lo < hi) run_tiles(i, lo - first[i], hi - first[i]);
    }
  }, 1, ThreadPool::per_thread_for(n));
}

void Linear::forward_rows(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                          std::span<float* const> y, ThreadPool& pool, LinearScratch* scratch,
                          const std::function<void(int64_t, int64_t)>& rows) {
  if (layers.size() != y.size()) throw Error("", "Linear::forward_rows y", "forward_rows: one output per layer", std::to_string(layers.size()), std::to_string(y.size()));
  if (n <= 0 || layers.empty()) return;
  const int64_t n_in = layers[0]->n_in(), n_out = layers[0]->n_out(), tiles = layers[0]->impl_->w.tiles;
  for (const Linear* l : layers) {
    if (l->n_in() != n_in) throw Error("", l->impl_->name, "forward_rows: layers must read the same input width", std::to_string(n_in), std::to_string(l->n_in()));
    if (l->n_out() != n_out) throw Error("", l->impl_->name, "forward_rows: layers must have the same output width", std::to_string(n_out), std::to_string(l->n_out()));
    if (mode == Mode::w4a4 && !l->has_input_scale())
      throw Error("", l->impl_->name, "mode w4a4 needs the checkpoint's activation scale (input_scale)", "an input scale", "none");
    check_resident(*l);
  }
  const kern::KernelTable& k = kern::table(active_isa());
  std::optional<LinearScratch> local;  // as in forward()
  kern::ActQ8& a = (scratch ? *scratch : local.emplace()).impl().q8;
  std::vector<kern::ActFp4> fp4;
  if (mode == Mode::a16q8) prepare_q8_pooled(k, x, n, n_in, a, pool);
  if (mode == Mode::w4a4) {  // as forward(): each layer's own input scale, on the calling thread
    fp4.resize(layers.size());
    for (size_t i = 0; i < layers.size(); ++i) kern::prepare_fp4(x, n, n_in, layers[i]->impl_->input_scale, fp4[i]);
  }
  pool.run(tiles, [&](int64_t tb, int64_t te) {
    for (size_t i = 0; i < layers.size(); ++i) {
      const kern::Packed& w = layers[i]->impl_->w;
      switch (mode) {
        case Mode::a16q8: (n >= kern::kPrefillN ? k.a16q8_gemm : k.a16q8)(w, a, tb, te, y[i]); break;
        case Mode::w4a4: k.w4a4(w, fp4[i], tb, te, y[i]); break;
        case Mode::a16: k.a16(w, x, n, tb, te, y[i]); break;
        case Mode::f32: k.f32(w, x, n, tb, te, y[i]); break;
        case Mode::f64: k.f64(w, x, n, tb, te, y[i]); break;
      }
    }
    rows(tb * kern::kTileRows, std::min(n_out, te * kern::kTileRows));
  }, 1, ThreadPool::per_thread_for(n));
}

namespace {
// One dispatch over the union of the row tiles of the layers w with ns[i] > 0: layer i runs its kernel
// for mode over its prepared activations (q8[i] or fp4[i]) or its float columns xs[i].
//
// The layers may differ in width (Nemotron-H's shared expert reads twice an expert's inputs), so
// the pool shares out their bytes, not their tiles: layer i's tile t is the span of records
// [first[i] + t g_i, first[i] + (t + 1) g_i) (g_i records a tile), and a chunk [b, e) runs the
// tiles whose first record lies in it. Each tile runs once, and where is still a formula of the
// shapes and the thread count alone. (Shared out by tiles, the thread whose half held the shared
// down read 4.5 experts' bytes to the other's 3.5, and waited for by 165 us a layer: BENCHMARKS 61.)
void dispatch_many(Mode mode, const kern::ActQ8* const* q8,
                   const kern::ActFp4* fp4, std::span<const float* const> xs, std::span<const int64_t> ns,
                   std::span<float* const> ys, std::span<const kern::Packed* const> w, ThreadPool& pool) {
  const size_t m = w.size();
  const kern::KernelTable& k = kern::table(active_isa());
  std::vector<int64_t> first(m + 1, 0), per(m);
  for (size_t i = 0; i < m; ++i) {
    per[i] = std::max<int64_t>(1, w[i]->groups);
    first[i + 1] = first[i] + (ns[i] > 0 ? w[i]->tiles * per[i] : 0);
  }
  const auto run_tiles = [&](size_t i, int64_t tb, int64_t te) {
    const kern::Packed& wi = *w[i];
    const int64_t n = ns[i];
    switch (mode) {
      case Mode::a16q8: (n >= kern::kPrefillN ? k.a16q8_gemm : k.a16q8)(wi, *q8[i], tb, te, ys[i]); break;
      case Mode::w4a4: k.w4a4(wi, fp4[i], tb, te, ys[i]); break;
      case Mode::a16: k.a16(wi, xs[i], n, tb, te, ys[i]); break;
      case Mode::f32: k.f32(wi, xs[i], n, tb, te, ys[i]); break;
      case Mode::f64: k.f64(wi, xs[i], n, tb, te, ys[i]); break;
    }
  };
  // The first tile of layer i whose first record is at or past u.
  const auto tile_at = [&](size_t i, int64_t u) {
    return std::clamp<int64_t>((u - first[i] + per[i] - 1) / per[i], 0, w[i]->tiles);
  };
  pool.run(first.back(), [&](int64_t b, int64_t e) {
    // The layers whose records [first[i], first[i + 1]) meet [b, e): found by binary search.
    size_t i = static_cast<size_t>(std::upper_bound(first.begin(), first.end(), b) - first.begin()) - 1;
    for (; i < m && first[i] < e; ++i) {
      if (first[i + 1] == first[i]) continue;
      const int64_t lo = tile_at(i, std::max(b, first[i])), hi = tile_at(i, std::min(e, first[i + 1]));
      if (lo < hi) run_tiles(i, lo, hi);
    }
  }, 1, ThreadPool::per_thread_for(*std::max_element(ns.begin(), ns.end())));
}
}  // namespace

void Linear::forward_many(Mode mode, std::span<const Linear* const> layers, std::span<const float* const> xs,
                          std::span<const int64_t> ns, std::span<float* const> ys, ThreadPool& pool, LinearScratch* scratch) {
  const size_t m = layers.size();
  if (xs.size() != m || ns.size() != m || ys.size() != m)
    throw Error("", "Linear::forward_many", "forward_many: one input, count and output per layer", std::to_string(m),
                std::to_string(xs.size()) + "/" + std::to_string(ns.size()) + "/" + std::to_string(ys.size()));
  if (m == 0) return;
  for (size_t i = 0; i < m; ++i) {
    const Linear* l = layers[i];
    if (mode == Mode::w4a4 && !l->has_input_scale())
      throw Error("", l->impl_->name, "mode w4a4 needs the checkpoint's activation scale (input_scale)", "an input scale", "none");
    if (ns[i] > 0) check_resident(*l);
  }
  const kern::KernelTable& k = kern::table(active_isa());
  // Prepared activations, one per layer; each prepared by one thread (columns are independent).
  std::optional<LinearScratch> local;
  std::vector<kern::ActQ8>& q8 = (scratch ? *scratch : local.emplace()).impl().many;
  std::vector<kern::ActFp4> fp4;
  int64_t cols = 0;
  for (size_t i = 0; i < m; ++i) cols += ns[i];
  const auto prep = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const size_t u = static_cast<size_t>(i);
      if (ns[u] <= 0) continue;
      if (mode == Mode::a16q8) {
        q8[u].shape(ns[u], layers[u]->n_in());
        k.prep_q8(xs[u], 0, ns[u], q8[u]);
      } else {
        kern::prepare_fp4(xs[u], ns[u], layers[u]->n_in(), layers[u]->impl_->input_scale, fp4[u]);
      }
    }
  };
  if (mode == Mode::a16q8 || mode == Mode::w4a4) {
    if (mode == Mode::a16q8 && q8.size() < m) q8.resize(m);
    if (mode == Mode::w4a4) fp4.resize(m);
    if (cols < 16) prep(0, static_cast<int64_t>(m));
    else pool.run(static_cast<int64_t>(m), prep);
  }
  std::vector<const kern::ActQ8*> qp(m);
  std::vector<const kern::Packed*> w(m);
  for (size_t i = 0; i < m; ++i) {
    qp[i] = i < q8.size() ? &q8[i] : nullptr;
    w[i] = &layers[i]->impl_->w;
  }
  dispatch_many(mode, qp.data(), fp4.data(), xs, ns, ys, w, pool);
}

void Linear::forward_routed(Mode mode, std::span<const Linear* const> layers, const float* x, int64_t n,
                            std::span<const int64_t* const> rows, std::span<const int64_t> ns,
                            std::span<float* const> ys, ThreadPool& pool, LinearScratch* scratch) {
  const size_t m = layers.size();
  if (rows.size() != m || ns.size() != m || ys.size() != m)
    throw Error("", "Linear::forward_routed", "forward_routed: one row list, count and output per layer", std::to_string(m),
                std::to_string(rows.size()) + "/" + std::to_string(ns.size()) + "/" + std::to_string(ys.size()));
  if (m == 0 || n <= 0) return;
  const int64_t n_in = layers[0]->n_in();
  for (size_t i = 0; i < m; ++i) {
    if (layers[i]->n_in() != n_in)
      throw Error("", layers[i]->impl_->name, "forward_routed: layers must read the same input width", std::to_string(n_in), std::to_string(layers[i]->n_in()));
    if (ns[i] > 0) check_resident(*layers[i]);
    for (int64_t j = 0; j < ns[i]; ++j)
      if (rows[i][j] < 0 || rows[i][j] >= n)
        throw Error("", layers[i]->impl_->name, "forward_routed: row index within the input", "[0, " + std::to_string(n) + ")", std::to_string(rows[i][j]));
  }
  std::optional<LinearScratch> local;
  LinearScratch::Impl& sc = (scratch ? *scratch : local.emplace()).impl();
  // Layer i's gathered block: its own, or the one before it when both read the same rows (gate
  // and up of one expert).
  std::vector<size_t> src(m);
  for (size_t i = 0; i < m; ++i) src[i] = (i > 0 && rows[i] == rows[i - 1] && ns[i] == ns[i - 1]) ? src[i - 1] : i;
  if (mode != Mode::a16q8) {
    // The float columns of each layer, gathered; then forward_many prepares them per layer (w4a4:
    // each layer's own input scale).
    sc.routed_x.resize(m);
    std::vector<const float*> xs(m);
    for (size_t i = 0; i < m; ++i) {
      if (src[i] == i && ns[i] > 0) {
        std::vector<float>& g = sc.routed_x[i];
        g.resize(static_cast<size_t>(ns[i] * n_in));
        for (int64_t j = 0; j < ns[i]; ++j) std::copy_n(x + rows[i][j] * n_in, n_in, g.data() + j * n_in);
      }
      xs[i] = sc.routed_x[src[i]].data();
    }
    forward_many(mode, layers, xs, ns, ys, pool, scratch ? scratch : &*local);
    return;
  }
  // a16q8: the input quantized once, then each block gathered from it by column.
  const kern::KernelTable& k = kern::table(active_isa());
  prepare_q8_pooled(k, x, n, n_in, sc.q8, pool);
  if (sc.many.size() < m) sc.many.resize(m);
  int64_t cols = 0;
  for (size_t i = 0; i < m; ++i) cols += ns[i];
  const auto gather = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const size_t u = static_cast<size_t>(i);
      if (src[u] != u || ns[u] <= 0) continue;
      sc.many[u].shape(ns[u], n_in);
      kern::gather_q8_cols(sc.q8, rows[u], 0, ns[u], sc.many[u]);
    }
  };
  if (cols < 16) gather(0, static_cast<int64_t>(m));
  else pool.run(static_cast<int64_t>(m), gather);
  std::vector<const kern::ActQ8*> qp(m);
  std::vector<const kern::Packed*> w(m);
  std::vector<const float*> xs(m, nullptr);
  for (size_t i = 0; i < m; ++i) {
    qp[i] = &sc.many[src[i]];
    w[i] = &layers[i]->impl_->w;
  }
  dispatch_many(mode, qp.data(), nullptr, xs, ns, ys, w, pool);
}

}  // namespace nvfp4
