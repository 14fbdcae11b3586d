#include "runtime/attention.h"

#include <algorithm>
#include <cmath>

#include "nvfp4/codec.h"
#include "runtime/attention_item.h"
#include "runtime/pinned_math.h"
#include "runtime/runtime_isa.h"

namespace nvfp4 {

void f16_to_f32_scalar(const uint16_t* h, float* f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) f[i] = half_to_float(h[i]);
}

namespace {
using F16Fn = void (*)(const uint16_t*, float*, int64_t);
F16Fn f16_fn() {
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: return f16_to_f32_avx512;
    case RuntimeIsa::avx2: return f16_to_f32_avx2;
    default: return f16_to_f32_scalar;
  }
}
}  // namespace

void RopeTable::build(int64_t n_ctx, int64_t head_dim, double theta) {
  half = head_dim / 2;
  cos.resize(static_cast<size_t>(n_ctx * half));
  sin.resize(cos.size());
  const double lt = pinned::log(theta);
  for (int64_t i = 0; i < half; ++i) {
    const double freq = pinned::exp(-(2.0 * static_cast<double>(i) / static_cast<double>(head_dim)) * lt);
    for (int64_t p = 0; p < n_ctx; ++p) {
      double s, c;
      pinned::sincos(static_cast<double>(p) * freq, s, c);
      cos[static_cast<size_t>(p * half + i)] = static_cast<float>(c);
      sin[static_cast<size_t>(p * half + i)] = static_cast<float>(s);
    }
  }
}

void RopeTable::apply(float* x, int64_t n_heads, int64_t pos) const {
  const float* c = cos.data() + pos * half;
  const float* s = sin.data() + pos * half;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      const float x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * c[i] - x1 * s[i];
      v[2 * i + 1] = x0 * s[i] + x1 * c[i];
    }
  }
}

void KvCache::init(int64_t n_layer, int64_t n_kv, int64_t head_dim, int64_t n_ctx, KvType type) {
  n_kv_ = n_kv;
  hd_ = head_dim;
  n_ctx_ = n_ctx;
  type_ = type;
  const size_t total = static_cast<size_t>(n_layer * layer_size());
  if (type == KvType::f32) f_.assign(total, 0.0f);
  else h_.assign(total, 0);
}

void KvCache::store(int64_t l, int64_t pos, const float* k, const float* v) {
  const int64_t base = l * layer_size(), vbase = base + n_kv_ * hd_ * n_ctx_;
  for (int64_t h = 0; h < n_kv_; ++h)
    for (int64_t d = 0; d < hd_; ++d) {
      const size_t ki = static_cast<size_t>(base + (h * hd_ + d) * n_ctx_ + pos);
      const size_t vi = static_cast<size_t>(vbase + (h * n_ctx_ + pos) * hd_ + d);
      const float kv = k[h * hd_ + d], vv = v[h * hd_ + d];
      if (type_ == KvType::f32) { f_[ki] = kv; f_[vi] = vv; }
      else { h_[ki] = float_to_half(kv); h_[vi] = float_to_half(vv); }
    }
}

const float* KvCache::keys(int64_t l, int64_t h, int64_t n, float* scratch) const {
  const int64_t off = l * layer_size() + h * hd_ * n_ctx_;
  if (type_ == KvType::f32) return f_.data() + off;
  const F16Fn conv = f16_fn();
  for (int64_t d = 0; d < hd_; ++d) conv(h_.data() + off + d * n_ctx_, scratch + d * n, n);
  return scratch;
}

const float* KvCache::values(int64_t l, int64_t h, int64_t n, float* scratch) const {
  const int64_t off = l * layer_size() + n_kv_ * hd_ * n_ctx_ + h * n_ctx_ * hd_;
  if (type_ == KvType::f32) return f_.data() + off;
  f16_fn()(h_.data() + off, scratch, n * hd_);
  return scratch;
}

int64_t attention_scratch(const ModelConfig& c, int64_t n_batch, int64_t n_ctx, KvType kv) {
  return n_batch * c.n_head * n_ctx + (kv == KvType::f16 ? 2 * c.n_head_kv * c.head_dim * n_ctx : 0);
}

void attention_item_avx2(const void* item);
void attention_item_avx512(const void* item);
void attention_phase_avx2(const void* item, int phase, int64_t b, int64_t e);
void attention_phase_avx512(const void* item, int phase, int64_t b, int64_t e);

void swiglu_scalar(float* g, const float* u, int64_t n) { swiglu(g, u, n); }
void exp_shifted_scalar(const float* s, float mx, float* out, int64_t n) { exp_shifted_scalar_body(s, mx, out, n); }

void swiglu_rows(float* g, const float* u, int64_t n) {
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: swiglu_avx512(g, u, n); break;
    case RuntimeIsa::avx2: swiglu_avx2(g, u, n); break;
    default: swiglu_scalar(g, u, n); break;
  }
}

namespace {

using ItemFn = void (*)(const void*);
using PhaseFn = void (*)(const void*, int, int64_t, int64_t);

void attention_item_scalar(const void* it) {
  attention_item<32, 16>(*static_cast<const AttnItem*>(it), exp_shifted_scalar_body);
}
void attention_phase_scalar(const void* it, int phase, int64_t b, int64_t e) {
  attention_phase<32, 16>(*static_cast<const AttnItem*>(it), static_cast<AttnPhase>(phase), b, e,
                          exp_shifted_scalar_body);
}

// One call's view of the cache and buffers: builds the item of (token t, KV head, part).
struct Call {
  const ModelConfig& c;
  const KvCache& kv;
  int64_t layer, pos0, n, n_ctx, hd, group, gs, parts;
  const float* q;
  float* out;
  float* conv;    // F16 caches: the converted keys/values of every KV head, else null
  float* scores;  // [n][n_head][n_ctx]
  float scale;

