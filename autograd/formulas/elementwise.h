#pragma once
// Backward helpers for the elementwise op family (namespace tg::formulas). Each is written with
// public ops, so double backward works through them.
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace tg::formulas {

// grad where keep is true, 0 elsewhere (0 as a wrapped number: the result keeps grad's dtype).
inline Tensor keep_where(const Tensor& keep, const Tensor& grad) {
  return where(keep, grad, scalar_to_tensor(0, grad.device()));
}

// 0 where zero is true, grad elsewhere.
inline Tensor zero_where(const Tensor& zero, const Tensor& grad) {
  return where(zero, scalar_to_tensor(0, grad.device()), grad);
}

// grad * alpha, skipping the multiply when alpha is 1 (add's and sub's `other`).
inline Tensor maybe_multiply(const Tensor& grad, const Scalar& alpha) {
  return alpha.equals(1.0) ? grad : grad * alpha;
}

// d(self^exponent)/dself = exponent * self^(exponent - 1), and 0 where exponent == 0 (so that
// 0^0 gets gradient 0 rather than nan), as PyTorch's pow_backward.
inline Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  return zero_where(exponent == 0, grad * exponent * pow(self, exponent - 1));
}

// d(self^exponent)/dexponent = self^exponent * log(self), taken as 0 where self == 0 and
// exponent >= 0 (its limit there; log(0) would give nan).
inline Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                                    const Tensor& result) {
  return zero_where(logical_and(self == 0, exponent >= 0), grad * result * log(self));
}

// d(self^e)/dself for a Scalar exponent: e * self^(e - 1), and 0 when e == 0.
inline Tensor pow_scalar_backward(const Tensor& grad, const Tensor& self, const Scalar& exponent) {
  if (exponent.equals(0.0)) return zeros_like(grad);
  // e - 1 stays an integer where it can; the most negative int64 has no integer e - 1, so it steps
  // to double there (PyTorch takes every real exponent as double in this formula).
  const bool integer_step =
      !exponent.is_floating() && exponent.to_int() != std::numeric_limits<std::int64_t>::min();
  const Scalar exponent_minus_1 =
      integer_step ? Scalar(exponent.to_int() - 1) : Scalar(exponent.to_double() - 1);
  return grad * exponent * pow_scalar(self, exponent_minus_1);
}

// clamp passes the gradient where min <= self <= max (bounds included, as PyTorch), 0 elsewhere.
inline Tensor clamp_backward(const Tensor& grad, const Tensor& self,
                             const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  if (min && max) return keep_where(logical_and(self >= *min, self <= *max), grad);
  if (min) return keep_where(self >= *min, grad);
  return keep_where(self <= *max, grad);
}

}  // namespace tg::formulas
