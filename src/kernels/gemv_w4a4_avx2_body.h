// The body of w4a4 on AVX2 and on AVX-VNNI, included by gemv_w4a4_avx2.cpp (kVnni = false) and
// gemv_w4a4_avxvnni.cpp (kVnni = true), each compiled with its own target flags.
//
// The 16-row tile as two halves of 8 rows, one column per pass. Group sum: AVX2 by vpmaddubsw +
// vpmaddwd (|pairs| <= 2*24*12), VNNI by vpdpbusd (4 products of |.| <= 24*12 per int32 step):
// the same exact int32; times q9(s_w) in int32 (< 2^31, vpmulld), times the column's q9(s_a) into
// int64 (vpmuldq, even and odd rows), summed in int64: T exactly; the float tail is the
// reference's, per row.
#pragma once
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"
#include "nvfp4/codec.h"

// Internal linkage: each including file gets its own copy, compiled with its own flags.
namespace nvfp4::kern {
namespace {
namespace w4a4_avx2_body {


inline __m256i q9_epi32(const uint8_t* s8) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  const __m256i mant = _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(7)), _mm256_set1_epi32(8));
  const __m256i sh = _mm256_sub_epi32(_mm256_srli_epi32(v, 3), _mm256_set1_epi32(1));
  const __m256i normal = _mm256_sllv_epi32(mant, sh);  // counts >= 32 (e == 0) give 0
  return _mm256_blendv_epi8(normal, v, _mm256_cmpgt_epi32(_mm256_set1_epi32(8), v));
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

template <bool kVnni, class Pf>
void tile_col(const Packed& w, const ActFp4& a, int64_t tile, int64_t col, float* y) {
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU12)));
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256i te[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  __m256i to[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < a.groups; ++g, p += kRecordBytes) {
    prefetch_record<Pf>(p);
    const int8_t* qg = a.qg(g, col);
    const __m256i sa = _mm256_set1_epi32(a.q9[g * a.n + col]);
    for (int h = 0; h < 2; ++h) {
      const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
      const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 + 32 * h));
      const __m256i wv[4] = {_mm256_shuffle_epi8(lut, _mm256_and_si256(p0, m4)),
                             _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4)),
                             _mm256_shuffle_epi8(lut, _mm256_and_si256(p1, m4)),
                             _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4))};
      __m256i s = _mm256_set1_epi32(a.corr[g * a.n + col]);
      for (int k = 0; k < 4; ++k) {
        if constexpr (kVnni) {
          s = _mm256_dpbusd_avx_epi32(s, wv[k], _mm256_set1_epi32(load4(qg + 4 * k)));
        } else {
          const __m256i pairs = _mm256_maddubs_epi16(wv[k], _mm256_set1_epi32(load4(qg + 4 * k)));
          s = _mm256_add_epi32(s, _mm256_madd_epi16(pairs, ones));
        }
      }
      const __m256i pw = _mm256_mullo_epi32(s, q9_epi32(p + 128 + 8 * h));
      te[h] = _mm256_add_epi64(te[h], _mm256_mul_epi32(pw, sa));
      to[h] = _mm256_add_epi64(to[h], _mm256_mul_epi32(_mm256_srli_epi64(pw, 32), sa));
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  alignas(32) int64_t ev[2][4], od[2][4];
  for (int h = 0; h < 2; ++h) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(ev[h]), te[h]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(od[h]), to[h]);
  }
  for (int r = 0; r < rows; ++r) {
    const int h = r / 8, k = r % 8;
    const int64_t T = (k & 1) ? od[h][k >> 1] : ev[h][k >> 1];
    const float v = ((static_cast<float>(T) * 0x1p-20f) * w.scale2) * a.input_scale;
    y[col * w.n_out + r0 + r] = half_to_float(float_to_half(v));
  }
}

template <bool kVnni, class Pf>
void gemv(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c = 0; c < a.n; ++c) tile_col<kVnni, Pf>(w, a, t, c, y);
  }
}

}  // namespace w4a4_avx2_body
}  // namespace
}  // namespace nvfp4::kern
