// exp, log, sin and cos from IEEE double +, -, *, / only (correctly rounded everywhere, no fused
// multiply-add: the build uses -ffp-contract=off), so the runtime's float steps give the same bits on
// every machine, ISA and libm. Accuracy: a few double ulps over the ranges the runtime uses
// (|x| < 700 for exp, |x| < 2^20 for sin/cos), far below float's resolution.
#pragma once
#include <bit>
#include <cstdint>

namespace nvfp4::pinned {

// exp(x) for x clamped to [-700, 709] (e^-700 is already 0 in float). Inline and branch-free so
// that loops over it vectorize; the vector code performs the same IEEE operations per element.
inline double exp(double x) {
  x = x < -700.0 ? -700.0 : x;
  x = x > 709.0 ? 709.0 : x;
  constexpr double kInvLn2 = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 32 significant bits
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: (v + kRound) - kRound rounds v
  const double t = x * kInvLn2 + kRound;  // k + 1.5 * 2^52: k sits in t's low significand bits
  const double k = t - kRound;             // not folded: no fast-math in this build
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;  // |r| <= 0.3466
  // Taylor series to r^13 (remainder < 2e-17 relative), Horner from the highest term.
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // k in [-1010, 1023], read from t's bits (two's complement in the low 32): a cast of a NaN k
  // (NaN input) would be undefined; this way a NaN input just gives NaN, as the vector code does.
  const int64_t ki = static_cast<int32_t>(static_cast<uint32_t>(std::bit_cast<uint64_t>(t)));
  return p * std::bit_cast<double>(static_cast<uint64_t>(ki + 1023) << 52);
}

double log(double x);           // x > 0, finite
void sincos(double x, double& s, double& c);

// tanh(x) = 1 - 2 / (e^(2x) + 1) from the pinned exp (exp's clamp keeps it finite: +-1 far out).
inline double tanh(double x) { return 1.0 - 2.0 / (exp(2.0 * x) + 1.0); }

// SiLU in float with the pinned exp: x / (1 + e^-x), computed in double, rounded once.
inline float silu(float x) {
  const double xd = x;
  return static_cast<float>(xd / (1.0 + exp(-xd)));
}

// gelu with tanh (transformers' gelu_pytorch_tanh): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// in double from the pinned exp, rounded once (Gemma 4's MLP, experts and per-layer embeddings).
inline constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
inline float gelu_tanh(float x) {
  const double xd = x;
  return static_cast<float>(0.5 * xd * (1.0 + tanh(kGeluC * (xd + 0.044715 * xd * xd * xd))));
}

}  // namespace nvfp4::pinned
