#pragma once
// C++ overloads of generated ops that a spec cannot express (one spec op has one C++ name).
#include <tapegrad/core/tensor.h>
#include <tapegrad/generated/functions.h>

namespace tg {

/// self^exponent for a number exponent: tg::pow(x, 2.0) (the op is pow_scalar).
inline Tensor pow(const Tensor& self, const Scalar& exponent) { return pow_scalar(self, exponent); }
/// In-place self^exponent for a number exponent.
inline Tensor pow_(const Tensor& self, const Scalar& exponent) {
  return pow_scalar_(self, exponent);
}

}  // namespace tg
