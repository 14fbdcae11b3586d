// Reference kernels of SPEC.md section 5: portable C++, no intrinsics, the source of truth that
// every ISA variant is tested against. Layout of a window of N activation columns: x[t*n_in + i],
// y[t*n_out + r] (each token's vector contiguous).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "nvfp4/matrix.h"

namespace nvfp4 {

enum class Mode { a16, a16q8, w4a4, f32, f64 };
std::string_view mode_name(Mode m);
// Parses "a16", "a16q8", "w4a4", "f32", "f64"; throws nvfp4::Error on anything else.
Mode parse_mode(std::string_view s);

// ---- a16q8 activations: per 256-value block (the last may be shorter) -----------------------
inline constexpr int kQ8Block = 256;
struct Q8Activations {
  int64_t n_in = 0;
  std::vector<int8_t> q;  // [n_in]
  std::vector<float> d;   // per block: 1.0f / iscale (0 for a block whose m == 0)
  std::vector<uint8_t> zero;  // per block: 1 when m == 0 (the block contributes 0)
  int64_t blocks() const { return (n_in + kQ8Block - 1) / kQ8Block; }
};
// m = the signed value of the first element of largest magnitude; iscale = -127/m;
// q = min(127, round_half_even(x * iscale)).
void quantize_act_q8(const float* x, int64_t n_in, Q8Activations& out);

// ---- w4a4 activations: per 16 values, E2M1 + E4M3 as SPEC.md section 4 with scale2 := input_scale
struct Fp4Activations {
  int64_t n_in = 0;
  std::vector<uint8_t> codes;   // [n_in/2], row layout nibbles
  std::vector<uint8_t> scales;  // [n_in/16]
  float input_scale = 1.0f;
};
void quantize_act_fp4(const float* x, int64_t n_in, float input_scale, Fp4Activations& out);

// ---- one row, one column: the pinned arithmetic ------------------------------------------------
float dot_a16q8_ref(const RowView& w, int64_t row, const Q8Activations& a);
float dot_w4a4_ref(const RowView& w, int64_t row, const Fp4Activations& a);
float dot_a16_ref(const RowView& w, int64_t row, const float* x);
float dot_f32_ref(const RowView& w, int64_t row, const float* x);
double dot_f64_ref(const RowView& w, int64_t row, const double* x);

// ---- a window of N columns --------------------------------------------------------------------
// input_scale is used by w4a4 only. For f64 the result is rounded to float at the end; use
// matvec_f64_ref for the double result.
void matvec_ref(Mode mode, const RowView& w, const float* x, int64_t n, float* y,
                float input_scale = 1.0f);
void matvec_f64_ref(const RowView& w, const double* x, int64_t n, double* y);

}  // namespace nvfp4
