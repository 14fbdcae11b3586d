// Context: the forward pass over a window of tokens. Every buffer is sized in the constructor;
// eval() allocates nothing. Float steps in pinned order (docs/DETERMINISM.md):
//   RMSNorm: sum of squares in double, ascending; scale = float(1 / sqrt(mean + eps));
//            y = (x * scale) * w in float.
//   residual adds, SwiGLU (silu(g) * u) and RoPE elementwise in float (SiLU via pinned exp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <span>
#include <utility>

#include "nvfp4/error.h"
#include "runtime/attention.h"
#include "runtime/model_impl.h"
#include "runtime/pinned_math.h"

namespace nvfp4 {

struct Context::Impl {
  const Model::Impl& m;
  ContextOptions opt;
  ThreadPool& pool;
  KvCache kv;
  RopeTable rope;
  int64_t pos = 0;
  std::vector<float> x, xn, q, k, v, att, o, g, u, scratch, hn;
  Observer obs;

  Impl(const Model::Impl& model, const ContextOptions& o_, ThreadPool& p) : m(model), opt(o_), pool(p) {}

  void rmsnorm(const float* in, const std::vector<float>& w, float* out, int64_t n) {
    const int64_t d = m.cfg.n_embd;
    const auto rows = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const float* xi = in + t * d;
        double ss = 0.0;
        for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xi[i]) * static_cast<double>(xi[i]);
        const double mean = ss / static_cast<double>(d);
        const float scale = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(m.cfg.rms_eps)));
        for (int64_t i = 0; i < d; ++i) out[t * d + i] = (xi[i] * scale) * w[static_cast<size_t>(i)];
      }
    };
    // Tokens are independent: a prompt window's rows split across the pool (same bits).
    if (n < 16) rows(0, n);
    else pool.run(n, rows);
  }

  void run(const MatMul& mm, const float* in, int64_t n, float* out) {
    if (obs) obs(mm.name, in, n, mm.n_in);
    mm.forward(m.mode, in, n, out, pool);
  }

  // Layers that read the same input (q/k/v, gate/up): NVFP4 ones share one activation
  // preparation and one dispatch (Linear::forward_group, same bits as one by one).
  void run_group(std::initializer_list<std::pair<const MatMul*, float*>> mms, const float* in, int64_t n) {
    const Linear* lin[4];
    float* ys[4];
    size_t k = 0;
    bool nvfp4 = mms.size() <= 4;
    for (const auto& [mm, y] : mms) nvfp4 = nvfp4 && mm->nvfp4;
    for (const auto& [mm, y] : mms) {
      if (!nvfp4) {
        run(*mm, in, n, y);
        continue;
      }
      if (obs) obs(mm->name, in, n, mm->n_in);
      lin[k] = &mm->lin;
      ys[k++] = y;
    }
    if (nvfp4) Linear::forward_group(m.mode, std::span<const Linear* const>(lin, k), in, n, std::span<float* const>(ys, k), pool);
  }

  void batch(const int32_t* tok, int64_t n, float* logits, bool all) {
    const ModelConfig& c = m.cfg;
    const int64_t d = c.n_embd, kvd = c.n_head_kv * c.head_dim;
    for (int64_t t = 0; t < n; ++t) m.embd.row(tok[t], x.data() + t * d);
    for (int64_t l = 0; l < c.n_layer; ++l) {
      const LayerWeights& w = m.layers[static_cast<size_t>(l)];
      rmsnorm(x.data(), w.attn_norm, xn.data(), n);
      run_group({{&w.q, q.data()}, {&w.k, k.data()}, {&w.v, v.data()}}, xn.data(), n);
      const auto rope_store = [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          rope.apply(q.data() + t * d, c.n_head, pos + t);
          rope.apply(k.data() + t * kvd, c.n_head_kv, pos + t);
          kv.store(l, pos + t, k.data() + t * kvd, v.data() + t * kvd);
        }
      };
      if (n < 16) rope_store(0, n);
      else pool.run(n, rope_store);  // tokens are independent (own positions in the cache)
      attention(c, kv, l, q.data(), n, pos, att.data(), scratch.data(), opt.n_ctx, pool);
      run(w.o, att.data(), n, o.data());
      for (int64_t i = 0; i < n * d; ++i) x[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] + o[static_cast<size_t>(i)];
      rmsnorm(x.data(), w.ffn_norm, xn.data(), n);
      run_group({{&w.gate, g.data()}, {&w.up, u.data()}}, xn.data(), n);
      pool.run(n * c.n_ff, [&](int64_t b, int64_t e) { swiglu_rows(g.data() + b, u.data() + b, e - b); }, 16);
      run(w.down, g.data(), n, o.data());
      for (int64_t i = 0; i < n * d; ++i) x[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] + o[static_cast<size_t>(i)];
    }
    if (logits) {
      const int64_t first = all ? 0 : n - 1, rows = all ? n : 1;
      rmsnorm(x.data() + first * d, m.output_norm, hn.data(), rows);
      m.head().forward(hn.data(), rows, logits, pool);
    }
    pos += n;
  }
};

