#include "ops/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "kernels/attention_item.h"
#include "kernels/pinned_math.h"
#include "kernels/packed.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

static_assert(kTile == kKeyTile);
static constexpr int64_t kMaxKvRow = 1024;  // KvCache::store's F16 keys, converted this many at a time

void KvCache::init(int64_t n_layer, int64_t n_kv, int64_t head_dim, int64_t n_ctx, KvType type) {
  n_layer_ = n_layer;
  n_kv_ = n_kv;
  hd_ = head_dim;
  n_ctx_ = n_ctx;
  k_ctx_ = key_tiles(n_ctx) * kKeyTile;
  type_ = type;
  const size_t total = static_cast<size_t>(n_layer * layer_size());
  f_.clear();
  h_.clear();
  b_.clear();
  if (type == KvType::f32) f_.assign(total, 0.0f);
  else if (type == KvType::f16) h_.assign(total, 0);
  else b_.assign(total, 0);
  scales_.assign(static_cast<size_t>(2 * n_layer), 1.0f);
}

void KvCache::set_scales(int64_t l, float k_scale, float v_scale) {
  if (l < 0 || l >= n_layer_) throw Error("", "KV cache", "set an FP8 cache layer's scales", "layer 0 .. " + std::to_string(n_layer_ - 1), std::to_string(l));
  for (const float s : {k_scale, v_scale})
    if (!(std::isfinite(s) && s > 0.0f))
      throw Error("", "KV cache layer " + std::to_string(l), "an FP8 cache's k/v scale", "finite and > 0",
                  std::to_string(k_scale) + " / " + std::to_string(v_scale));
  scales_[static_cast<size_t>(2 * l)] = k_scale;
  scales_[static_cast<size_t>(2 * l + 1)] = v_scale;
}

uint8_t kv_fp8_byte(float x, float scale) {
  const float y = x / scale;
  if (std::isnan(y)) return float_to_e4m3(y);
  return float_to_e4m3(std::clamp(y, -448.0f, 448.0f));
}

void KvCache::store(int64_t l, int64_t pos, const float* k, const float* v) {
  const int64_t base = l * layer_size(), vbase = base + n_kv_ * hd_ * k_ctx_;
  const int64_t tile = base + (pos / kKeyTile) * hd_ * kKeyTile + pos % kKeyTile;
  const float ks = k_scale(l), vs = v_scale(l);
  if (type_ == KvType::f16) {
    // The rows converted with the ISA's F16 conversion (the same bits as float_to_half), then
    // the keys placed in their tile (one value per tile row), the values as one row per head.
    const kern::ToHalfFn to_half = kern::table(active_isa()).to_half;
    const int64_t m = n_kv_ * hd_;
    uint16_t kh[kMaxKvRow];
    for (int64_t i0 = 0; i0 < m; i0 += kMaxKvRow) {
      const int64_t c = std::min<int64_t>(kMaxKvRow, m - i0);
      to_half(k + i0, kh, c);
      for (int64_t i = i0; i < i0 + c; ++i)
        h_[static_cast<size_t>(tile + (i / hd_) * hd_ * k_ctx_ + (i % hd_) * kKeyTile)] = kh[i - i0];
    }
    for (int64_t h = 0; h < n_kv_; ++h) to_half(v + h * hd_, h_.data() + vbase + (h * n_ctx_ + pos) * hd_, hd_);
    return;
  }
  for (int64_t h = 0; h < n_kv_; ++h)
    for (int64_t d = 0; d < hd_; ++d) {
      const size_t ki = static_cast<size_t>(tile + h * hd_ * k_ctx_ + d * kKeyTile);
      const size_t vi = static_cast<size_t>(vbase + (h * n_ctx_ + pos) * hd_ + d);
      const float kv = k[h * hd_ + d], vv = v[h * hd_ + d];
      if (type_ == KvType::f32) { f_[ki] = kv; f_[vi] = vv; }
      else if (type_ == KvType::f16) { h_[ki] = float_to_half(kv); h_[vi] = float_to_half(vv); }
      else { b_[ki] = kv_fp8_byte(kv, ks); b_[vi] = kv_fp8_byte(vv, vs); }
    }
}

