// The attention item's chunking (kernels/attention_item.h: key_chunk / dim_chunk per ISA register
// shape, value blocks) changes no bit: the item computed with each ISA's shape, here compiled for
// baseline x86-64 (GCC lowers the wider vectors), and the scalar dispatch entry equal the
// contract's plain loops bit for bit, for
// F32, F16 and E4M3 caches, groups of 1-4 heads, head dimensions with and without a tail of
// fewer than 16, and key counts around the tiles, chunks and value blocks. This holds AVX-512's
// shape (16 lanes, 128/112/96-key chunks) to the contract on machines without AVX-512 too.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

// The header's vector helpers take and return 32- and 64-byte vectors; in this baseline
// translation unit GCC warns that such an ABI differs with AVX. They have internal linkage.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#include "kernels/attention_item.h"
#pragma GCC diagnostic pop
#include "kernels/attention_kernels.h"
#include "attention_contract.h"
#include "kernels/pinned_math.h"

namespace nvfp4 {
namespace {

struct WideShape {  // attention_item_avx512.cpp's ShapeAvx512
  static constexpr int kW = 16, kRegs = 32;
  static constexpr int64_t kKeys = 128, kDims = 64;
};
struct Avx2Shape {  // attention_item_avx2.cpp's ShapeAvx2
  static constexpr int kW = 8, kRegs = 16;
  static constexpr int64_t kKeys = 96, kDims = 64;
};
struct SmallShape {  // attention_item.cpp's ShapeSse2
  static constexpr int kW = 4, kRegs = 16;
  static constexpr int64_t kKeys = 32, kDims = 16;
};

void widen16_test(const uint16_t* h, float* f) {
  for (int i = 0; i < 16; ++i) f[i] = half_to_float(h[i]);
}
struct WidenE4m3Test {
  float mul;
  void operator()(const uint8_t* b, float* f) const {
    for (int i = 0; i < 16; ++i) f[i] = e4m3_widened(b[i], mul);
  }
};

// One item's inputs: keys tiled as the cache holds them, values [len][hd], G query heads.
struct ItemData {
  std::vector<float> kf, vf, q, s, o;
  std::vector<uint16_t> kh, vh;
  std::vector<uint8_t> kb, vb;
  AttnItem item{};
};

void make(ItemData& d, int elem, int g, int64_t len, int64_t hd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t tiles = (len + kTile - 1) / kTile;
  const size_t nk = static_cast<size_t>(tiles * kTile * hd), nv = static_cast<size_t>(len * hd);
  d.kf.resize(nk);
  d.vf.resize(nv);
  for (auto& x : d.kf) x = nd(rng);
  for (auto& x : d.vf) x = nd(rng);
  d.kh.resize(nk);
  d.vh.resize(nv);
  d.kb.resize(nk);
  d.vb.resize(nv);
  for (size_t i = 0; i < nk; ++i) {
    d.kh[i] = float_to_half(d.kf[i]);
    d.kb[i] = static_cast<uint8_t>(rng() & 0xFF);
    if ((d.kb[i] & 0x7F) == 0x7F) d.kb[i] ^= 1;  // no NaN bytes (the cache never stores them)
  }
  for (size_t i = 0; i < nv; ++i) {
    d.vh[i] = float_to_half(d.vf[i]);
    d.vb[i] = static_cast<uint8_t>(rng() & 0x7E);
  }
  d.q.resize(static_cast<size_t>(g * hd));
  for (auto& x : d.q) x = nd(rng) * 0.5f;
  d.s.assign(static_cast<size_t>(g * (len + kTile)), 0.0f);
  d.o.assign(static_cast<size_t>(g * hd), -1.0f);
  AttnItem& a = d.item;
  a.elem = elem;
  a.K = elem == kElemF32 ? static_cast<const void*>(d.kf.data()) : elem == kElemF16 ? static_cast<const void*>(d.kh.data()) : d.kb.data();
  a.V = elem == kElemF32 ? static_cast<const void*>(d.vf.data()) : elem == kElemF16 ? static_cast<const void*>(d.vh.data()) : d.vb.data();
  a.k_mul = 256.0f * 0.75f;
  a.v_mul = 256.0f * 1.5f;
  a.g = g;
  for (int h = 0; h < g; ++h) {
    a.q[h] = d.q.data() + h * hd;
    a.s[h] = d.s.data() + h * (len + kTile);
    a.o[h] = d.o.data() + h * hd;
  }
  a.len = len;
  a.hd = hd;
  a.scale = 0.125f;
}

template <class S>
std::vector<float> run_shape(int elem, int g, int64_t len, int64_t hd, uint32_t seed) {
  ItemData d;
  make(d, elem, g, len, hd, seed);
  attention_item<S, WidenE4m3Test>(d.item, exp_shifted_scalar_body, widen16_test);
  return d.o;
}

// The contract written out plainly (attention_contract.h) over this item's layouts: keys and
// values as widened (F16 exactly, E4M3 at its mul).
std::vector<float> run_plain(int elem, int g, int64_t len, int64_t hd, uint32_t seed) {
  ItemData d;
  make(d, elem, g, len, hd, seed);
  const AttnItem& a = d.item;
  const auto key = [&](int64_t j, int64_t dd) {
    const int64_t i = ((j / kTile) * hd + dd) * kTile + j % kTile;
    return elem == kElemF32 ? d.kf[i] : elem == kElemF16 ? half_to_float(d.kh[i]) : e4m3_widened(d.kb[i], a.k_mul);
  };
  const auto value = [&](int64_t j, int64_t dd) {
    const int64_t i = j * hd + dd;
    return elem == kElemF32 ? d.vf[i] : elem == kElemF16 ? half_to_float(d.vh[i]) : e4m3_widened(d.vb[i], a.v_mul);
  };
  for (int h = 0; h < g; ++h) test::contract_head(a.q[h], hd, len, a.scale, key, value, d.o.data() + h * hd);
  return d.o;
}

std::vector<float> run_scalar(int elem, int g, int64_t len, int64_t hd, uint32_t seed) {
  ItemData d;
  make(d, elem, g, len, hd, seed);
  attention_item_scalar(&d.item);
  return d.o;
}

TEST(AttentionShapes, EveryIsaShapeEqualsTheScalarEntry) {
  uint32_t seed = 1;
  for (int elem : {kElemF32, kElemF16, kElemE4m3})
    for (int g = 1; g <= kMaxGroup; ++g)
      for (int64_t hd : {64, 40})
        for (int64_t len : {1, 16, 17, 63, 64, 65, 127, 129, 200, 300}) {
          SCOPED_TRACE("elem " + std::to_string(elem) + " g " + std::to_string(g) + " hd " + std::to_string(hd) +
                       " len " + std::to_string(len));
          const std::vector<float> ref = run_plain(elem, g, len, hd, seed);
          const std::vector<float> scalar = run_scalar(elem, g, len, hd, seed);
          const std::vector<float> wide = run_shape<WideShape>(elem, g, len, hd, seed);
          const std::vector<float> avx2 = run_shape<Avx2Shape>(elem, g, len, hd, seed);
          const std::vector<float> small = run_shape<SmallShape>(elem, g, len, hd, seed);
          ++seed;
          for (float x : ref) ASSERT_TRUE(std::isfinite(x));
          EXPECT_EQ(0, std::memcmp(ref.data(), scalar.data(), ref.size() * sizeof(float)));
          EXPECT_EQ(0, std::memcmp(ref.data(), wide.data(), ref.size() * sizeof(float)));
          EXPECT_EQ(0, std::memcmp(ref.data(), avx2.data(), ref.size() * sizeof(float)));
          EXPECT_EQ(0, std::memcmp(ref.data(), small.data(), ref.size() * sizeof(float)));
        }
}

// The chunk sizes the shapes give (what the comments in the ISA files say).
TEST(AttentionShapes, ChunksFitTheRegisterFiles) {
  EXPECT_EQ((key_chunk<Avx2Shape, 1>()), 96);
  EXPECT_EQ((key_chunk<Avx2Shape, 2>()), 32);
  EXPECT_EQ((key_chunk<Avx2Shape, 3>()), 16);
  EXPECT_EQ((key_chunk<Avx2Shape, 4>()), 16);
  EXPECT_EQ((dim_chunk<Avx2Shape, 1>()), 64);
  EXPECT_EQ((dim_chunk<Avx2Shape, 2>()), 32);
  EXPECT_EQ((dim_chunk<Avx2Shape, 3>()), 16);
  EXPECT_EQ((key_chunk<WideShape, 2>()), 128);
  EXPECT_EQ((key_chunk<WideShape, 3>()), 112);
  EXPECT_EQ((key_chunk<WideShape, 4>()), 96);
  EXPECT_EQ((dim_chunk<WideShape, 4>()), 64);
}

}  // namespace
}  // namespace nvfp4
