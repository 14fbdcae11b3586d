// pinned::exp and the two loops that call it most (softmax numerators, SwiGLU) written once over
// a vector of double lanes. V is a traits struct of one ISA (pinned_exp_avx2.h: 4 lanes,
// pinned_exp_avx512.h: 8 lanes) whose functions are single instructions. Every lane performs the
// scalar function's IEEE operations in its order (the build forbids contraction, so each mul and
// add is one rounding), hence the same bits; tests/test_pinned_math.cpp checks that against the
// scalar code. Included only through those two headers.
#pragma once
#include <cstdint>

#include "kernels/pinned_math.h"

namespace nvfp4::pinned {
namespace {

template <class V>
inline typename V::D exp_vec(typename V::D x) {
  // The clamps as the scalar ternaries: a NaN fails both comparisons and stays NaN.
  x = V::select_lt(x, V::set(-700.0), V::set(-700.0));
  x = V::select_gt(x, V::set(709.0), V::set(709.0));
  const typename V::D round = V::set(6755399441055744.0);
  const typename V::D k = V::sub(V::add(V::mul(x, V::set(1.4426950408889634)), round), round);
  const typename V::D r = V::sub(V::sub(x, V::mul(k, V::set(6.93147180369123816490e-01))),
                                 V::mul(k, V::set(1.90821492927058770002e-10)));
  typename V::D p = V::set(1.0 / 6227020800.0);
  const double c[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                      1.0};
  for (double ci : c) p = V::add(V::mul(p, r), V::set(ci));
  // 2^k: k is an integer in [-1010, 1023], exact in int32.
  return V::mul(p, V::pow2(k));
}

// out[j] = float(exp(double(s[j] - mx))) for j in [0, n); out may be s.
template <class V>
inline void exp_shifted_vec(const float* s, float mx, float* out, int64_t n) {
  int64_t j = 0;
  // Four vectors an iteration: the polynomial is one chain of dependent multiplies and adds, and
  // four independent chains keep the FP ports busy (one alone waited on their latency).
  constexpr int64_t L = V::kLanes;
  for (; j + 4 * L <= n; j += 4 * L) {
    const typename V::D x0 = exp_vec<V>(V::load_f_minus(s + j, mx));
    const typename V::D x1 = exp_vec<V>(V::load_f_minus(s + j + L, mx));
    const typename V::D x2 = exp_vec<V>(V::load_f_minus(s + j + 2 * L, mx));
    const typename V::D x3 = exp_vec<V>(V::load_f_minus(s + j + 3 * L, mx));
    V::store_f(out + j, V::to_f(x0));
    V::store_f(out + j + L, V::to_f(x1));
    V::store_f(out + j + 2 * L, V::to_f(x2));
    V::store_f(out + j + 3 * L, V::to_f(x3));
  }
  for (; j + L <= n; j += L) V::store_f(out + j, V::to_f(exp_vec<V>(V::load_f_minus(s + j, mx))));
  if (j == n) return;
  // The rest in one vector through a buffer padded with mx (its lanes unused): each lane is the
  // scalar function's operations, and the scalar pinned::exp costs about a vector's time per value.
  float in[V::kLanes], res[V::kLanes];
  for (int64_t l = 0; l < V::kLanes; ++l) in[l] = j + l < n ? s[j + l] : mx;
  V::store_f(res, V::to_f(exp_vec<V>(V::load_f_minus(in, mx))));
  for (int64_t l = 0; j + l < n; ++l) out[j + l] = res[l];
}

// g[i] = float(g / (1 + exp(-g))) * u[i], the SiLU in double as pinned::silu.
template <class V>
inline void swiglu_vec(float* g, const float* u, int64_t n) {
  constexpr int64_t L = V::kLanes;
  int64_t i = 0;
  // Two vectors an iteration (each exp is one dependent chain), then one.
  for (; i + 2 * L <= n; i += 2 * L) {
    const typename V::D a = V::load_f(g + i), b = V::load_f(g + i + L);
    const typename V::D ea = exp_vec<V>(V::neg(a)), eb = exp_vec<V>(V::neg(b));
    V::store_f_times(g + i, V::to_f(V::div(a, V::add(V::set(1.0), ea))), u + i);
    V::store_f_times(g + i + L, V::to_f(V::div(b, V::add(V::set(1.0), eb))), u + i + L);
  }
  for (; i + L <= n; i += L) {
    const typename V::D x = V::load_f(g + i);
    const typename V::D e = exp_vec<V>(V::neg(x));
    V::store_f_times(g + i, V::to_f(V::div(x, V::add(V::set(1.0), e))), u + i);
  }
  for (; i < n; ++i) g[i] = silu(g[i]) * u[i];
}

// g[i] = float(gelu_tanh(g[i])) * u[i] in pinned::gelu_tanh's operations and order, lane by lane
// (tanh(t) = 1 - 2 / (exp(2t) + 1)); two vectors an iteration.
template <class V>
inline typename V::D gelu_tanh_vec(typename V::D x) {
  const typename V::D c = V::mul(V::mul(V::mul(V::set(0.044715), x), x), x);
  const typename V::D t = V::mul(V::set(kGeluC), V::add(x, c));
  const typename V::D e = exp_vec<V>(V::mul(V::set(2.0), t));
  const typename V::D th = V::sub(V::set(1.0), V::div(V::set(2.0), V::add(e, V::set(1.0))));
  return V::mul(V::mul(V::set(0.5), x), V::add(V::set(1.0), th));
}
template <class V>
inline void geglu_vec(float* g, const float* u, int64_t n) {
  constexpr int64_t L = V::kLanes;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const typename V::D a = gelu_tanh_vec<V>(V::load_f(g + i)), b = gelu_tanh_vec<V>(V::load_f(g + i + L));
    V::store_f_times(g + i, V::to_f(a), u + i);
    V::store_f_times(g + i + L, V::to_f(b), u + i + L);
  }
  for (; i < n; ++i) g[i] = gelu_tanh(g[i]) * u[i];
}

// x[i] = float(x / (1 + exp(-x))) in place, pinned::silu lane by lane; two vectors an iteration
// (each exp is one dependent chain).
template <class V>
inline void silu_vec(float* x, int64_t n) {
  constexpr int64_t L = V::kLanes;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const typename V::D a = V::load_f(x + i), b = V::load_f(x + i + L);
    const typename V::D ea = exp_vec<V>(V::neg(a)), eb = exp_vec<V>(V::neg(b));
    V::store_f(x + i, V::to_f(V::div(a, V::add(V::set(1.0), ea))));
    V::store_f(x + i + L, V::to_f(V::div(b, V::add(V::set(1.0), eb))));
  }
  for (; i < n; ++i) x[i] = silu(x[i]);
}

}  // namespace
}  // namespace nvfp4::pinned
