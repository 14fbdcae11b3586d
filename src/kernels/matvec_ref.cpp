// Reference matvec for every precision mode (SPEC.md section 5): the source of truth.
//
// a16q8. With e2m1_q1 = 2 * e2m1 and e4m3_q9 = 2^9 * e4m3, the exact block sum over one 256-value
// block of a row is
//   sum_g e4m3(s_g) * sum_j e2m1(c_j) * x_j  ~=  d * sum_g e4m3(s_g) * sum_j e2m1(c_j) * q_j
//                                            =  d * 2^-10 * T,
//   T = sum_g i64(sum_j e2m1_q1(c_j) * q_j) * e4m3_q9(s_g).
// Each inner sum is at most 16 * 12 * 127 = 24384 in magnitude (int32), each product at most
// 24384 * 229376 < 2^33 (int64), and T over 16 groups < 2^37: integer sums, so the order in
// which T is formed cannot change it. Only the float tail is pinned:
//   c = float(T) * 2^-10; c = c * d; c = c * scale2; acc = acc + c   (blocks ascending)
//   y = float(half(acc)).
//
// w4a4. Per 16-value group both sides are E2M1 codes with E4M3 scales:
//   T = sum_g i64(sum_j e2m1_q1(w_j) * e2m1_q1(a_j)) * e4m3_q9(s_w) * e4m3_q9(s_a),
// |inner| <= 16 * 144, |T| per group < 2^47; y = float(half(((float(T) * 2^-20) * scale2) * input_scale)).
//
// a16, f32: float32 accumulation, not bit-pinned; f64: dequantized in double (exact), double dot.
#include <cmath>
#include <vector>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/kernels_ref.h"

namespace nvfp4 {

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::a16: return "a16";
    case Mode::a16q8: return "a16q8";
    case Mode::w4a4: return "w4a4";
    case Mode::f32: return "f32";
    case Mode::f64: return "f64";
  }
  return "?";
}

Mode parse_mode(std::string_view s) {
  for (Mode m : {Mode::a16, Mode::a16q8, Mode::w4a4, Mode::f32, Mode::f64}) {
    if (s == mode_name(m)) return m;
  }
  throw Error("", "--precision", "unknown precision mode", "one of a16q8, a16, w4a4, f32, f64",
              std::string(s));
}

float dot_a16q8_ref(const RowView& w, int64_t row, const Q8Activations& a) {
  const uint8_t* sc = w.row_scales(row);
  float acc = 0.0f;
  for (int64_t b = 0; b < a.blocks(); ++b) {
    if (a.zero[b]) continue;  // the block contributes exactly 0 (acc + 0 is acc; acc starts +0)
    const int64_t lo = b * kQ8Block;
    const int64_t hi = std::min<int64_t>(a.n_in, lo + kQ8Block);
    int64_t T = 0;
    for (int64_t g0 = lo; g0 < hi; g0 += kGroup) {
      int32_t s = 0;
      for (int j = 0; j < kGroup; ++j) s += e2m1_q1(w.code(row, g0 + j)) * a.q[g0 + j];
      T += static_cast<int64_t>(s) * e4m3_q9(sc[g0 / kGroup]);
    }
    float c = static_cast<float>(T) * 0x1p-10f;
    c = c * a.d[b];
    c = c * w.scale2;
    acc = acc + c;
  }
  return half_to_float(float_to_half(acc));
}

float dot_w4a4_ref(const RowView& w, int64_t row, const Fp4Activations& a) {
  const uint8_t* sc = w.row_scales(row);
  int64_t T = 0;
  for (int64_t g = 0; g < w.n_in / kGroup; ++g) {
    int32_t s = 0;
    for (int j = 0; j < kGroup; ++j) {
      const int64_t i = g * kGroup + j;
      const uint8_t ac = (i & 1) ? (a.codes[i >> 1] >> 4) : (a.codes[i >> 1] & 0xF);
      s += e2m1_q1(w.code(row, i)) * e2m1_q1(ac);
    }
    T += static_cast<int64_t>(s) * e4m3_q9(sc[g]) * e4m3_q9(a.scales[g]);
  }
  const float y = ((static_cast<float>(T) * 0x1p-20f) * w.scale2) * a.input_scale;
  return half_to_float(float_to_half(y));
}

float dot_a16_ref(const RowView& w, int64_t row, const float* x) {
  const uint8_t* sc = w.row_scales(row);
  float acc = 0.0f;
  for (int64_t g = 0; g < w.n_in / kGroup; ++g) {
    float s = 0.0f;
    for (int j = 0; j < kGroup; ++j) s += e2m1_to_float(w.code(row, g * kGroup + j)) * x[g * kGroup + j];
    acc += e4m3_to_float(sc[g]) * s;
  }
  return w.scale2 * acc;
}

float dot_f32_ref(const RowView& w, int64_t row, const float* x) {
  const uint8_t* sc = w.row_scales(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < w.n_in; ++i) {
    const float wi = (e2m1_to_float(w.code(row, i)) * e4m3_to_float(sc[i / kGroup])) * w.scale2;
    acc += wi * x[i];
  }
  return acc;
}

double dot_f64_ref(const RowView& w, int64_t row, const double* x) {
  const uint8_t* sc = w.row_scales(row);
  double acc = 0.0;
  for (int64_t i = 0; i < w.n_in; ++i) {
    const double wi = (static_cast<double>(e2m1_to_float(w.code(row, i))) *
                       static_cast<double>(e4m3_to_float(sc[i / kGroup]))) *
                      static_cast<double>(w.scale2);
    acc += wi * x[i];
  }
  return acc;
}

void matvec_f64_ref(const RowView& w, const double* x, int64_t n, double* y) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < w.n_out; ++r) y[t * w.n_out + r] = dot_f64_ref(w, r, x + t * w.n_in);
  }
}

void matvec_ref(Mode mode, const RowView& w, const float* x, int64_t n, float* y,
                float input_scale) {
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * w.n_in;
    float* yt = y + t * w.n_out;
    switch (mode) {
      case Mode::a16q8: {
        Q8Activations a;
        quantize_act_q8(xt, w.n_in, a);
        for (int64_t r = 0; r < w.n_out; ++r) yt[r] = dot_a16q8_ref(w, r, a);
        break;
      }
      case Mode::w4a4: {
        Fp4Activations a;
        quantize_act_fp4(xt, w.n_in, input_scale, a);
        for (int64_t r = 0; r < w.n_out; ++r) yt[r] = dot_w4a4_ref(w, r, a);
        break;
      }
      case Mode::a16:
        for (int64_t r = 0; r < w.n_out; ++r) yt[r] = dot_a16_ref(w, r, xt);
        break;
      case Mode::f32:
        for (int64_t r = 0; r < w.n_out; ++r) yt[r] = dot_f32_ref(w, r, xt);
        break;
      case Mode::f64: {
        std::vector<double> xd(xt, xt + w.n_in);
        for (int64_t r = 0; r < w.n_out; ++r) yt[r] = static_cast<float>(dot_f64_ref(w, r, xd.data()));
        break;
      }
    }
  }
}

}  // namespace nvfp4
