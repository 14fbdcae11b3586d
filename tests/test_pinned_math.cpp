// The runtime's own exp/log/sin/cos (runtime/pinned_math.h) against libm in long double.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/pinned_math.h"
#include "test_util.h"

using namespace nvfp4;

TEST(PinnedMath, ExpLogSinCosMatchLibm) {
  test::Rng rng(3);
  double worst_exp = 0, worst_log = 0, worst_sc = 0;
  for (int i = 0; i < 200000; ++i) {
    const double u = rng.uniform();
    const double xe = u * 700.0;
    const long double re = std::exp(static_cast<long double>(xe));
    worst_exp = std::max(worst_exp, static_cast<double>(std::fabs((pinned::exp(xe) - re) / re)));
    const double xl = std::ldexp(1.0 + std::fabs(u), static_cast<int>(rng.next() % 200) - 100);
    const long double rl = std::log(static_cast<long double>(xl));
    worst_log = std::max(worst_log, static_cast<double>(std::fabs(pinned::log(xl) - rl) / std::max(1.0L, std::fabs(rl))));
    const double xs = u * 20000.0;
    double s, c;
    pinned::sincos(xs, s, c);
    worst_sc = std::max(worst_sc, static_cast<double>(std::fabs(s - std::sin(static_cast<long double>(xs)))));
    worst_sc = std::max(worst_sc, static_cast<double>(std::fabs(c - std::cos(static_cast<long double>(xs)))));
  }
  EXPECT_LT(worst_exp, 4e-16);
  EXPECT_LT(worst_log, 4e-16);
  EXPECT_LT(worst_sc, 1e-15);
  EXPECT_EQ(pinned::exp(0.0), 1.0);
  EXPECT_EQ(pinned::exp(-1000.0) >= 0.0, true);
  EXPECT_NEAR(pinned::silu(1.0f), 1.0f / (1.0f + std::exp(-1.0f)), 1e-7f);
}
