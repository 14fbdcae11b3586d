// Attention against docs/DETERMINISM.md's order written out plainly, one head at a time: per key
// j, s[j] = sum over d ascending of q[d] * K[j][d] in float; s[j] * (1/sqrt(hd)); the maximum;
// float(exp(double(s[j] - max))) (pinned exp); their sum in double, j ascending; s[j] * (1/sum) in
// double, rounded to float, +0 below 2^-101; then per dimension d, o[d] = sum over j ascending of s[j] * V[j][d] in
// float. Held with ==, bit for bit, on every ISA this CPU runs, 1 to 3 threads, for decoding
// (one token; one token each of two sequences) and a prompt window, for GQA groups of 1 to 6
// heads (items of 4 and 2), head dimensions with a tail of fewer than 16, F32 and F16 caches.
// The runtime cuts keys, heads and dimensions into ranges for threads and registers; none of that
// may change a bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_contract.h"
#include "isa_scope.h"
#include "nvfp4/codec.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "ops/attention.h"
#include "kernels/pinned_math.h"

using namespace nvfp4;

namespace {

struct Shape {
  int64_t n_head, n_kv, hd;
};

struct Seq {
  KvCache cache;
  std::vector<float> k, v;  // [pos][n_kv * hd] as the cache holds them (widened when F16)
};

void fill(const Shape& sh, int64_t n_ctx, KvType type, uint32_t seed, Seq& s) {
  s.cache.init(1, sh.n_kv, sh.hd, n_ctx, type);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  const size_t kv = static_cast<size_t>(sh.n_kv * sh.hd);
  s.k.assign(static_cast<size_t>(n_ctx) * kv, 0.0f);
  s.v.assign(s.k.size(), 0.0f);
  for (int64_t p = 0; p < n_ctx; ++p) {
    float* k = s.k.data() + p * kv;
    float* v = s.v.data() + p * kv;
    for (size_t e = 0; e < kv; ++e) {
      k[e] = nd(rng);
      v[e] = nd(rng);
    }
    s.cache.store(0, p, k, v);
    if (type == KvType::f16)
      for (size_t e = 0; e < kv; ++e) {
        k[e] = half_to_float(float_to_half(k[e]));
        v[e] = half_to_float(float_to_half(v[e]));
      }
  }
}

// One query head of one token, in the documented order; returns how many of its weights lie in
// (0, 2^-101).
int64_t reference_head(const Shape& sh, const Seq& s, int64_t pos, int64_t h, const float* q, float* o) {
  const int64_t hd = sh.hd, kvh = h / (sh.n_head / sh.n_kv), kv = sh.n_kv * hd;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  int64_t tiny = 0;
  test::contract_head(
      q, hd, pos + 1, scale, [&](int64_t j, int64_t d) { return s.k[static_cast<size_t>(j * kv + kvh * hd + d)]; },
      [&](int64_t j, int64_t d) { return s.v[static_cast<size_t>(j * kv + kvh * hd + d)]; }, o, &tiny);
  return tiny;
}

// attention() of the step on every ISA this CPU runs at 1 .. max_threads threads: the bits of want.
void expect_on_every_isa(const ModelConfig& mc, const AttnStep& st, const std::vector<float>& q, const std::vector<float>& want,
                         int max_threads, const std::string& what) {
  for (Isa isa : supported_isas())
    for (int threads = 1; threads <= max_threads; ++threads) {
      SCOPED_TRACE(std::string(isa_name(isa)) + ", " + std::to_string(threads) + " threads, " + what);
      test::IsaEnv env(isa);
      ThreadPool pool(threads);
      std::vector<float> got(q.size(), -1.0f), scratch;
      attention(mc, st, 0, q.data(), got.data(), scratch, pool);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << "attention differs from the documented order";
    }
}

// Every step of `shapes` over both cache types, q drawn N(0, q_sd): held to the documented order
// on every ISA at 1 to 3 threads. Returns how many of the reference's weights lay in (0, 2^-101),
// which the order makes +0 (attention_item.h, kTinyWeight).
int64_t check_steps(const std::vector<Shape>& shapes, float q_sd, uint32_t seed) {
  int64_t tiny = 0;
  const int64_t n_ctx = 100;  // 6 whole key tiles and a partial one
  for (const Shape& sh : shapes)
    for (KvType type : {KvType::f32, KvType::f16}) {
      ModelConfig mc;
      mc.n_head = sh.n_head;
      mc.n_head_kv = sh.n_kv;
      mc.head_dim = sh.hd;
      std::vector<Seq> seqs(2);
      for (Seq& s : seqs) fill(sh, n_ctx, type, seed++, s);
      // Decoding one token at several lengths, one token each of two sequences, a prompt window.
      std::vector<std::vector<std::pair<int, int64_t>>> steps;
      for (int64_t pos : {0, 16, 47, 99}) steps.push_back({{0, pos}});
      steps.push_back({{0, 99}, {1, 30}});
      std::vector<std::pair<int, int64_t>> window;
      for (int64_t p = 40; p < 70; ++p) window.push_back({1, p});
      steps.push_back(window);
      for (const auto& toks : steps) {
        std::mt19937 rng(seed++);
        std::normal_distribution<float> nd(0.0f, q_sd);
        const int64_t qd = mc.q_dim();
        std::vector<float> q(toks.size() * static_cast<size_t>(qd));
        for (float& x : q) x = nd(rng);
        std::vector<float> want(q.size());
        for (size_t t = 0; t < toks.size(); ++t)
          for (int64_t h = 0; h < sh.n_head; ++h)
            tiny += reference_head(sh, seqs[static_cast<size_t>(toks[t].first)], toks[t].second, h,
                                   q.data() + t * qd + h * sh.hd, want.data() + t * qd + h * sh.hd);
        std::vector<AttnToken> at;
        for (const auto& [si, pos] : toks) at.push_back(AttnToken{&seqs[static_cast<size_t>(si)].cache, pos});
        AttnStep st;
        st.set(at);
        expect_on_every_isa(mc, st, q, want, 3,
                            "heads " + std::to_string(sh.n_head) + "/" + std::to_string(sh.n_kv) + " x " + std::to_string(sh.hd) +
                                (type == KvType::f16 ? ", F16" : ", F32") + ", " + std::to_string(toks.size()) +
                                " tokens, first at " + std::to_string(toks[0].second) + ", q sd " + std::to_string(q_sd));
      }
    }
  return tiny;
}

}  // namespace

