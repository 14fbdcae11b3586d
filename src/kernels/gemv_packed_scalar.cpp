// The scalar variants on the packed stream: each tile is unpacked to the row layout and run
// through the reference dot products, so they give the reference's bits by construction. They
// serve CPUs without AVX2 and any mode an ISA has no vector kernel for.
#include <algorithm>
#include <vector>

#include "kernels/packed.h"
#include "nvfp4/codec.h"

namespace nvfp4::kern {

namespace {

template <typename Dot>
void each_row(const Packed& w, int64_t n, int64_t tb, int64_t te, float* y, Dot dot) {
  RowMatrix m;
  for (int64_t t = tb; t < te; ++t) {
    unpack_tile(w, t, m);
    const RowView v = m.view();
    for (int r = 0; r < kTileRows; ++r) {
      const int64_t row = t * kTileRows + r;
      if (row >= w.n_out) break;
      for (int64_t c = 0; c < n; ++c) y[c * w.n_out + row] = dot(v, r, c);
    }
  }
}

}  // namespace

void gemv_a16q8_scalar(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  std::vector<Q8Activations> cols(static_cast<size_t>(a.n));
  for (int64_t c = 0; c < a.n; ++c) {
    Q8Activations& q = cols[c];
    q.n_in = a.n_in;
    q.q.resize(static_cast<size_t>(a.n_in));
    for (int64_t g = 0; g < a.groups; ++g) std::copy(a.qg(g, c), a.qg(g, c) + kGroup, q.q.begin() + g * kGroup);
    q.d.assign(a.d.begin() + c * a.blocks, a.d.begin() + (c + 1) * a.blocks);
    q.zero.assign(a.zero.begin() + c * a.blocks, a.zero.begin() + (c + 1) * a.blocks);
  }
  each_row(w, a.n, tb, te, y, [&](const RowView& v, int r, int64_t c) { return dot_a16q8_ref(v, r, cols[c]); });
}

void gemv_w4a4_scalar(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  // Rebuild the reference's activation form (codes + scale bytes) from the prepared integers.
  std::vector<Fp4Activations> cols(static_cast<size_t>(a.n));
  for (int64_t c = 0; c < a.n; ++c) {
    Fp4Activations& f = cols[c];
    f.n_in = a.n_in;
    f.input_scale = a.input_scale;
    f.codes.assign(static_cast<size_t>(a.n_in / 2), 0);
    f.scales.assign(static_cast<size_t>(a.groups), 0);
    for (int64_t i = 0; i < a.n_in; ++i) {
      const int q = a.qg(i / kGroup, c)[i % kGroup];
      uint8_t code = 0;
      for (uint8_t k = 0; k < 16; ++k) if (e2m1_q1(k) == q) { code = k; break; }
      f.codes[i >> 1] = static_cast<uint8_t>(f.codes[i >> 1] | ((i & 1) ? code << 4 : code));
    }
    for (int64_t g = 0; g < a.groups; ++g) {
      for (int b = 0; b < 0x7F; ++b) {
        if (e4m3_q9(static_cast<uint8_t>(b)) == a.q9[g * a.n + c]) { f.scales[g] = static_cast<uint8_t>(b); break; }
      }
    }
  }
  each_row(w, a.n, tb, te, y, [&](const RowView& v, int r, int64_t c) { return dot_w4a4_ref(v, r, cols[c]); });
}

void gemv_a16_scalar(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  each_row(w, n, tb, te, y, [&](const RowView& v, int r, int64_t c) { return dot_a16_ref(v, r, x + c * w.n_in); });
}

void gemv_f32_scalar(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  each_row(w, n, tb, te, y, [&](const RowView& v, int r, int64_t c) { return dot_f32_ref(v, r, x + c * w.n_in); });
}

void gemv_f64_scalar(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  std::vector<double> xd(x, x + n * w.n_in);
  each_row(w, n, tb, te, y, [&](const RowView& v, int r, int64_t c) {
    return static_cast<float>(dot_f64_ref(v, r, xd.data() + c * w.n_in));
  });
}

}  // namespace nvfp4::kern
