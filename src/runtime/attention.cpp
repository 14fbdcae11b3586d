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

void swiglu_scalar(float* g, const float* u, int64_t n) { swiglu(g, u, n); }
void exp_shifted_scalar(const float* s, float mx, float* out, int64_t n) { exp_shifted_scalar_body(s, mx, out, n); }

void swiglu_rows(float* g, const float* u, int64_t n) {
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: swiglu_avx512(g, u, n); break;
    case RuntimeIsa::avx2: swiglu_avx2(g, u, n); break;
    default: swiglu_scalar(g, u, n); break;
  }
}

void attention(const ModelConfig& c, const KvCache& kv, int64_t layer, const float* q, int64_t n,
               int64_t pos0, float* out, float* scratch, int64_t n_ctx, ThreadPool& pool) {
  const int64_t hd = c.head_dim, group = c.n_head / c.n_head_kv;
  const bool f16 = kv.is_f16();
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  void (*item_fn)(const void*) = [](const void* it) {
    attention_item<32, 16>(*static_cast<const AttnItem*>(it), exp_shifted_scalar_body);
  };
  switch (runtime_isa()) {
    case RuntimeIsa::avx512: item_fn = attention_item_avx512; break;
    case RuntimeIsa::avx2: item_fn = attention_item_avx2; break;
    default: break;
  }
  // An F16 cache is converted once per call, each KV head's keys and values for every position
  // this batch reads, into the front of scratch; the items then read floats.
  const int64_t len_all = pos0 + n;
  float* conv = scratch;
  float* scores = scratch + (f16 ? 2 * c.n_head_kv * hd * n_ctx : 0);
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
  // loaded once for all of them). With few items (decoding one token) the heads go one per item,
  // so that the threads get even shares. Causal cost grows with t, so the tokens go to the pool
  // in zigzag order (0, n-1, 1, n-2, ...): each thread's contiguous range then holds about the
  // same number of keys. Which thread computes an item never changes its bits.
  int64_t gs = std::min<int64_t>(group, kMaxGroup);
  if (n * c.n_head_kv < 4 * pool.threads()) gs = 1;
  const int64_t parts = (group + gs - 1) / gs;  // items per KV head and token
  const int64_t per_token = c.n_head_kv * parts;
  pool.run(n * per_token, [&](int64_t b, int64_t e) {
    for (int64_t slot = b; slot < e; ++slot) {
      const int64_t i = slot / per_token, r = slot % per_token, kvh = r / parts, part = r % parts;
      const int64_t t = (i % 2 == 0) ? i / 2 : n - 1 - i / 2;
      const int64_t h0 = kvh * group + part * gs;
      const int64_t len = pos0 + t + 1;
      AttnItem a;
      if (f16) {
        a.K = conv + (2 * kvh) * hd * n_ctx;
        a.ks = len_all;
        a.V = conv + (2 * kvh + 1) * hd * n_ctx;
      } else {
        a.K = kv.keys(layer, kvh, len, nullptr);
        a.ks = kv.key_stride(len);
        a.V = kv.values(layer, kvh, len, nullptr);
      }
      a.g = static_cast<int>(std::min(gs, group - part * gs));
      for (int k = 0; k < a.g; ++k) {
        const int64_t h = h0 + k;
        a.q[k] = q + t * c.n_embd + h * hd;
        a.s[k] = scores + (t * c.n_head + h) * n_ctx;
        a.o[k] = out + t * c.n_embd + h * hd;
      }
      a.len = len;
      a.hd = hd;
      a.scale = scale;
      item_fn(&a);
    }
  }, 1);
}

}  // namespace nvfp4