TEST(AttentionOrder, EqualsTheDocumentedOrderBitForBit) {
  check_steps({
                  {9, 3, 64},   // SmolLM2: groups of 3
                  {4, 4, 64},   // no GQA: items of 1
                  {8, 4, 48},   // groups of 2; 48 dimensions
                  {12, 2, 40},  // groups of 6 (items of 4 and 2); a tail of 8 dimensions
              },
              1.0f, 7);
}

// Scores spread over hundreds (q 25 times larger: as Gemma 4's unscaled normed q and k can be):
// most weights are subnormal or far below the maximum, which the order makes +0; the bits must
// stay the documented order's.
TEST(AttentionOrder, TinyWeightsEqualTheDocumentedOrder) {
  const int64_t tiny = check_steps({{8, 4, 48}, {12, 2, 40}, {4, 1, 256}}, 25.0f, 1234);
  EXPECT_GT(tiny, 1000) << "the steps hold few weights below 2^-101: the rule goes untested";
}

// Weights built to be subnormal and tiny, over values whose largest weight's row is zero: the
// outputs are sums of tiny products alone. The order makes every weight below 2^-101 +0, so where
// all of them are (position 40) every output is +0, and a kernel that kept their products (or
// flushed at another bound) gives subnormal or tiny outputs instead. One KV head of 2 query heads
// (an item of 2), 64 dimensions; q = 8 e_0, so with the scale 1/8 key j's score is its first
// element: 0 for key 0, -70 to -103 for the others (exact in F16); exp(-70) lies just above
// 2^-101, exp(-71) below.
TEST(AttentionOrder, WeightsBelowTheBoundAddNothing) {
  const Shape sh{2, 1, 64};
  const int64_t n_ctx = 90, kv = sh.hd;
  for (KvType type : {KvType::f32, KvType::f16}) {
    Seq s;
    s.cache.init(1, sh.n_kv, sh.hd, n_ctx, type);
    std::mt19937 rng(99);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    s.k.assign(static_cast<size_t>(n_ctx * kv), 0.0f);
    s.v.assign(s.k.size(), 0.0f);
    for (int64_t p = 0; p < n_ctx; ++p) {
      float* k = s.k.data() + p * kv;
      float* v = s.v.data() + p * kv;
      // Keys 1-49: weights in the subnormals (scores -88 to -103); 50 on: tiny normal ones.
      k[0] = p == 0 ? 0.0f : p < 50 ? -88.0f - static_cast<float>((p * 37) % 31) * 0.5f : -70.0f - static_cast<float>(p % 17);
      for (int64_t d = 0; d < kv; ++d) v[d] = p == 0 ? 0.0f : half_to_float(float_to_half(nd(rng)));
      s.cache.store(0, p, k, v);
    }
    ModelConfig mc;
    mc.n_head = sh.n_head;
    mc.n_head_kv = sh.n_kv;
    mc.head_dim = sh.hd;
    std::vector<float> q(static_cast<size_t>(mc.q_dim()), 0.0f);
    q[0] = 8.0f;
    q[static_cast<size_t>(sh.hd)] = 8.0f;  // head 1 the same query
    for (int64_t pos : {int64_t{40}, n_ctx - 1}) {
      std::vector<float> want(q.size());
      int64_t tiny = 0;
      for (int64_t h = 0; h < sh.n_head; ++h) tiny += reference_head(sh, s, pos, h, q.data() + h * sh.hd, want.data() + h * sh.hd);
      int64_t nonzero = 0;
      for (float x : want) nonzero += x != 0.0f;
      if (pos < 50) {
        EXPECT_EQ(tiny, 2 * pos);  // every key but the first, both heads
        for (float x : want) EXPECT_EQ(0u, std::bit_cast<uint32_t>(x)) << "an output not +0";
      } else {
        EXPECT_GT(tiny, 2 * 49);
        EXPECT_GT(nonzero, 0) << "no key at exp(-70): nothing above the bound";
      }
      AttnStep st;
      st.set(std::vector<AttnToken>{AttnToken{&s.cache, pos}});
      expect_on_every_isa(mc, st, q, want, 2, std::string(type == KvType::f16 ? "F16" : "F32") + ", position " + std::to_string(pos));
    }
  }
}
