// CPU kernels of the binary elementwise ops: add, sub, mul, div, pow, pow_scalar, and where.
// Their arguments (shapes that broadcast, alpha's type) are checked before dispatch
// (ops/checks/elementwise.cpp).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/simd/vec_ops.h>
#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/backends/shared/int_math.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// alpha converted to the compute type T (floating types read it as double, others as int64).
template <typename T> T alpha_as(double alpha_f, int64_t alpha_i) {
  return std::is_floating_point_v<T> ? static_cast<T>(alpha_f) : static_cast<T>(alpha_i);
}

}  // namespace

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (alpha.is_integral() && alpha.to_int() == 1)  // the common case: no multiply
    return binary_op("add", self, other, with_row_kernel<vec::Binary::add>([](auto a, auto b) {
                       return wrapping_add(a, b);
                     }));
  return binary_op("add", self, other,
                   [af = alpha.to_double(), ai = alpha.to_int()](auto a, auto b) {
                     return wrapping_add(a, wrapping_mul(alpha_as<decltype(a)>(af, ai), b));
                   });
}

Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  if (alpha.is_integral() && alpha.to_int() == 1)
    return binary_op<Types::NoBool>("sub", self, other,
                                    with_row_kernel<vec::Binary::sub>(
                                        [](auto a, auto b) { return wrapping_sub(a, b); }));
  return binary_op<Types::NoBool>(
      "sub", self, other, [af = alpha.to_double(), ai = alpha.to_int()](auto a, auto b) {
        return wrapping_sub(a, wrapping_mul(alpha_as<decltype(a)>(af, ai), b));
      });
}

Tensor mul(const Tensor& self, const Tensor& other) {
  return binary_op("mul", self, other, with_row_kernel<vec::Binary::mul>([](auto a, auto b) {
                     return wrapping_mul(a, b);
                   }));
}

// True division: int / int gives float32.
Tensor div(const Tensor& self, const Tensor& other) {
  return binary_float_op("div", self, other,
                         with_row_kernel<vec::Binary::div>([](auto a, auto b) { return a / b; }));
}

namespace {

using shared::power;  // backends/shared/int_math.h: the CUDA kernels use the same rule

}  // namespace

// Floating powers run on SLEEF's pow (1 ULP, C99's special cases: docs/SEMANTICS.md) when built
// with it; integers and the scalar fallback take shared::power (std::pow for floating types).
Tensor pow(const Tensor& self, const Tensor& exponent) {
  const DType dtype = result_type(self, exponent);
  if (vec_runs(dtype)) return binary_math_op("pow", self, exponent, dtype, vec::BinaryMath::pow);
  return binary_op<Types::NoBool>("pow", self, exponent,
                                  [](auto a, auto b) { return power(a, b); });
}

Tensor pow_scalar(const Tensor& self, const Scalar& exponent) {
  const Tensor e = scalar_to_tensor(exponent, self.device());
  if (exponent.equals(2.0))  // x * x is exact and much faster than std::pow
    return binary_op<Types::NoBool>("pow_scalar", self, e,
                                    [](auto a, auto) { return wrapping_mul(a, a); });
  const DType dtype = result_type(self, e);
  if (vec_runs(dtype))
    return binary_scalar_math_op("pow_scalar", self, exponent, dtype, vec::BinaryMath::pow);
  return binary_op<Types::NoBool>("pow_scalar", self, e,
                                  [](auto a, auto b) { return power(a, b); });
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  const Shape shape =
      broadcast_shapes("where", broadcast_pair("where", condition, self), other.shape());
  const DType dtype = result_type(self, other);
  Tensor out = empty(shape, dtype, self.device());
  visit_dtype("where", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<T, bool, T, T>(
        out, [](bool c, T a, T b) { return select_bits(c, a, b); }, condition, self, other);
  });
  return out;
}

}  // namespace tg::cpu