Context::Context(const Model& model, const ContextOptions& opt, ThreadPool& pool)
    : impl_(std::make_unique<Impl>(model.impl(), opt, pool)) {
  Impl& c = *impl_;
  const ModelConfig& cfg = model.config();
  if (opt.n_ctx < 1 || opt.n_batch < 1)
    throw Error("", "", "context size and batch", ">= 1", std::to_string(opt.n_ctx) + ", " + std::to_string(opt.n_batch));
  c.opt.n_batch = std::min(opt.n_batch, opt.n_ctx);
  const int64_t nb = c.opt.n_batch;
  const auto sz = [](int64_t a, int64_t b) { return static_cast<size_t>(a * b); };
  c.x.resize(sz(nb, cfg.n_embd));
  c.xn.resize(sz(nb, cfg.n_embd));
  c.q.resize(sz(nb, cfg.n_embd));
  c.k.resize(sz(nb, cfg.n_head_kv * cfg.head_dim));
  c.v.resize(sz(nb, cfg.n_head_kv * cfg.head_dim));
  c.att.resize(sz(nb, cfg.n_embd));
  c.o.resize(sz(nb, cfg.n_embd));
  c.g.resize(sz(nb, cfg.n_ff));
  c.u.resize(sz(nb, cfg.n_ff));
  c.hn.resize(sz(nb, cfg.n_embd));
  c.scratch.resize(static_cast<size_t>(attention_scratch(cfg, nb, opt.n_ctx, opt.kv)));
  c.kv.init(cfg.n_layer, cfg.n_head_kv, cfg.head_dim, opt.n_ctx, opt.kv);
  c.rope.build(opt.n_ctx, cfg.head_dim, cfg.rope_theta);
}

Context::~Context() = default;

void Context::eval(const int32_t* tokens, int64_t n, float* logits, bool all) {
  Impl& c = *impl_;
  const ModelConfig& cfg = c.m.cfg;
  if (n < 1) return;
  if (c.pos + n > c.opt.n_ctx)
    throw Error("", "", "context full", "at most " + std::to_string(c.opt.n_ctx) + " positions",
                std::to_string(c.pos + n));
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= cfg.n_vocab)
      throw Error("", "", "token id out of range", "0 .. " + std::to_string(cfg.n_vocab - 1), std::to_string(tokens[i]));
  for (int64_t s = 0; s < n; s += c.opt.n_batch) {
    const int64_t nb = std::min(c.opt.n_batch, n - s);
    const bool last = s + nb == n;
    float* out = !logits ? nullptr : all ? logits + s * cfg.n_vocab : (last ? logits : nullptr);
    c.batch(tokens + s, nb, out, all);
  }
}

int64_t Context::pos() const { return impl_->pos; }
int64_t Context::n_ctx() const { return impl_->opt.n_ctx; }
void Context::reset() { impl_->pos = 0; }
void Context::set_observer(Observer obs) { impl_->obs = std::move(obs); }

size_t Context::bytes() const {
  const Impl& c = *impl_;
  size_t b = c.kv.bytes() + (c.rope.cos.size() + c.rope.sin.size()) * 4;
  for (const auto* v : {&c.x, &c.xn, &c.q, &c.k, &c.v, &c.att, &c.o, &c.g, &c.u, &c.scratch, &c.hn}) b += v->size() * 4;
  return b;
}

}  // namespace nvfp4
