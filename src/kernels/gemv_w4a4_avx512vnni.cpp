// w4a4 on AVX-512 VNNI: 16 rows x up to 4 columns per pass over the packed stream.
// Per group: s = -12*sum(a) + sum_j u_j*a_j (vpdpbusd; u = e2m1_q1(w) + 12, a = e2m1_q1 of the
// activation, |s| <= 16*144); s * q9(s_w) fits int32 (<= 2304 * 229376 < 2^31, vpmulld); times the
// column's q9(s_a) into int64 (vpmuldq on even and odd rows) and summed in int64: T of the
// reference exactly. The float tail is the reference's, per row, in scalar code.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"
#include "nvfp4/codec.h"

namespace nvfp4::kern {

namespace {

// e4m3_q9 of 16 scale bytes as int32: (8 + m) << (e - 1) for e >= 1, m for e == 0.
inline __m512i q9_epi32(const uint8_t* s16) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)));
  const __m512i mant = _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(7)), _mm512_set1_epi32(8));
  const __m512i sh = _mm512_sub_epi32(_mm512_srli_epi32(v, 3), _mm512_set1_epi32(1));
  const __m512i normal = _mm512_sllv_epi32(mant, sh);
  return _mm512_mask_mov_epi32(normal, _mm512_cmplt_epu32_mask(v, _mm512_set1_epi32(8)), v);
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

template <int NC, class Pf>
void tile_pass(const Packed& w, const ActFp4& a, int64_t tile, int64_t c0, float* y) {
  const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU12)));
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512i te[NC], to[NC];
  for (int c = 0; c < NC; ++c) te[c] = to[c] = _mm512_setzero_si512();
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < a.groups; ++g, p += kRecordBytes) {
    prefetch_record<Pf>(p);
    const __m512i p0 = _mm512_loadu_si512(p), p1 = _mm512_loadu_si512(p + 64);
    const __m512i w0 = _mm512_shuffle_epi8(lut, _mm512_and_si512(p0, m4));
    const __m512i w1 = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(p0, 4), m4));
    const __m512i w2 = _mm512_shuffle_epi8(lut, _mm512_and_si512(p1, m4));
    const __m512i w3 = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(p1, 4), m4));
    const __m512i sw = q9_epi32(p + 128);
    for (int c = 0; c < NC; ++c) {
      const int64_t col = c0 + c;
      const int8_t* qg = a.qg(g, col);
      __m512i s = _mm512_set1_epi32(a.corr[g * a.n + col]);
      s = _mm512_dpbusd_epi32(s, w0, _mm512_set1_epi32(load4(qg)));
      s = _mm512_dpbusd_epi32(s, w1, _mm512_set1_epi32(load4(qg + 4)));
      s = _mm512_dpbusd_epi32(s, w2, _mm512_set1_epi32(load4(qg + 8)));
      s = _mm512_dpbusd_epi32(s, w3, _mm512_set1_epi32(load4(qg + 12)));
      const __m512i pw = _mm512_mullo_epi32(s, sw);
      const __m512i sa = _mm512_set1_epi32(a.q9[g * a.n + col]);
      te[c] = _mm512_add_epi64(te[c], _mm512_mul_epi32(pw, sa));
      to[c] = _mm512_add_epi64(to[c], _mm512_mul_epi32(_mm512_srli_epi64(pw, 32), sa));
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  for (int c = 0; c < NC; ++c) {
    alignas(64) int64_t ev[8], od[8];
    _mm512_store_si512(ev, te[c]);
    _mm512_store_si512(od, to[c]);
    float* yc = y + (c0 + c) * w.n_out + r0;
    for (int r = 0; r < rows; ++r) {
      const int64_t T = (r & 1) ? od[r >> 1] : ev[r >> 1];
      const float v = ((static_cast<float>(T) * 0x1p-20f) * w.scale2) * a.input_scale;
      yc[r] = half_to_float(float_to_half(v));
    }
  }
}

}  // namespace

template <class Pf>
void gemv_w4a4_avx512vnni(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < a.n; c0 += 4) {
      switch (std::min<int64_t>(4, a.n - c0)) {
        case 4: tile_pass<4, Pf>(w, a, t, c0, y); break;
        case 3: tile_pass<3, Pf>(w, a, t, c0, y); break;
        case 2: tile_pass<2, Pf>(w, a, t, c0, y); break;
        default: tile_pass<1, Pf>(w, a, t, c0, y); break;
      }
    }
  }
}

template void gemv_w4a4_avx512vnni<PrefetchL1>(const Packed&, const ActFp4&, int64_t, int64_t, float*);
template void gemv_w4a4_avx512vnni<PrefetchL1L2>(const Packed&, const ActFp4&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