std::string KvCache::layer_shape() const {
  return std::to_string(n_kv_) + " KV heads of " + std::to_string(hd_) + ", " + std::to_string(n_ctx_) + " positions, " +
         (type_ == KvType::f32 ? "F32" : type_ == KvType::f16 ? "F16" : "FP8 E4M3");
}

void KvCache::copy_prefix(int64_t l, const KvCache& src, int64_t src_l, int64_t n) {
  if (src.n_kv_ != n_kv_ || src.hd_ != hd_ || src.n_ctx_ != n_ctx_ || src.type_ != type_)
    throw Error("", "KV cache", "copy a KV cache layer's prefix from a layer of the same shape", layer_shape(), src.layer_shape());
  if (l < 0 || l >= n_layer_ || src_l < 0 || src_l >= src.n_layer_)
    throw Error("", "KV cache", "copy a KV cache layer's prefix: layers of the caches",
                "0 .. " + std::to_string(n_layer_ - 1) + " and 0 .. " + std::to_string(src.n_layer_ - 1),
                std::to_string(l) + " and " + std::to_string(src_l));
  if (src.k_scale(src_l) != k_scale(l) || src.v_scale(src_l) != v_scale(l))
    throw Error("", "KV cache", "copy an FP8 KV cache layer's prefix from a layer of the same k/v scales",
                std::to_string(k_scale(l)) + " / " + std::to_string(v_scale(l)),
                std::to_string(src.k_scale(src_l)) + " / " + std::to_string(src.v_scale(src_l)));
  if (n < 0 || n > n_ctx_) throw Error("", "KV cache", "copy a KV cache's prefix", "0 .. " + std::to_string(n_ctx_), std::to_string(n));
  const auto copy = [&](int64_t dst_off, int64_t src_off, int64_t count) {
    if (type_ == KvType::f32) std::copy_n(src.f_.data() + src_off, count, f_.data() + dst_off);
    else if (type_ == KvType::f16) std::copy_n(src.h_.data() + src_off, count, h_.data() + dst_off);
    else std::copy_n(src.b_.data() + src_off, count, b_.data() + dst_off);
  };
  for (int64_t h = 0; h < n_kv_; ++h) {
    const int64_t k_off = h * hd_ * k_ctx_, v_off = n_kv_ * hd_ * k_ctx_ + h * n_ctx_ * hd_;
    copy(l * layer_size() + k_off, src_l * layer_size() + k_off, key_tiles(n) * kKeyTile * hd_);  // whole key tiles
    copy(l * layer_size() + v_off, src_l * layer_size() + v_off, n * hd_);                         // value rows
  }
}

const void* KvCache::keys(int64_t l, int64_t h) const {
  const int64_t off = l * layer_size() + h * hd_ * k_ctx_;
  if (type_ == KvType::f32) return f_.data() + off;
  if (type_ == KvType::f16) return h_.data() + off;
  return b_.data() + off;
}

const void* KvCache::values(int64_t l, int64_t h) const {
  const int64_t off = l * layer_size() + n_kv_ * hd_ * k_ctx_ + h * n_ctx_ * hd_;
  if (type_ == KvType::f32) return f_.data() + off;
  if (type_ == KvType::f16) return h_.data() + off;
  return b_.data() + off;
}

void AttnStep::set(std::span<const AttnToken> tokens) {
  tok.assign(tokens.begin(), tokens.end());
  max_len = 0;
  for (const AttnToken& t : tok) max_len = std::max(max_len, t.pos + 1);
}


namespace {

// The item's element and, for an FP8 cache, 256 times layer l's scales (attention_item.h).
void set_elem(AttnItem& a, const KvCache& kv, int64_t l) {
  a.elem = kv.type() == KvType::f16 ? kElemF16 : kv.type() == KvType::fp8 ? kElemE4m3 : kElemF32;
  a.k_mul = kv.k_scale(l) * 256.0f;
  a.v_mul = kv.v_scale(l) * 256.0f;
}

// One step's view of the caches and buffers: builds the item of (token t, KV head, part).
struct Call {
  const AttnView& v;
  const AttnStep& st;
  int64_t layer, hd, group, gs, qd, max_len;
  const float* q;
  float* out;
  float* scores;  // [n][n_head][max_len]
  float scale;

