#pragma once
// Arithmetic and comparison operators on tensors and scalars (thin wrappers over the ops).
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>

namespace tg {

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

inline Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, scalar_to_tensor(b)); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, scalar_to_tensor(b)); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, scalar_to_tensor(b)); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, scalar_to_tensor(b)); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return add(scalar_to_tensor(a), b); }
inline Tensor operator-(const Scalar& a, const Tensor& b) { return sub(scalar_to_tensor(a), b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return mul(scalar_to_tensor(a), b); }
inline Tensor operator/(const Scalar& a, const Tensor& b) { return div(scalar_to_tensor(a), b); }

inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, scalar_to_tensor(b)); }
inline Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, scalar_to_tensor(b)); }
inline Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, scalar_to_tensor(b)); }
inline Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, scalar_to_tensor(b)); }
inline Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, scalar_to_tensor(b)); }
inline Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, scalar_to_tensor(b)); }
inline Tensor operator!(const Tensor& a) { return logical_not(a); }
inline Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
inline Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }

inline const Tensor& operator+=(const Tensor& a, const Tensor& b) { return a.add_(b); }
inline const Tensor& operator-=(const Tensor& a, const Tensor& b) { return a.sub_(b); }
inline const Tensor& operator*=(const Tensor& a, const Tensor& b) { return a.mul_(b); }
inline const Tensor& operator/=(const Tensor& a, const Tensor& b) { return a.div_(b); }
inline const Tensor& operator+=(const Tensor& a, const Scalar& b) {
  return a.add_(scalar_to_tensor(b));
}
inline const Tensor& operator-=(const Tensor& a, const Scalar& b) {
  return a.sub_(scalar_to_tensor(b));
}
inline const Tensor& operator*=(const Tensor& a, const Scalar& b) {
  return a.mul_(scalar_to_tensor(b));
}
inline const Tensor& operator/=(const Tensor& a, const Scalar& b) {
  return a.div_(scalar_to_tensor(b));
}

}  // namespace tg
