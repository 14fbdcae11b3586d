// An FP8 KV cache (KvType::fp8, `--kv fp8`): keys and values stored as E4M3(x / scale), saturated
// at +-448, and read by attention as the byte's value times the scale, widened in registers
// (kernels/attention_item.h). The widening is one float rounding of value(byte) * scale on every
// ISA, so attention over the FP8 cache must give the bits of attention over an F32 cache holding
// those widened values: held with ==, for decoding and prompt windows, GQA groups of 1 to 8
// heads, head dimensions with a tail, partial key tiles, every byte value, every ISA this CPU
// runs, 1 to 3 threads, and per-layer scales (calibrated ones, 1.0, and powers of two).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "isa_scope.h"
#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels.h"
#include "nvfp4/model.h"
#include "nvfp4/thread_pool.h"
#include "ops/attention.h"

using namespace nvfp4;

namespace {

// What the cache reads byte b as at scale s: its value times s, rounded once to float.
float widened(uint8_t b, float s) { return e4m3_to_float(b) * s; }

TEST(KvFp8, StoreRoundsToNearestE4m3AndSaturates) {
  // Every non-NaN byte's value times a scale comes back as that byte.
  for (const float s : {1.0f, 0.0371f, 3.5f, 0.001f}) {
    for (int b = 0; b < 256; ++b) {
      if (e4m3_is_nan(static_cast<uint8_t>(b))) continue;
      const float x = e4m3_to_float(static_cast<uint8_t>(b)) * s;
      const uint8_t got = kv_fp8_byte(x, s);
      // -0 and +0 are the same value; the byte keeps the sign.
      EXPECT_EQ(got, static_cast<uint8_t>(b)) << "byte " << b << ", scale " << s;
    }
  }
  // Saturation: beyond +-448 (and infinities) to +-448, not NaN; NaN stays NaN.
  EXPECT_EQ(kv_fp8_byte(500.0f, 1.0f), 0x7E);
  EXPECT_EQ(kv_fp8_byte(-1e30f, 1.0f), 0xFE);
  EXPECT_EQ(kv_fp8_byte(INFINITY, 1.0f), 0x7E);
  EXPECT_EQ(kv_fp8_byte(10.0f, 0.01f), 0x7E);  // 1000 after the division
  EXPECT_TRUE(e4m3_is_nan(kv_fp8_byte(NAN, 1.0f)));
  // Round to nearest, ties to even, on x / s: 1.0625 is halfway between 1 and 1.125.
  EXPECT_EQ(kv_fp8_byte(1.0625f, 1.0f), float_to_e4m3(1.0f));
  EXPECT_EQ(kv_fp8_byte(2.125f, 2.0f), float_to_e4m3(1.0f));
  EXPECT_EQ(kv_fp8_byte(1.0626f, 1.0f), float_to_e4m3(1.125f));
}

TEST(KvFp8, ScalesAreCheckedAndCopiedPrefixesMustAgree) {
  KvCache a, b;
  a.init(2, 1, 16, 8, KvType::fp8);
  b.init(2, 1, 16, 8, KvType::fp8);
  EXPECT_EQ(a.k_scale(1), 1.0f);
  EXPECT_EQ(a.bytes(), static_cast<size_t>(2 * 16 * (16 + 8)));  // one byte per element, keys in whole tiles
  EXPECT_THROW(a.set_scales(0, 0.0f, 1.0f), Error);
  EXPECT_THROW(a.set_scales(0, 1.0f, NAN), Error);
  EXPECT_THROW(a.set_scales(0, -1.0f, 1.0f), Error);
  EXPECT_THROW(a.set_scales(2, 1.0f, 1.0f), Error);
  a.set_scales(1, 0.5f, 2.0f);
  EXPECT_EQ(a.k_scale(1), 0.5f);
  EXPECT_EQ(a.v_scale(1), 2.0f);
  std::vector<float> k(16, 3.0f), v(16, -3.0f);
  a.store(1, 0, k.data(), v.data());
  EXPECT_THROW(b.copy_prefix(1, a, 1, 1), Error);  // other scales
  b.set_scales(1, 0.5f, 2.0f);
  b.copy_prefix(1, a, 1, 1);
  EXPECT_EQ(static_cast<const uint8_t*>(b.values(1, 0))[0], kv_fp8_byte(-3.0f, 2.0f));
  EXPECT_EQ(static_cast<const uint8_t*>(b.keys(1, 0))[0], kv_fp8_byte(3.0f, 0.5f));
}

struct Shape {
  int64_t n_head, n_kv, hd;
};

// An FP8 cache and an F32 one holding its values widened. Keys and values are drawn as bytes (every
// byte value but the NaNs, in turn) so that the cache stores that very byte; the scales per layer.
struct CachePair {
  KvCache fp8, f32;
};

void fill(const Shape& sh, int64_t n_layer, int64_t n_ctx, const std::vector<float>& scales, uint32_t seed, CachePair& c) {
  c.fp8.init(n_layer, sh.n_kv, sh.hd, n_ctx, KvType::fp8);
  c.f32.init(n_layer, sh.n_kv, sh.hd, n_ctx, KvType::f32);
  std::mt19937 rng(seed);
  const int64_t kv = sh.n_kv * sh.hd;
  std::vector<float> k(static_cast<size_t>(kv)), v(k.size()), kw(k.size()), vw(k.size());
  int next = 0;
  const auto draw = [&] {
    // Mostly small bytes (values near the scale, as calibrated caches hold), in turn every byte.
    int b = (next++ % 3 == 0) ? next % 256 : static_cast<int>(rng() % 96) + 16 + (rng() % 2) * 128;
    if (e4m3_is_nan(static_cast<uint8_t>(b))) b = 0x7E;
    return static_cast<uint8_t>(b);
  };
  for (int64_t l = 0; l < n_layer; ++l) {
    const float ks = scales[static_cast<size_t>(2 * l)], vs = scales[static_cast<size_t>(2 * l + 1)];
    c.fp8.set_scales(l, ks, vs);
    for (int64_t p = 0; p < n_ctx; ++p) {
      for (size_t e = 0; e < k.size(); ++e) {
        const uint8_t kb = draw(), vb = draw();
        k[e] = e4m3_to_float(kb) * ks;
        v[e] = e4m3_to_float(vb) * vs;
        kw[e] = widened(kb, ks);
        vw[e] = widened(vb, vs);
      }
      c.fp8.store(l, p, k.data(), v.data());
      c.f32.store(l, p, kw.data(), vw.data());
    }
  }
}

std::vector<float> run(const ModelConfig& mc, std::vector<CachePair>& caches, bool fp8,
                       const std::vector<std::pair<int, int64_t>>& toks, int64_t l, int64_t window, const std::vector<float>& q,
                       ThreadPool& pool) {
  std::vector<AttnToken> at;
  for (const auto& [ci, pos] : toks) {
    CachePair& cp = caches[static_cast<size_t>(ci)];
    at.push_back(AttnToken{fp8 ? &cp.fp8 : &cp.f32, pos});
  }
  AttnStep st;
  st.set(at);
  std::vector<float> out(toks.size() * static_cast<size_t>(mc.q_dim()), -1.0f), scratch;
  AttnView v;
  v.layer = l;
  v.head_dim = mc.head_dim;
  v.n_head = mc.n_head;
  v.n_kv = mc.n_head_kv;
  v.window = window;
  v.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mc.head_dim)));
  attention_layer(v, st, q.data(), out.data(), scratch, pool);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(KvFp8, WideningIsOneRoundingOfValueTimesScale) {
  // The kernels' per-lane formula (F16 bits times 256 * scale) against value * scale, every byte.
  for (const float s : {1.0f, 0.0371f, 1e-30f, 3.3e5f, 0.5f}) {
    for (int b = 0; b < 256; ++b) {
      if (e4m3_is_nan(static_cast<uint8_t>(b))) continue;
      const uint16_t h = static_cast<uint16_t>(((b & 0x7F) << 7) | ((b & 0x80) << 8));
      const float got = half_to_float(h) * (s * 256.0f);
      const float want = widened(static_cast<uint8_t>(b), s);
      EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << "byte " << b << ", scale " << s << ": " << got << " vs " << want;
    }
  }
}