  AttnItem item(int64_t t, int64_t kvh, int64_t part) const {
    const AttnToken& tk = st.tok[static_cast<size_t>(t)];
    const KvCache* kv = tk.cache(v.group);
    AttnItem a;
    a.K = kv->keys(layer, kvh);  // read as stored, F32, F16 or E4M3
    a.V = kv->values(layer, kvh);
    set_elem(a, *kv, layer);
    a.g = static_cast<int>(std::min(gs, group - part * gs));
    for (int k = 0; k < a.g; ++k) {
      const int64_t h = kvh * group + part * gs + k;
      a.q[k] = q + t * qd + h * hd;
      a.s[k] = scores + (t * v.n_head + h) * max_len;
      a.o[k] = out + t * qd + h * hd;
    }
    a.len = tk.pos + 1;
    a.hd = hd;
    a.scale = scale;
    return a;
  }
};

// The window's keys and values of one (token, KV head), gathered in position order: keys tiled as
// the cache tiles them (the last tile's unused keys zero), values as rows. E: float, uint16_t or
// uint8_t, the cache's element.
template <class E>
void gather_window(const KvCache& kv, int64_t layer, int64_t kvh, int64_t first, int64_t len, int64_t hd, E* K, E* V) {
  const E* ks = static_cast<const E*>(kv.keys(layer, kvh));
  const E* vs = static_cast<const E*>(kv.values(layer, kvh));
  const int64_t ring = kv.n_ctx();
  std::fill_n(K, key_tiles(len) * kKeyTile * hd, E{});
  for (int64_t i = 0; i < len; ++i) {
    const int64_t j = (first + i) % ring;  // the position's slot (a ring of n_ctx positions)
    const E* kj = ks + (j / kKeyTile) * hd * kKeyTile + j % kKeyTile;
    E* ki = K + (i / kKeyTile) * hd * kKeyTile + i % kKeyTile;
    for (int64_t d = 0; d < hd; ++d) ki[d * kKeyTile] = kj[d * kKeyTile];
    std::copy_n(vs + j * hd, hd, V + i * hd);
  }
}

}  // namespace

void attention(const ModelConfig& c, const AttnStep& st, int64_t layer, const float* q, float* out,
               std::vector<float>& scratch, ThreadPool& pool) {
  AttnView v;
  v.layer = layer;
  v.head_dim = c.head_dim;
  v.n_head = c.n_head;
  v.n_kv = c.n_head_kv;
  v.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  attention_layer(v, st, q, out, scratch, pool);
}

