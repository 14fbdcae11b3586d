#pragma once
// Prompts (the a16q8 GEMM, N >= kPrefillN) on AVX2 without VNNI: each narrow 256-block of a tile
// decoded once for every column of the pass instead of once per window of 8, with the operands'
// roles swapped so that no column step adds a correction.
//
// The window kernel (gemv_a16q8_avx2_body.h) decodes u = e2m1_q1 + 12 (unsigned, vpmaddubsw's
// first operand) against the signed activations q and adds corr = -12 * sum(q) to every column's
// group sum: per column and group, five broadcasts, four vpmaddubsw, four vpaddw, vpmaddwd and
// vpaddd, plus the record's decode and multipliers per window. Here:
//  - the records of a narrow block (both halves, Packed::narrow == 3) are decoded once per tile
//    and block into SignedBlock: the signed codes e = e2m1_q1 in [-12, 12] and each group's
//    multiplier pairs (mult, mult) (scale_mults: mult = M << (E - emin) <= 1920);
//  - the activations enter as unsigned bytes x = q + 128 in [1, 255] (q ^ 0x80, made once per
//    column block); vpmaddubsw(x, e) pair sums |.| <= 2 * 255 * 12 = 6120 (no saturation), four of
//    them per int16 lane |.| <= 8 * 255 * 12 = 24480 < 2^15, and lane 0 + lane 1 = sum_16 x e =
//    s + 128 * E with s the reference's group sum sum_16 q e and E = sum_16 e;
//  - vpmaddwd by (mult, mult) and vpaddd over the block's groups: A = sum_g (s_g + 128 E_g) mult_g,
//    |A| <= 16 * 16 * 255 * 12 * 1920 = 1 504 051 200 < 2^31 (exact int32);
//  - C = sum_g E_g * mult_g per row (the same instructions on x = 1: |C| <= 16 * 192 * 1920), once
//    per tile and block, and S = A - 128 C = sum_g s_g mult_g: the window kernel's S, so
//    float(S) * 2^(emin - 10) and every step after it are the same (the header of
//    gemv_a16q8_avx2_body.h).
// Blocks with a wide half run the window kernel's block_t per window. Each (row, column) still
// adds its blocks in ascending order (add_block), so the bits are the window kernel's.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/gemv_a16q8_avx2_body.h"

namespace nvfp4::kern {
namespace {
namespace a16q8_avx2_body {

// Code -> e2m1_q1(code): kU12 less 12.
inline constexpr std::array<int8_t, 16> kS12 = [] {
  std::array<int8_t, 16> t{};
  for (int i = 0; i < 16; ++i) t[i] = static_cast<int8_t>(kU12[i] - 12);
  return t;
}();

// One tile's narrow 256-block, decoded: per group and half, the four code vectors in decode()'s
// order and the multiplier pairs; corr128 = 128 * C per row lane of each half.
struct SignedBlock {
  __m256i e[kBlockGroups][2][4];
  __m256i mult[kBlockGroups][2];
  __m256i corr128[2];
};

template <class Pf>
inline void decode_signed(const uint8_t* p, int64_t count, const uint8_t* emin, SignedBlock& sb) {
  const __m256i base = _mm256_add_epi16(row_words(emin), _mm256_set1_epi16(1));
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kS12.data())));
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi8(1);
  __m256i c[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int64_t g = 0; g < count; ++g, p += kRecordBytes) {
    prefetch_record<Pf>(p);
    const Mults m = scale_mults<false>(p + 128, base);
    sb.mult[g][0] = m.m0;
    sb.mult[g][1] = m.m1;
    for (int h = 0; h < 2; ++h) {
      const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
      const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 + 32 * h));
      __m256i* e = sb.e[g][h];
      e[0] = _mm256_shuffle_epi8(lut, _mm256_and_si256(p0, m4));
      e[1] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4));
      e[2] = _mm256_shuffle_epi8(lut, _mm256_and_si256(p1, m4));
      e[3] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4));
      const __m256i sum = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(ones, e[0]), _mm256_maddubs_epi16(ones, e[1])),
                                           _mm256_add_epi16(_mm256_maddubs_epi16(ones, e[2]), _mm256_maddubs_epi16(ones, e[3])));
      c[h] = _mm256_add_epi32(c[h], _mm256_madd_epi16(sum, h ? m.m1 : m.m0));
    }
  }
  sb.corr128[0] = _mm256_slli_epi32(c[0], 7);
  sb.corr128[1] = _mm256_slli_epi32(c[1], 7);
}

// Half h of a decoded block, columns [c0, c0 + NC): t[c] = float(S) * 2^(emin - 10); xb: the
// unsigned activations of the block's first group and column c0.
template <int NC>
inline void signed_half(const SignedBlock& sb, int h, int64_t count, const uint8_t* xb, const uint8_t* emin, __m256 t[NC]) {
  __m256i acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_si256();
  for (int64_t g = 0; g < count; ++g, xb += kQStride) {
    const __m256i* e = sb.e[g][h];
    const __m256i e0 = e[0], e1 = e[1], e2 = e[2], e3 = e[3], mult = sb.mult[g][h];
    for (int c = 0; c < NC; ++c) {
      const int8_t* x = reinterpret_cast<const int8_t*>(xb) + c * kGroup;
      __m256i s = _mm256_maddubs_epi16(bcast4(x), e0);
      s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bcast4(x + 4), e1));
      s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bcast4(x + 8), e2));
      s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bcast4(x + 12), e3));
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(s, mult));
    }
  }
  const __m256 pow2 = pow2_of(emin + 8 * h);
  for (int c = 0; c < NC; ++c) t[c] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[c], sb.corr128[h])), pow2);
}

