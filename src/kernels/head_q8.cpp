// The Q8_0 head's layout and its scalar reference (the order and the layout are in head_q8.h).
#include "kernels/head_q8.h"

#include <algorithm>
#include <cstring>

#include "nvfp4/codec.h"
#include "nvfp4/q8_0.h"

namespace nvfp4::kern {

HeadQ8 HeadQ8::prepare(const uint8_t* blocks, int64_t n_out, int64_t n_in) {
  HeadQ8 h;
  h.n_out = n_out;
  h.n_in = n_in;
  h.blocks = n_in / kQ8_0Block;
  h.rows = (n_out + kHeadRowPad - 1) / kHeadRowPad * kHeadRowPad;
  h.q.assign(static_cast<size_t>(h.rows * n_in), 128);  // padding rows: weight 0
  h.d.assign(static_cast<size_t>(h.blocks * h.rows), 0);
  for (int64_t r = 0; r < n_out; ++r) {
    const int64_t g = r / kHeadRowPad, lane = r % kHeadRowPad;
    for (int64_t j = 0; j < h.blocks; ++j) {
      BlockQ8_0 b;
      std::memcpy(&b, blocks + (r * h.blocks + j) * sizeof(BlockQ8_0), sizeof b);
      uint8_t* dst = h.q.data() + (g * h.blocks + j) * kHeadBlockBytes + lane * 4;
      for (int i = 0; i < kQ8_0Block; ++i) dst[i / 4 * kHeadUnit + i % 4] = static_cast<uint8_t>(b.qs[i] + 128);
      h.d[static_cast<size_t>((g * h.blocks + j) * kHeadRowPad + lane)] = b.d;
    }
  }
  return h;
}

HeadQ8 HeadQ8::prefix(int64_t n) const {
  HeadQ8 h;
  h.n_out = h.rows = n;
  h.n_in = n_in;
  h.blocks = blocks;
  h.q.assign(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(n * n_in));
  h.d.assign(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n * blocks));
  return h;
}

void head_q8_off(const ActQ8& a, int64_t blocks, int32_t* off) {
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t j = 0; j < blocks; ++j) {
      int32_t s = 0;
      for (int h = 0; h < 2; ++h) {
        const int8_t* qa = a.qg(2 * j + h, t);
        for (int i = 0; i < kGroup; ++i) s += qa[i];
      }
      off[t * blocks + j] = -128 * s;
    }
  }
}

void head_q8_scalar(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  const int64_t per = kQ8Block / kQ8_0Block;  // 32-blocks per activation block
  for (int64_t t = 0; t < a.n; ++t) {
    for (int64_t r = r_b; r < r_e; ++r) {
      const int64_t g = r / kHeadRowPad, lane = r % kHeadRowPad;
      float acc = 0.0f;
      for (int64_t b = 0; b < a.blocks; ++b) {
        float s = 0.0f;
        const int64_t j1 = std::min(w.blocks, (b + 1) * per);
        for (int64_t j = b * per; j < j1; ++j) {
          const uint8_t* u = w.codes(g, j) + lane * 4;  // code i at u[i / 4 * kHeadUnit + i % 4]
          int32_t isum = 0;
          for (int i = 0; i < kQ8_0Block; ++i) {
            const int32_t qw = int32_t{u[i / 4 * kHeadUnit + i % 4]} - 128;
            isum += qw * int32_t{a.qg(2 * j + i / kGroup, t)[i % kGroup]};
          }
          const float p = half_to_float(w.scales(g, j)[lane]) * static_cast<float>(isum);
          s = s + p;
        }
        const float p = a.d[static_cast<size_t>(t * a.blocks + b)] * s;
        acc = acc + p;
      }
      y[t * w.n_out + r] = acc;
    }
  }
}

}  // namespace nvfp4::kern
