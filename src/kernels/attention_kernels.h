// The per-ISA variants of attention's inner item and of SwiGLU (kernels/attention_item.h compiled
// once per ISA: attention_item.cpp, attention_item_avx2.cpp, attention_item_avx512.cpp), which the
// dispatch table (dispatch.cpp) holds; the attention op over the KV cache (ops/attention.cpp)
// runs them through that table.
#pragma once
#include <cstdint>

namespace nvfp4 {

// g[i] = silu(g[i]) * u[i] for i < n, vectorized for the active ISA (same bits on each).
void swiglu_rows(float* g, const float* u, int64_t n);
// x[i] = silu(x[i]) in place (pinned::silu's bits), vectorized for the active ISA.
void silu_rows(float* x, int64_t n);
// g[i] = gelu_tanh(g[i]) * u[i] (pinned::gelu_tanh's bits; Gemma 4), vectorized for the active ISA.
void geglu_rows(float* g, const float* u, int64_t n);

// The per-ISA bodies behind swiglu_rows and the softmax numerators (exp_shifted: out[j] =
// float(exp(double(s[j] - mx)))), exposed so the tests can hold every compiled variant to the
// scalar one; call the avx2/avx512 ones only where the CPU has them.
void swiglu_scalar(float* g, const float* u, int64_t n);
void swiglu_avx2(float* g, const float* u, int64_t n);
void swiglu_avx512(float* g, const float* u, int64_t n);
void silu_scalar(float* x, int64_t n);
void silu_avx2(float* x, int64_t n);
void silu_avx512(float* x, int64_t n);
void geglu_scalar(float* g, const float* u, int64_t n);
void geglu_avx2(float* g, const float* u, int64_t n);
void geglu_avx512(float* g, const float* u, int64_t n);
void exp_shifted_scalar(const float* s, float mx, float* out, int64_t n);
void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n);
void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n);
// h[i] = float_to_half(f[i]) for i < n (round to nearest even; the KV cache's stores): F16C's
// vcvtps2ph with its rounding set to nearest even is that conversion for every float, NaNs
// included (quieted, the top mantissa bits kept).
void to_half_scalar(const float* f, uint16_t* h, int64_t n);
void to_half_avx2(const float* f, uint16_t* h, int64_t n);
void to_half_avx512(const float* f, uint16_t* h, int64_t n);

// One attention item (an AttnItem of kernels/attention_item.h, passed as void*) and one phase of
// it over positions [b, e), per ISA.
void attention_item_scalar(const void* item);
void attention_item_avx2(const void* item);
void attention_item_avx512(const void* item);
void attention_phase_scalar(const void* item, int phase, int64_t b, int64_t e);
void attention_phase_avx2(const void* item, int phase, int64_t b, int64_t e);
void attention_phase_avx512(const void* item, int phase, int64_t b, int64_t e);

}  // namespace nvfp4