struct alignas(32) AccRow {
  float v[16];
};

// Block b of a tile for columns [c0, c0 + NC): from the decoded block where there is one (sb),
// else the window kernel's block_t; then the pinned steps into acc (column c0's row first).
template <class Pf, int NC>
void block_cols(const Packed& w, const ActQ8& a, const SignedBlock* sb, const uint8_t* xb, int64_t tile, int64_t b,
                int64_t c0, const uint8_t* p, AccRow* acc) {
  __m256 tt[2][NC];
  if (sb) {
    const int64_t count = std::min<int64_t>(a.groups, (b + 1) * kBlockGroups) - b * kBlockGroups;
    for (int h = 0; h < 2; ++h) signed_half<NC>(*sb, h, count, xb, w.emin_at(tile, b), tt[h]);
  } else {
    block_t<false, Pf, NC>(w, a, tile, b, c0, p, tt);
  }
  add_block<NC>(w, a, b, c0, tt, reinterpret_cast<float (*)[16]>(acc));
}

template <int NC>
void store_cols(const Packed& w, int64_t tile, int64_t c0, AccRow* acc, float* y) {
  store_tile<NC>(w, tile, c0, reinterpret_cast<float (*)[16]>(acc), y);
}

using BlockColsFn = void (*)(const Packed&, const ActQ8&, const SignedBlock*, const uint8_t*, int64_t, int64_t, int64_t,
                             const uint8_t*, AccRow*);
template <class Pf>
constexpr BlockColsFn kBlockCols[9] = {nullptr,
                                           block_cols<Pf, 1>, block_cols<Pf, 2>, block_cols<Pf, 3>, block_cols<Pf, 4>,
                                           block_cols<Pf, 5>, block_cols<Pf, 6>, block_cols<Pf, 7>, block_cols<Pf, 8>};
using StoreColsFn = void (*)(const Packed&, int64_t, int64_t, AccRow*, float*);
constexpr StoreColsFn kStoreCols[9] = {nullptr,           store_cols<1>, store_cols<2>, store_cols<3>, store_cols<4>,
                                       store_cols<5>,     store_cols<6>, store_cols<7>, store_cols<8>};

// The GEMM: the column blocks of gemm() (their int8 activations within half a MiB), each as
// unsigned bytes; per tile of this thread and 256-block, the block decoded once (when narrow) and
// run for every window of 8 columns of the column block.
template <class Pf>
void gemm_signed(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  const int64_t cb = prefill_cols(a.n_in);
  const int64_t chunk_bytes = a.groups * kQStride;
  std::vector<uint8_t> xu;
  std::vector<AccRow> acc;
  SignedBlock sb;
  for (int64_t b0 = 0; b0 < a.n; b0 += cb) {
    const int64_t b1 = std::min<int64_t>(a.n, b0 + cb);
    const int64_t chunks = (b1 - b0 + ActQ8::kChunk - 1) / ActQ8::kChunk;
    const uint8_t* q = reinterpret_cast<const uint8_t*>(a.q.data()) + (b0 / ActQ8::kChunk) * chunk_bytes;
    xu.resize(static_cast<size_t>(chunks * chunk_bytes));
    for (size_t i = 0; i < xu.size(); ++i) xu[i] = q[i] ^ 0x80;
    acc.resize(static_cast<size_t>(b1 - b0));
    for (int64_t t = tb; t < te; ++t) {
      std::fill(acc.begin(), acc.end(), AccRow{});
      const uint8_t* p = w.tile(t);
      for (int64_t b = 0; b < a.blocks; ++b) {
        const int64_t g0 = b * kBlockGroups;
        const int64_t count = std::min<int64_t>(a.groups, g0 + kBlockGroups) - g0;
        const bool decoded = w.narrow_at(t, b) == 3;
        if (decoded) decode_signed<Pf>(p, count, w.emin_at(t, b), sb);
        for (int64_t c0 = b0; c0 < b1; c0 += ActQ8::kChunk) {
          const uint8_t* xb = xu.data() + ((c0 - b0) / ActQ8::kChunk) * chunk_bytes + g0 * kQStride;
          kBlockCols<Pf>[std::min<int64_t>(ActQ8::kChunk, b1 - c0)](w, a, decoded ? &sb : nullptr, xb, t, b, c0, p,
                                                                     acc.data() + (c0 - b0));
        }
        p += count * kRecordBytes;
      }
      for (int64_t c0 = b0; c0 < b1; c0 += ActQ8::kChunk)
        kStoreCols[std::min<int64_t>(ActQ8::kChunk, b1 - c0)](w, t, c0, acc.data() + (c0 - b0), y);
    }
  }
}

}  // namespace a16q8_avx2_body
}  // namespace
}  // namespace nvfp4::kern
