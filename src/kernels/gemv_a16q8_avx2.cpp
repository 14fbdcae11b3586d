// a16q8 on AVX2: the packed 16-row tile read as two halves of 8 rows, up to 2 columns per pass.
// Same arithmetic as gemv_a16q8_avx512vnni.cpp (see its header for why the bits equal the
// reference's); the group sum uses vpmaddubsw (u8 x s8 pairs, |pair| <= 2*24*127, no saturation)
// then vpmaddwd by ones instead of vpdpbusd.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

inline __m256 q9_ps(const uint8_t* s8) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  const __m256 normal =
      _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(v, 20), _mm256_set1_epi32(129 << 23)));
  const __m256 sub = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), v));
  return _mm256_blendv_ps(normal, _mm256_cvtepi32_ps(v), sub);
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

inline __m256i dot4(__m256i s, __m256i w, const int8_t* q, __m256i ones) {
  const __m256i pairs = _mm256_maddubs_epi16(w, _mm256_set1_epi32(load4(q)));
  return _mm256_add_epi32(s, _mm256_madd_epi16(pairs, ones));
}

template <int NC>
void tile_pass(const Packed& w, const ActQ8& a, int64_t tile, int64_t c0, float* y) {
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU12)));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  alignas(32) float acc[NC][16] = {};
  const uint8_t* p = w.tile(tile);
  const float s2 = w.scale2;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int64_t g_end = std::min<int64_t>(a.groups, (b + 1) * (kQ8Block / kGroup));
    __m256d t[NC][2][2];
    for (int c = 0; c < NC; ++c)
      for (int h = 0; h < 2; ++h) t[c][h][0] = t[c][h][1] = _mm256_setzero_pd();
    for (int64_t g = b * (kQ8Block / kGroup); g < g_end; ++g, p += kRecordBytes) {
      for (int h = 0; h < 2; ++h) {
        const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
        const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 + 32 * h));
        const __m256i w0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(p0, m4));
        const __m256i w1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4));
        const __m256i w2 = _mm256_shuffle_epi8(lut, _mm256_and_si256(p1, m4));
        const __m256i w3 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4));
        const __m256 sc = q9_ps(p + 128 + 8 * h);
        for (int c = 0; c < NC; ++c) {
          const int8_t* qg = a.qg(g, c0 + c);
          __m256i s = _mm256_set1_epi32(*a.corrg(g, c0 + c));
          s = dot4(s, w0, qg, ones);
          s = dot4(s, w1, qg + 4, ones);
          s = dot4(s, w2, qg + 8, ones);
          s = dot4(s, w3, qg + 12, ones);
          const __m256 pr = _mm256_mul_ps(_mm256_cvtepi32_ps(s), sc);  // exact
          t[c][h][0] = _mm256_add_pd(t[c][h][0], _mm256_cvtps_pd(_mm256_castps256_ps128(pr)));
          t[c][h][1] = _mm256_add_pd(t[c][h][1], _mm256_cvtps_pd(_mm256_extractf128_ps(pr, 1)));
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      const int64_t col = c0 + c;
      if (a.zero[col * a.blocks + b]) continue;
      const __m256 d = _mm256_set1_ps(a.d[col * a.blocks + b]);
      for (int h = 0; h < 2; ++h) {
        __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(t[c][h][1]), _mm256_cvtpd_ps(t[c][h][0]));
        v = _mm256_mul_ps(v, _mm256_set1_ps(0x1p-10f));
        v = _mm256_mul_ps(v, d);
        v = _mm256_mul_ps(v, _mm256_set1_ps(s2));
        _mm256_store_ps(acc[c] + 8 * h, _mm256_add_ps(_mm256_load_ps(acc[c] + 8 * h), v));
      }
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  for (int c = 0; c < NC; ++c) {
    alignas(32) float out[16];
    for (int h = 0; h < 2; ++h) {
      const __m128i hv = _mm256_cvtps_ph(_mm256_load_ps(acc[c] + 8 * h), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_store_ps(out + 8 * h, _mm256_cvtph_ps(hv));
    }
    float* yc = y + (c0 + c) * w.n_out + r0;
    for (int r = 0; r < rows; ++r) yc[r] = out[r];
  }
}

}  // namespace

void gemv_a16q8_avx2(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < a.n; c0 += 2) {
      if (a.n - c0 >= 2) tile_pass<2>(w, a, t, c0, y);
      else tile_pass<1>(w, a, t, c0, y);
    }
  }
}

}  // namespace nvfp4::kern
