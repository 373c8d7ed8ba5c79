#pragma once
// C++ overloads of generated ops that a spec cannot express (one spec op has one C++ name).
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>

namespace tg {

/// self^exponent for a number exponent: tg::pow(x, 2.0) (the op is pow_scalar).
inline Tensor pow(const Tensor& self, const Scalar& exponent) { return pow_scalar(self, exponent); }
/// In-place self^exponent for a number exponent.
inline Tensor pow_(const Tensor& self, const Scalar& exponent) {
  return pow_scalar_(self, exponent);
}

/// self with a number where mask is true: tg::masked_fill(x, mask, 0.0) (the op is
/// masked_fill_scalar; a 0-d tensor value calls masked_fill).
inline Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_scalar(self, mask, value);
}
/// In-place masked_fill with a number.
inline Tensor masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_scalar_(self, mask, value);
}

/// The slices at index along dim set to a number: tg::index_fill(x, 0, index, 1.5) (the op is
/// index_fill_scalar; a 0-d tensor value calls index_fill).
inline Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  return index_fill_scalar(self, dim, index, value);
}
/// In-place index_fill with a number.
inline Tensor index_fill_(const Tensor& self, int64_t dim, const Tensor& index,
                          const Scalar& value) {
  return index_fill_scalar_(self, dim, index, value);
}

}  // namespace tg
