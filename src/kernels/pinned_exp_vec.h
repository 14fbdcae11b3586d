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

// An empty asm that claims to change v: the value is in a register here, after what came before.
// (GCC's expansion of single-use chains, TER, otherwise regathers each vector's polynomial into
// one run, undoing the side-by-side order below.) It changes no value.
template <class D>
inline void settle(D& v) {
  asm("" : "+v"(v));
}

// exp of N vectors, each lane pinned::exp's operations in its order; the N vectors go step by
// step side by side. The polynomial is one chain of dependent multiplies and adds per vector:
// written vector after vector, the chains reached the scheduler one after another and the FP
// ports waited on latency (AVX2 softmax at ~9 cycles a value); interleaved, N chains overlap.
template <class V, int N>
inline void exp_vec_n(typename V::D (&x)[N]) {
  using D = typename V::D;
  D k[N], r[N], p[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    // The clamps as the scalar ternaries: a NaN fails both comparisons and stays NaN.
    x[i] = V::select_lt(x[i], V::set(-700.0), V::set(-700.0));
    x[i] = V::select_gt(x[i], V::set(709.0), V::set(709.0));
  }
  const D round = V::set(6755399441055744.0);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) k[i] = V::sub(V::add(V::mul(x[i], V::set(1.4426950408889634)), round), round);
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i)
    r[i] = V::sub(V::sub(x[i], V::mul(k[i], V::set(6.93147180369123816490e-01))),
                  V::mul(k[i], V::set(1.90821492927058770002e-10)));
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) p[i] = V::set(1.0 / 6227020800.0);
  const double c[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                      1.0};
#pragma GCC unroll 16
  for (double ci : c)
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) {
      p[i] = V::add(V::mul(p[i], r[i]), V::set(ci));
      if constexpr (N > 1) settle(p[i]);
    }
  // 2^k: k is an integer in [-1010, 1023], exact in int32.
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) x[i] = V::mul(p[i], V::pow2(k[i]));
}

template <class V>
inline typename V::D exp_vec(typename V::D x) {
  typename V::D v[1] = {x};
  exp_vec_n<V, 1>(v);
  return v[0];
}

// out[j] = float(exp(double(s[j] - mx))) for j in [0, n); out may be s.
template <class V>
inline void exp_shifted_vec(const float* s, float mx, float* out, int64_t n) {
  int64_t j = 0;
  // Eight vectors an iteration side by side (exp_vec_n: with four, the chains' latency still
  // bounded AVX2), then four, then one at a time.
  constexpr int64_t L = V::kLanes;
  const auto block = [&]<int N>() {
    typename V::D x[N];
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) x[i] = V::load_f_minus(s + j + i * L, mx);
    exp_vec_n<V, N>(x);
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) V::store_f(out + j + i * L, V::to_f(x[i]));
    j += N * L;
  };
  while (j + 8 * L <= n) block.template operator()<8>();
  if (j + 4 * L <= n) block.template operator()<4>();
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
    typename V::D e[2] = {V::neg(a), V::neg(b)};
    exp_vec_n<V, 2>(e);
    V::store_f_times(g + i, V::to_f(V::div(a, V::add(V::set(1.0), e[0]))), u + i);
    V::store_f_times(g + i + L, V::to_f(V::div(b, V::add(V::set(1.0), e[1]))), u + i + L);
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
    typename V::D e[2] = {V::neg(a), V::neg(b)};
    exp_vec_n<V, 2>(e);
    V::store_f(x + i, V::to_f(V::div(a, V::add(V::set(1.0), e[0]))));
    V::store_f(x + i + L, V::to_f(V::div(b, V::add(V::set(1.0), e[1]))));
  }
  for (; i < n; ++i) x[i] = silu(x[i]);
}

}  // namespace
}  // namespace nvfp4::pinned
