// exp, log, sin and cos from IEEE double +, -, *, / only (correctly rounded everywhere, no fused
// multiply-add: the build uses -ffp-contract=off), so the runtime's float steps give the same bits on
// every machine, ISA and libm. Accuracy: a few double ulps over the ranges the runtime uses
// (|x| < 700 for exp, |x| < 2^20 for sin/cos), far below float's resolution.
#pragma once

namespace nvfp4::pinned {

double exp(double x);           // x clamped to [-708, 709]
double log(double x);           // x > 0, finite
void sincos(double x, double& s, double& c);

// SiLU in float with the pinned exp: x / (1 + e^-x), computed in double, rounded once.
float silu(float x);

}  // namespace nvfp4::pinned
