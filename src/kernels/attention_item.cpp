// attention_item and swiglu at baseline x86-64 (an F16 or E4M3 cache widened one value at a time), and
// swiglu_rows, which runs the active ISA's variant from the dispatch table.
#include "kernels/attention_item.h"
#include "kernels/attention_kernels.h"
#include "kernels/packed.h"
#include "nvfp4/codec.h"
#include "nvfp4/kernels.h"

namespace nvfp4 {

void swiglu_scalar(float* g, const float* u, int64_t n) { swiglu(g, u, n); }
void geglu_scalar(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = pinned::gelu_tanh(g[i]) * u[i];
}
void silu_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = pinned::silu(x[i]);
}
void exp_shifted_scalar(const float* s, float mx, float* out, int64_t n) { exp_shifted_scalar_body(s, mx, out, n); }

void to_half_scalar(const float* f, uint16_t* h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = float_to_half(f[i]);
}

void swiglu_rows(float* g, const float* u, int64_t n) { kern::table(active_isa()).swiglu(g, u, n); }
void silu_rows(float* x, int64_t n) { kern::table(active_isa()).silu(x, n); }
void geglu_rows(float* g, const float* u, int64_t n) { kern::table(active_isa()).geglu(g, u, n); }

namespace {
// 16 F16 values widened one by one (baseline x86-64 has no F16C).
// Baseline x86-64 (SSE2): 4 float lanes, 16 xmm registers.
struct ShapeSse2 {
  static constexpr int kW = 4, kRegs = 16;
  static constexpr int64_t kKeys = 32, kDims = 16;
};
inline void widen16_scalar(const uint16_t* h, float* f) {
  for (int i = 0; i < 16; ++i) f[i] = half_to_float(h[i]);
}
// 16 E4M3 bytes widened one by one at mul = 256 * scale (attention_item.h).
struct WidenE4m3Scalar {
  float mul;
  void operator()(const uint8_t* b, float* f) const {
    for (int i = 0; i < 16; ++i) f[i] = e4m3_widened(b[i], mul);
  }
};
}  // namespace

void attention_item_scalar(const void* it) {
  attention_item<ShapeSse2, WidenE4m3Scalar>(*static_cast<const AttnItem*>(it), exp_shifted_scalar_body, widen16_scalar);
}
void attention_phase_scalar(const void* it, int phase, int64_t b, int64_t e) {
  attention_phase<ShapeSse2, WidenE4m3Scalar>(*static_cast<const AttnItem*>(it), static_cast<AttnPhase>(phase), b, e,
                          exp_shifted_scalar_body, widen16_scalar);
}

}  // namespace nvfp4
