// Attention reads an F16 KV cache as stored, widening keys and values in registers
// (kernels/attention_item.h). Widening is exact, so its results must be the bits of attention
// over an F32 cache that holds the widened values: held with ==, bit for bit, for decoding (one
// token, and one token each of several sequences) and for prompt windows, for GQA groups of 1 to
// 8 heads, head dimensions with and without a tail of fewer than 16, key counts with and without
// a partial tile, values in the F16 subnormal range, every ISA this CPU runs, 1 to 3 threads.
// Every variant is also held to the scalar ISA on one thread.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "isa_scope.h"
#include "nvfp4/codec.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "ops/attention.h"

using namespace nvfp4;

namespace {

struct Shape {
  int64_t n_head, n_kv, hd;
};

// A pair of caches: F16, and F32 holding the F16 one's values widened.
struct CachePair {
  KvCache f16, f32;
};

// Random keys and values: mostly N(0, 1.5), every 7th tiny (F16 subnormals), every 11th large.
void fill(const Shape& sh, int64_t n_layer, int64_t n_ctx, uint32_t seed, CachePair& c) {
  c.f16.init(n_layer, sh.n_kv, sh.hd, n_ctx, KvType::f16);
  c.f32.init(n_layer, sh.n_kv, sh.hd, n_ctx, KvType::f32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  const int64_t kv = sh.n_kv * sh.hd;
  std::vector<float> k(static_cast<size_t>(kv)), v(k.size()), kw(k.size()), vw(k.size());
  int64_t i = 0;
  const auto draw = [&] {
    ++i;
    const float x = nd(rng);
    return i % 7 == 0 ? x * 3e-6f : i % 11 == 0 ? x * 900.0f : x;
  };
  for (int64_t l = 0; l < n_layer; ++l)
    for (int64_t p = 0; p < n_ctx; ++p) {
      for (size_t e = 0; e < k.size(); ++e) {
        k[e] = draw();
        v[e] = draw();
        kw[e] = half_to_float(float_to_half(k[e]));
        vw[e] = half_to_float(float_to_half(v[e]));
      }
      c.f16.store(l, p, k.data(), v.data());
      c.f32.store(l, p, kw.data(), vw.data());
    }
}

// out of attention over tokens (cache index, position) of layer l, with the F16 or F32 caches.
std::vector<float> run(const ModelConfig& mc, std::vector<CachePair>& caches, bool f16,
                       const std::vector<std::pair<int, int64_t>>& toks, int64_t l, const std::vector<float>& q,
                       ThreadPool& pool) {
  std::vector<AttnToken> at;
  for (const auto& [ci, pos] : toks) {
    CachePair& cp = caches[static_cast<size_t>(ci)];
    at.push_back(AttnToken{f16 ? &cp.f16 : &cp.f32, pos});
  }
  AttnStep st;
  st.set(at);
  std::vector<float> out(toks.size() * static_cast<size_t>(mc.q_dim()), -1.0f), scratch;
  attention(mc, st, l, q.data(), out.data(), scratch, pool);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(AttentionF16, DirectReadEqualsF32CacheOfWidenedValues) {
  const Shape shapes[] = {
      {9, 3, 64},    // SmolLM2: groups of 3
      {4, 4, 64},    // no GQA
      {8, 2, 48},    // groups of 4; 48 dimensions (32 + 16 chunks)
      {12, 2, 40},   // groups of 6 (items of 4 and 2); a tail of 8 dimensions
      {8, 1, 128},   // groups of 8 (two items of 4); 128 dimensions
  };
  const int64_t n_layer = 2, n_ctx = 83;  // 5 whole key tiles and a partial one
  const std::vector<Isa> isas = supported_isas();
  uint32_t seed = 1;
  for (const Shape& sh : shapes) {
    ModelConfig mc;
    mc.n_head = sh.n_head;
    mc.n_head_kv = sh.n_kv;
    mc.head_dim = sh.hd;
    std::vector<CachePair> caches(3);
    for (CachePair& c : caches) fill(sh, n_layer, n_ctx, seed++, c);
    // The steps: decoding one token (several lengths), one token each of three sequences, and
    // prompt windows (the whole context; a window in the middle).
    std::vector<std::vector<std::pair<int, int64_t>>> steps;
    for (int64_t pos : std::vector<int64_t>{0, 15, 16, 40, 63, 64, n_ctx - 1}) steps.push_back({{0, pos}});
    steps.push_back({{0, 82}, {1, 30}, {2, 47}});
    std::vector<std::pair<int, int64_t>> whole, mid, two;
    for (int64_t p = 0; p < n_ctx; ++p) whole.push_back({0, p});
    for (int64_t p = 20; p < 57; ++p) mid.push_back({1, p});
    for (int64_t p = 0; p < 40; ++p) two.push_back({static_cast<int>(p % 2) * 2, 30 + p});  // caches 0 and 2
    steps.push_back(whole);
    steps.push_back(mid);
    steps.push_back(two);
    for (size_t si = 0; si < steps.size(); ++si) {
      const auto& toks = steps[si];
      std::mt19937 rng(seed++);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      std::vector<float> q(toks.size() * static_cast<size_t>(mc.q_dim()));
      for (float& x : q) x = nd(rng);
      const int64_t l = static_cast<int64_t>(si % 2);
      std::vector<float> ref;
      for (Isa isa : isas)
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(std::string(isa_name(isa)) + ", " + std::to_string(threads) + " threads, heads " +
                       std::to_string(sh.n_head) + "/" + std::to_string(sh.n_kv) + " x " + std::to_string(sh.hd) +
                       ", step " + std::to_string(si) + " (" + std::to_string(toks.size()) + " tokens)");
          test::IsaEnv env(isa);
          ThreadPool pool(threads);
          const std::vector<float> a = run(mc, caches, true, toks, l, q, pool);
          const std::vector<float> b = run(mc, caches, false, toks, l, q, pool);
          EXPECT_TRUE(same_bits(a, b)) << "F16 cache read directly != F32 cache of the widened values";
          if (ref.empty()) ref = b;  // scalar, one thread
          EXPECT_TRUE(same_bits(a, ref)) << "differs from the scalar ISA on one thread";
          bool finite = true;
          for (float x : a) finite = finite && std::isfinite(x);
          EXPECT_TRUE(finite);
        }
    }
  }
}
