// The attention of a layer with its own shape (ModelConfig::attn_layers[l]): Gemma 4 and Muse
// Glimmer (models/builders.h: build_layer_attention), and the output gate (build_output_gate).
#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "kernels/pinned_math.h"
#include "models/builders.h"

namespace nvfp4 {

void build_layer_attention(StepRun& s, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const AttnLayerConfig& A = c.attn_layers[static_cast<size_t>(l)];
  const int64_t n = s.n, hd = A.head_dim, qd = c.n_head * hd, kvd = A.n_kv * hd;
  const bool shared = A.kv_from >= 0;  // reads its source's keys and values
  AttnView v;
  v.group = s.m.kv_group[static_cast<size_t>(l)];
  v.layer = s.m.kv_layer[static_cast<size_t>(l)];
  v.head_dim = hd;
  v.n_head = c.n_head;
  v.n_kv = A.n_kv;
  v.window = A.window;
  v.scale = A.scale != 0.0f ? A.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));  // 0: 1/sqrt(head_dim)
  const RopeTable* rope = A.rope >= 0 ? &w.ropes[static_cast<size_t>(A.rope)] : nullptr;
  const auto rope_store = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const AttnToken& tk = w.step.tok[static_cast<size_t>(t)];
      if (rope) rope->apply(w.q.data() + t * qd, c.n_head, tk.pos);
      if (shared) continue;  // its source stored this step's keys and values
      if (rope) rope->apply(w.k.data() + t * kvd, A.n_kv, tk.pos);
      KvCache* kv = tk.cache(v.group);
      kv->store(v.layer, tk.pos % kv->n_ctx(), w.k.data() + t * kvd, w.v.data() + t * kvd);
    }
  };
  {
    // Bytes: the keys and values each token reads (its window of this layer's positions).
    double kv_bytes = 0;
    if (w.prof)
      for (const AttnToken& tk : w.step.tok) {
        const int64_t len = A.window > 0 ? std::min<int64_t>(tk.pos + 1, A.window) : tk.pos + 1;
        kv_bytes += static_cast<double>(len) * static_cast<double>(2 * kvd) * static_cast<double>(tk.cache(v.group)->elem_bytes());
      }
    PartTimer timer(w.prof, StepProfile::attention, kv_bytes);
    // A sliding layer's ring holds its window and kSlidingSlack positions more: a step with more
    // of one sequence's tokens stores and attends in waves (contiguous runs of the step) of at
    // most that many per sequence, so that every token's window is in the ring when it attends.
    // A token's result depends on its window's keys alone: the waves change no bit.
    std::vector<std::pair<int64_t, int64_t>> waves;
    if (A.window > 0) {
      std::vector<std::pair<const KvCache*, int64_t>> count;  // per sequence (its first cache), tokens in the wave
      int64_t t0 = 0;
      for (int64_t t = 0; t < n; ++t) {
        const KvCache* id = w.step.tok[static_cast<size_t>(t)].kv;
        auto it = std::find_if(count.begin(), count.end(), [&](const auto& p) { return p.first == id; });
        if (it == count.end()) it = count.insert(count.end(), {id, 0});
        if (++it->second > kSlidingSlack) {
          waves.push_back({t0, t});
          t0 = t;
          count.assign(1, {id, 1});
        }
      }
      waves.push_back({t0, n});
    }
    if (waves.size() <= 1) {
      if (n < 16) rope_store(0, n);
      else s.parallel(n, rope_store);  // tokens are independent (each its own cache position)
      s.attention_layer(v, w.q.data(), w.att.data());
    } else {
      AttnStep part;
      for (const auto& wave : waves) {
        const int64_t t0 = wave.first, t1 = wave.second;  // named: clang 14 does not capture bindings
        s.parallel(t1 - t0, [&](int64_t a, int64_t b) { rope_store(t0 + a, t0 + b); });
        part.set(std::span<const AttnToken>(w.step.tok).subspan(static_cast<size_t>(t0), static_cast<size_t>(t1 - t0)));
        s.attention_layer(v, w.q.data() + t0 * qd, w.att.data() + t0 * qd, &part);
      }
    }
  }
}

void build_output_gate(StepRun& s, const float* gate, int64_t q_dim) {
  float* att = s.ws.att.data();
  s.parallel(s.n * q_dim, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      att[i] = att[i] * static_cast<float>(1.0 / (1.0 + pinned::exp(-static_cast<double>(gate[i]))));
  }, 64);
}

}  // namespace nvfp4
