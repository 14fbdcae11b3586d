// The integer-exact FP8 layer's layout and its scalar reference (order and layout in fp8_q8.h).
#include "kernels/fp8_q8.h"

#include <algorithm>

#include "nvfp4/codec.h"

namespace nvfp4::kern {

Fp8Q8 Fp8Q8::prepare(const uint8_t* codes, int64_t n_out, int64_t n_in) {
  Fp8Q8 w;
  w.n_out = n_out;
  w.n_in = n_in;
  w.rows = (n_out + kFp8RowPad - 1) / kFp8RowPad * kFp8RowPad;
  w.units = n_in / 4;
  w.b.assign(static_cast<size_t>(w.rows * n_in), 0);  // padding rows: +0
  for (int64_t r = 0; r < n_out; ++r) {
    const int64_t g = r / kFp8RowPad, lane = r % kFp8RowPad;
    for (int64_t u = 0; u < w.units; ++u)
      std::copy_n(codes + r * n_in + 4 * u, 4, w.b.data() + (g * w.units + u) * kFp8Unit + lane * 4);
  }
  return w;
}

Fp8Q8 Fp8Q8::prepare_mx(const uint8_t* codes, const uint8_t* scales, int64_t n_out, int64_t n_in) {
  Fp8Q8 w = prepare(codes, n_out, n_in);
  const int64_t nj = n_in / 32;
  w.mx.assign(static_cast<size_t>(w.rows * nj), 127);  // padding rows: 2^0 (their weights are +0)
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t j = 0; j < nj; ++j)
      w.mx[static_cast<size_t>(((r / kFp8RowPad) * nj + j) * kFp8RowPad + r % kFp8RowPad)] = scales[r * nj + j];
  return w;
}

Fp8Q8 Fp8Q8::prepare_b128(const uint8_t* codes, const float* scales, int64_t n_out, int64_t n_in) {
  Fp8Q8 w = prepare(codes, n_out, n_in);
  const int64_t nk = (n_in + 127) / 128;
  w.bs.assign(static_cast<size_t>(w.rows * nk), 1.0f);  // padding rows: any finite factor (their weights are +0)
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t k = 0; k < nk; ++k)
      w.bs[static_cast<size_t>(((r / kFp8RowPad) * nk + k) * kFp8RowPad + r % kFp8RowPad)] = b128_factor(scales[(r / 128) * nk + k]);
  return w;
}

void fp8_q8_scalar(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t r = r_b; r < r_e; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.blocks; ++b) {
        if (a.zero[static_cast<size_t>(t * a.blocks + b)]) continue;
        if (w.scaled()) {
          float s = 0.0f;
          for (int64_t j = b * (kQ8Block / 32); j < std::min<int64_t>(w.n_in / 32, (b + 1) * (kQ8Block / 32)); ++j) {
            int32_t T = 0;
            for (int64_t i = 32 * j; i < 32 * (j + 1); ++i) T += e4m3_q9(w.byte(r, i)) * a.qg(i / kGroup, t)[i % kGroup];
            float f = static_cast<float>(T);
            f = f * w.factor(r / kFp8RowPad, j, r % kFp8RowPad);
            s = s + f;
          }
          const float c = s * a.d[static_cast<size_t>(t * a.blocks + b)];
          acc = acc + c;
          continue;
        }
        int64_t T = 0;
        for (int64_t i = b * kQ8Block; i < std::min<int64_t>(w.n_in, (b + 1) * kQ8Block); ++i)
          T += int64_t{e4m3_q9(w.byte(r, i))} * a.qg(i / kGroup, t)[i % kGroup];
        float c = static_cast<float>(T);
        c = c * 0x1p-9f;
        c = c * a.d[static_cast<size_t>(t * a.blocks + b)];
        acc = acc + c;
      }
      y[t * w.n_out + r] = acc;
    }
  }
}

}  // namespace nvfp4::kern