  AttnItem item(int64_t t, int64_t kvh, int64_t part) const {
    const int64_t len = pos0 + t + 1;
    AttnItem a;
    if (conv) {
      a.K = conv + (2 * kvh) * hd * n_ctx;
      a.ks = pos0 + n;
      a.V = conv + (2 * kvh + 1) * hd * n_ctx;
    } else {
      a.K = kv.keys(layer, kvh, len, nullptr);
      a.ks = kv.key_stride(len);
      a.V = kv.values(layer, kvh, len, nullptr);
    }
    a.g = static_cast<int>(std::min(gs, group - part * gs));
    for (int k = 0; k < a.g; ++k) {
      const int64_t h = kvh * group + part * gs + k;
      a.q[k] = q + t * c.n_embd + h * hd;
      a.s[k] = scores + (t * c.n_head + h) * n_ctx;
      a.o[k] = out + t * c.n_embd + h * hd;
    }
    a.len = len;
    a.hd = hd;
    a.scale = scale;
    return a;
  }
};

}  // namespace

void attention(const ModelConfig& c, const KvCache& kv, int64_t layer, const float* q, int64_t n,
               int64_t pos0, float* out, float* scratch, int64_t n_ctx, ThreadPool& pool) {
  const int64_t hd = c.head_dim, group = c.n_head / c.n_head_kv;
  const bool f16 = kv.is_f16();
  ItemFn item_fn = attention_item_scalar;
  PhaseFn phase_fn = attention_phase_scalar;
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: item_fn = attention_item_avx512; phase_fn = attention_phase_avx512; break;
    case RuntimeIsa::avx2: item_fn = attention_item_avx2; phase_fn = attention_phase_avx2; break;
    default: break;
  }
  // An F16 cache is converted once per call, each KV head's keys and values for every position
  // this batch reads, into the front of scratch; the items then read floats.
  const int64_t len_all = pos0 + n;
  float* conv = f16 ? scratch : nullptr;
  if (f16) {
    pool.run(2 * c.n_head_kv, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        float* dst = conv + k * hd * n_ctx;
        if (k % 2 == 0) kv.keys(layer, k / 2, len_all, dst);
        else kv.values(layer, k / 2, len_all, dst);
      }
    });
  }
  // Items: one token and up to kMaxGroup query heads of one KV head (their keys and values are
  // loaded once for all of them). Which thread computes an item never changes its bits.
  const int64_t gs = std::min<int64_t>(group, kMaxGroup);
  const int64_t parts = (group + gs - 1) / gs;  // items per KV head and token
  const int64_t per_token = c.n_head_kv * parts;
  const Call call{c, kv, layer, pos0, n, n_ctx, hd, group, gs, parts, q, out, conv,
                  scratch + (f16 ? 2 * c.n_head_kv * hd * n_ctx : 0),
                  static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
  const int threads = pool.threads();
  if (n * per_token < 4 * threads) {
    // Few items (decoding): three phases, each split evenly. Scores by key range (16-aligned),
    // softmax by head, output by dimension range: every key's and every dimension's sum keeps
    // its order, and the threads share the reading of the keys and values.
    const int64_t pieces = threads;
    pool.run(n * per_token * pieces, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t it = u / pieces, piece = u % pieces, t = it / per_token, r = it % per_token;
        const AttnItem a = call.item(t, r / parts, r % parts);
        int64_t j0, j1;
        partition(a.len, static_cast<int>(pieces), static_cast<int>(piece), 16, j0, j1);
        if (j0 < j1) phase_fn(&a, static_cast<int>(AttnPhase::scores), j0, j1);
      }
    }, 1);
    pool.run(n * c.n_head, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t t = u / c.n_head, h = u % c.n_head, kvh = h / group, part = (h % group) / gs;
        AttnItem a = call.item(t, kvh, part);
        const int k = static_cast<int>((h % group) % gs);
        a.s[0] = a.s[k];
        a.g = 1;
        phase_fn(&a, static_cast<int>(AttnPhase::softmax), 0, 0);
      }
    }, 1);
    pool.run(n * per_token * pieces, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t it = u / pieces, piece = u % pieces, t = it / per_token, r = it % per_token;
        const AttnItem a = call.item(t, r / parts, r % parts);
        int64_t d0, d1;
        partition(hd, static_cast<int>(pieces), static_cast<int>(piece), 16, d0, d1);
        if (d0 < d1) phase_fn(&a, static_cast<int>(AttnPhase::output), d0, d1);
      }
    }, 1);
    return;
  }
  // Many items (a prompt window): whole items. Causal cost grows with t, so the tokens go to the
  // pool in zigzag order (0, n-1, 1, n-2, ...): each thread's contiguous range then holds about
  // the same number of keys.
  pool.run(n * per_token, [&](int64_t b, int64_t e) {
    for (int64_t slot = b; slot < e; ++slot) {
      const int64_t i = slot / per_token, r = slot % per_token;
      const int64_t t = (i % 2 == 0) ? i / 2 : n - 1 - i / 2;
      const AttnItem a = call.item(t, r / parts, r % parts);
      item_fn(&a);
    }
  }, 1);
}

}  // namespace nvfp4
