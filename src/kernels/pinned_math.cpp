// Polynomial kernels after Cody-Waite range reduction. Rounding to an integer uses the
// 1.5 * 2^52 trick (exact for |v| < 2^51) instead of nearbyint, so no libm call is involved.
#include "kernels/pinned_math.h"

#include <cstdint>
#include <cstring>

namespace nvfp4::pinned {

namespace {
constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52

double round_int(double v) {
  volatile double t = v + kRound;  // volatile: keep the two roundings as written
  return t - kRound;
}

}  // namespace

double log(double x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716.
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  int64_t e = static_cast<int64_t>((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
  std::memcpy(&m, &bits, 8);
  if (m > 1.4142135623730951) { m *= 0.5; ++e; }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  // atanh(s) = s (1 + s^2/3 + s^4/5 + ...), to s^24 (remainder < 1e-19).
  double p = 1.0 / 25.0;
  for (int k = 23; k >= 1; k -= 2) p = p * s2 + 1.0 / k;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  const double ed = static_cast<double>(e);
  return (ed * kLn2Hi + 2.0 * s * p) + ed * kLn2Lo;
}

void sincos(double x, double& s, double& c) {
  // x = k * pi/2 + r, |r| <= pi/4, pi/2 in three parts of 33 bits each (exact products k * part
  // for |k| < 2^20).
  constexpr double kTwoOverPi = 0.63661977236758134308;
  constexpr double kP1 = 1.57079632673412561417e+00;
  constexpr double kP2 = 6.07710050630396597660e-11;
  constexpr double kP3 = 2.02226624879595063154e-21;
  const double k = round_int(x * kTwoOverPi);
  const double r = ((x - k * kP1) - k * kP2) - k * kP3;
  const double r2 = r * r;
  // sin r = r (1 - r^2/3! + ...) to r^19; cos r = 1 - r^2/2! + ... to r^20.
  double ps = -1.0 / 121645100408832000.0, pc = 1.0 / 2432902008176640000.0;
  const double fs[] = {1.0 / 355687428096000.0, -1.0 / 1307674368000.0, 1.0 / 6227020800.0,
                       -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0, 1.0};
  const double fc[] = {-1.0 / 6402373705728000.0, 1.0 / 20922789888000.0, -1.0 / 87178291200.0,
                       1.0 / 479001600.0, -1.0 / 3628800.0, 1.0 / 40320.0, -1.0 / 720.0, 1.0 / 24.0,
                       -0.5, 1.0};
  for (double f : fs) ps = ps * r2 + f;
  for (double f : fc) pc = pc * r2 + f;
  const double sr = r * ps, cr = pc;
  switch (static_cast<int64_t>(k) & 3) {
    case 0: s = sr; c = cr; break;
    case 1: s = cr; c = -sr; break;
    case 2: s = -sr; c = -cr; break;
    default: s = -cr; c = sr; break;
  }
}

}  // namespace nvfp4::pinned