namespace {
void attention_window(const AttnView& v, const AttnStep& st, const float* q, float* out, std::vector<float>& scratch,
                      ThreadPool& pool) {
  const int64_t hd = v.head_dim, group = v.n_head / v.n_kv, n = static_cast<int64_t>(st.tok.size());
  const kern::AttnItemFn item_fn = kern::table(active_isa()).attn_item;
  const int64_t gs = std::min<int64_t>(group, kMaxGroup), parts = (group + gs - 1) / gs, per_token = v.n_kv * parts;
  const int64_t W = v.window, qd = v.n_head * hd;
  // Per pool chunk: the scores of one item, its keys (whole tiles) and values, each part starting
  // on a 64-byte boundary of the part before.
  const auto round16 = [](int64_t x) { return (x + 15) / 16 * 16; };
  const int64_t s_size = round16(gs * W), k_size = key_tiles(W) * kKeyTile * hd;
  const int64_t per_chunk = s_size + k_size + round16(W * hd);
  const int n_chunks = pool.chunks(n * per_token, 1);
  if (scratch.size() < static_cast<size_t>(n_chunks * per_chunk)) scratch.resize(static_cast<size_t>(n_chunks * per_chunk));
  pool.run(n_chunks, [&](int64_t cb, int64_t ce) {
    for (int64_t chunk = cb; chunk < ce; ++chunk) {
      float* s = scratch.data() + chunk * per_chunk;
      float* kbuf = s + s_size;
      float* vbuf = kbuf + k_size;
      int64_t b, e;
      partition(n * per_token, n_chunks, static_cast<int>(chunk), 1, b, e);
      for (int64_t slot = b; slot < e; ++slot) {
        const int64_t t = slot / per_token, r = slot % per_token, kvh = r / parts, part = r % parts;
        const AttnToken& tk = st.tok[static_cast<size_t>(t)];
        const KvCache& kv = *tk.cache(v.group);
        const int64_t len = std::min(tk.pos + 1, W), first = tk.pos + 1 - len;
        AttnItem a;
        set_elem(a, kv, v.layer);
        if (a.elem == kElemF16) {  // the F16 values gathered as stored: the kernel widens them as it would the cache's
          auto* K16 = reinterpret_cast<uint16_t*>(kbuf);
          auto* V16 = reinterpret_cast<uint16_t*>(vbuf);
          gather_window(kv, v.layer, kvh, first, len, hd, K16, V16);
          a.K = K16;
          a.V = V16;
        } else if (a.elem == kElemE4m3) {  // the E4M3 bytes likewise
          auto* K8 = reinterpret_cast<uint8_t*>(kbuf);
          auto* V8 = reinterpret_cast<uint8_t*>(vbuf);
          gather_window(kv, v.layer, kvh, first, len, hd, K8, V8);
          a.K = K8;
          a.V = V8;
        } else {
          gather_window(kv, v.layer, kvh, first, len, hd, kbuf, vbuf);
          a.K = kbuf;
          a.V = vbuf;
        }
        a.g = static_cast<int>(std::min(gs, group - part * gs));
        for (int k = 0; k < a.g; ++k) {
          const int64_t h = kvh * group + part * gs + k;
          a.q[k] = q + t * qd + h * hd;
          a.s[k] = s + k * W;
          a.o[k] = out + t * qd + h * hd;
        }
        a.len = len;
        a.hd = hd;
        a.scale = v.scale;
        item_fn(&a);
      }
    }
  }, 1);
}
}  // namespace