TEST(KvFp8, DirectReadEqualsF32CacheOfWidenedValues) {
  const Shape shapes[] = {
      {9, 3, 64},    // SmolLM2: groups of 3
      {8, 2, 48},    // groups of 4; 48 dimensions (32 + 16 chunks)
      {12, 2, 40},   // groups of 6 (items of 4 and 2); a tail of 8 dimensions
      {8, 1, 128},   // groups of 8 (two items of 4); 128 dimensions
  };
  const int64_t n_layer = 2, n_ctx = 83;  // 5 whole key tiles and a partial one
  const std::vector<float> scales = {0.0371f, 0.21f, 1.0f, 0.0625f};  // layer 0 k, v; layer 1 k, v
  const std::vector<Isa> isas = supported_isas();
  uint32_t seed = 1;
  for (const Shape& sh : shapes) {
    ModelConfig mc;
    mc.n_head = sh.n_head;
    mc.n_head_kv = sh.n_kv;
    mc.head_dim = sh.hd;
    std::vector<CachePair> caches(3);
    for (CachePair& c : caches) fill(sh, n_layer, n_ctx, scales, seed++, c);
    std::vector<std::vector<std::pair<int, int64_t>>> steps;
    for (int64_t pos : std::vector<int64_t>{0, 15, 16, 40, 63, n_ctx - 1}) steps.push_back({{0, pos}});
    steps.push_back({{0, 82}, {1, 30}, {2, 47}});
    std::vector<std::pair<int, int64_t>> whole, two;
    for (int64_t p = 0; p < n_ctx; ++p) whole.push_back({0, p});
    for (int64_t p = 0; p < 40; ++p) two.push_back({static_cast<int>(p % 2) * 2, 30 + p});
    steps.push_back(whole);
    steps.push_back(two);
    // q of N(0, 1), and 30 times wider: most weights then subnormal or tiny (below 2^-101 the
    // order makes them +0, attention_item.h).
    for (const float q_sd : {1.0f, 30.0f})
    for (size_t si = 0; si < steps.size(); ++si) {
      const auto& toks = steps[si];
      std::mt19937 rng(seed++);
      std::normal_distribution<float> nd(0.0f, q_sd);
      std::vector<float> q(toks.size() * static_cast<size_t>(mc.q_dim()));
      for (float& x : q) x = nd(rng);
      const int64_t l = static_cast<int64_t>(si % 2);
      for (const int64_t window : {int64_t{0}, int64_t{24}}) {  // every position; a sliding window's gathered keys
        std::vector<float> ref;
        for (Isa isa : isas)
          for (int threads : {1, 2, 3}) {
            SCOPED_TRACE(std::string(isa_name(isa)) + ", " + std::to_string(threads) + " threads, heads " +
                         std::to_string(sh.n_head) + "/" + std::to_string(sh.n_kv) + " x " + std::to_string(sh.hd) +
                         ", step " + std::to_string(si) + " (" + std::to_string(toks.size()) + " tokens), window " +
                         std::to_string(window) + ", q sd " + std::to_string(q_sd));
            test::IsaEnv env(isa);
            ThreadPool pool(threads);
            const std::vector<float> a = run(mc, caches, true, toks, l, window, q, pool);
            const std::vector<float> b = run(mc, caches, false, toks, l, window, q, pool);
            EXPECT_TRUE(same_bits(a, b)) << "FP8 cache read directly != F32 cache of the widened values";
            if (ref.empty()) ref = b;  // scalar, one thread
            EXPECT_TRUE(same_bits(a, ref)) << "differs from the scalar ISA on one thread";
            bool finite = true;
            for (float x : a) finite = finite && std::isfinite(x);
            EXPECT_TRUE(finite);
          }
      }
    }
  }
}