void attention_layer(const AttnView& v, const AttnStep& st, const float* q, float* out, std::vector<float>& scratch,
                     ThreadPool& pool) {
  const int64_t hd = v.head_dim, group = v.n_head / v.n_kv, n = static_cast<int64_t>(st.tok.size());
  if (n == 0) return;
  if (v.window > 0 && st.max_len > v.window) {
    attention_window(v, st, q, out, scratch, pool);
    return;
  }
  const int64_t layer = v.layer;
  const kern::KernelTable& kt = kern::table(active_isa());
  const kern::AttnItemFn item_fn = kt.attn_item;
  const kern::AttnPhaseFn phase_fn = kt.attn_phase;
  // Items: one token and up to kMaxGroup query heads of one KV head (their keys and values are
  // loaded once for all of them). Which thread computes an item never changes its bits. Items
  // read the caches as stored (an F16 one widened in registers as it is read).
  const int64_t gs = std::min<int64_t>(group, kMaxGroup);
  const int64_t parts = (group + gs - 1) / gs;  // items per KV head and token
  const int64_t per_token = v.n_kv * parts;
  const int threads = pool.threads();
  const bool few = n * per_token < 4 * threads;
  const int n_chunks = pool.chunks(n * per_token, 1);
  // Scratch: the scores over the step's longest key range: of every (token, head) when decoding
  // (the phases share them), of one item per pool chunk for a prompt window (an item's scores
  // live only while it runs).
  const int64_t max_len = st.max_len;
  const size_t need = static_cast<size_t>(few ? n * v.n_head * max_len : n_chunks * gs * max_len);
  if (scratch.size() < need) scratch.resize(need);
  Call call{v, st, layer, hd, group, gs, v.n_head * hd, max_len, q, out, scratch.data(), v.scale};
  if (few) {
    // Few items (decoding): two dispatches. Each cuts the step's work into one contiguous run
    // per thread, items in order: the scores by whole key tiles (16 keys), the output by
    // 16-dimension chunks, so a thread takes whole items where it can and shares at most the
    // items at its run's two ends (a split of every item's dimensions made both threads read
    // every value row: an F16 row of 64 dimensions is one 128-byte pair of lines). Every key's
    // and every dimension's sum keeps its order. The softmax of an item's heads (each head's
    // one sequential pass over its scores) is done, in the first dispatch, by whichever thread
    // finishes the item's last key range: who does it never changes a bit, and it saves the
    // hand-off a dispatch of its own would cost.
    // Items KV head first, then token: a verify step's tokens of one sequence read the same keys
    // and values, and in this order one thread reads them for all of its tokens, the later ones
    // from its own cache (token first, each thread read them all from DRAM again).
    const int64_t items = n * per_token, dchunks = (hd + 15) / 16;
    const auto make = [&](int64_t it) { return call.item(it % n, (it / n) / parts, (it / n) % parts); };
    std::vector<int64_t> first(static_cast<size_t>(items + 1), 0);  // the item's first key tile of the step
    for (int64_t it = 0; it < items; ++it) {
      const int64_t len = st.tok[static_cast<size_t>(it % n)].pos + 1;
      first[static_cast<size_t>(it + 1)] = first[static_cast<size_t>(it)] + key_tiles(len);
    }
    const int64_t n_tiles = first[static_cast<size_t>(items)];
    const int runs = threads;
    // For each item, how many runs hold some of its keys (the last of them does its softmax).
    std::vector<std::atomic<int>> left(static_cast<size_t>(items));
    for (auto& v : left) v.store(0, std::memory_order_relaxed);
    for (int r = 0; r < runs; ++r) {
      int64_t u0, u1;
      partition(n_tiles, runs, r, 1, u0, u1);
      for (int64_t it = 0; it < items; ++it)
        if (first[static_cast<size_t>(it)] < u1 && u0 < first[static_cast<size_t>(it + 1)])
          left[static_cast<size_t>(it)].fetch_add(1, std::memory_order_relaxed);
    }
    pool.run(runs, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t u0, u1;
        partition(n_tiles, runs, static_cast<int>(r), 1, u0, u1);
        // Every item holds at least one tile, so each pass ends where the next item begins.
        for (int64_t it = std::upper_bound(first.begin(), first.end(), u0) - first.begin() - 1; u0 < u1; ++it) {
          const int64_t f = first[static_cast<size_t>(it)], end = std::min(u1, first[static_cast<size_t>(it + 1)]);
          const AttnItem a = make(it);
          phase_fn(&a, static_cast<int>(AttnPhase::scores), (u0 - f) * kKeyTile, std::min(a.len, (end - f) * kKeyTile));
          u0 = end;
          // acq_rel: the last run sees every other run's scores of this item.
          if (left[static_cast<size_t>(it)].fetch_sub(1, std::memory_order_acq_rel) == 1)
            phase_fn(&a, static_cast<int>(AttnPhase::softmax), 0, 0);
        }
      }
    }, 1);
    pool.run(runs, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t u0, u1;
        partition(items * dchunks, runs, static_cast<int>(r), 1, u0, u1);
        while (u0 < u1) {
          const int64_t it = u0 / dchunks, end = std::min(u1, (it + 1) * dchunks);
          const AttnItem a = make(it);
          phase_fn(&a, static_cast<int>(AttnPhase::output), (u0 - it * dchunks) * 16, std::min(hd, (end - it * dchunks) * 16));
          u0 = end;
        }
      }
    }, 1);
    return;
  }
  // Many items (a prompt window): whole items, KV head first (as above: one head's keys and
  // values stay in a thread's cache across its tokens). Causal cost grows with t, so each head's
  // tokens go to the pool in zigzag order (0, n-1, 1, n-2, ...): each thread's contiguous range
  // then holds about the same number of keys.
  // The pool runs the chunks of run(n * per_token) by index, so each chunk has scores of its own.
  pool.run(n_chunks, [&](int64_t cb, int64_t ce) {
    for (int64_t chunk = cb; chunk < ce; ++chunk) {
      float* s = scratch.data() + chunk * gs * max_len;
      int64_t b, e;
      partition(n * per_token, n_chunks, static_cast<int>(chunk), 1, b, e);
      for (int64_t slot = b; slot < e; ++slot) {
        const int64_t i = slot % n, r = slot / n;
        const int64_t t = (i % 2 == 0) ? i / 2 : n - 1 - i / 2;
        AttnItem a = call.item(t, r / parts, r % parts);
        for (int k = 0; k < a.g; ++k) a.s[k] = s + k * max_len;
        item_fn(&a);
      }
    }
  }, 1);
}

}  // namespace nvfp4
