// CPU kernels of the unary elementwise ops: neg, abs, sign, relu, clamp (same dtype as self) and
// exp, log, sqrt, rsqrt, log1p, expm1, erf, sigmoid, tanh, softplus (floating: integer inputs give
// float32; these run on SLEEF's vector kernels when built with it, simd/vec_ops.h, the lambdas
// being the fallback).
#include <cmath>
#include <limits>
#include <type_traits>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/simd/vec_ops.h>
#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

Tensor neg(const Tensor& self) {
  return unary_op<Types::NoBool>("neg", self, [](auto x) { return wrapping_neg(x); });
}

Tensor abs(const Tensor& self) {
  return unary_op<Types::NoBool>("abs", self, [](auto x) {
    if constexpr (kWraps<decltype(x)>)
      return x < 0 ? wrapping_neg(x) : x;  // abs(INT_MIN) is INT_MIN, as in PyTorch
    else
      return std::abs(x);
  });
}

Tensor sign(const Tensor& self) {
  return unary_op("sign", self, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_same_v<T, bool>) {
      return x;  // sign(true) = true, sign(false) = false
    } else {
      return static_cast<T>((T(0) < x) - (x < T(0)));
    }
  });
}

Tensor relu(const Tensor& self) {
  // x < 0 rather than x > 0 so that NaN passes through, as in PyTorch.
  return unary_op<Types::NoBool>("relu", self, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}

namespace {

// The bound used when clamp is given no min (or no max): -inf / +inf, or the integer limits.
template <typename T> T no_lower_bound() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}
template <typename T> T no_upper_bound() {
  if constexpr (std::numeric_limits<T>::has_infinity)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

}  // namespace

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max) {
  // A floating bound makes an integer tensor's result float32, as in PyTorch.
  const DType dtype = promote_types(min ? result_type(self, *min) : self.dtype(),
                                    max ? result_type(self, *max) : self.dtype());
  Tensor out = empty(self.shape(), dtype, self.device());
  visit<Types::NoBool>("clamp", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T lo = min ? min->to<T>() : no_lower_bound<T>();
    const T hi = max ? max->to<T>() : no_upper_bound<T>();
    // min first, then max (so max wins when min > max); NaN passes through.
    map_into<T, T>(
        out,
        [lo, hi](T x) {
          const T at_least_lo = x < lo ? lo : x;
          return at_least_lo > hi ? hi : at_least_lo;
        },
        self);
  });
  return out;
}

Tensor exp(const Tensor& self) {
  return unary_math_op("exp", self, vec::Unary::exp, [](auto x) { return std::exp(x); });
}

Tensor log(const Tensor& self) {
  return unary_math_op("log", self, vec::Unary::log, [](auto x) { return std::log(x); });
}

Tensor sqrt(const Tensor& self) {
  return unary_math_op("sqrt", self, vec::Unary::sqrt, [](auto x) { return std::sqrt(x); });
}

Tensor rsqrt(const Tensor& self) {
  return unary_math_op("rsqrt", self, vec::Unary::rsqrt,
                       [](auto x) { return decltype(x)(1) / std::sqrt(x); });
}

Tensor log1p(const Tensor& self) {
  return unary_math_op("log1p", self, vec::Unary::log1p, [](auto x) { return std::log1p(x); });
}

Tensor expm1(const Tensor& self) {
  return unary_math_op("expm1", self, vec::Unary::expm1, [](auto x) { return std::expm1(x); });
}

Tensor erf(const Tensor& self) {
  return unary_math_op("erf", self, vec::Unary::erf, [](auto x) { return std::erf(x); });
}

Tensor sigmoid(const Tensor& self) {
  // As the vector kernel: exp(-|x|) never overflows, so very negative x keep their tiny result.
  return unary_math_op("sigmoid", self, vec::Unary::sigmoid, [](auto x) {
    using T = decltype(x);
    const T e = std::exp(-std::abs(x));
    return x < T(0) ? e / (T(1) + e) : T(1) / (T(1) + e);
  });
}

Tensor tanh(const Tensor& self) {
  return unary_math_op("tanh", self, vec::Unary::tanh, [](auto x) { return std::tanh(x); });
}

}  // namespace tg::cpu

namespace tg::cpu {

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|): never overflows, exact for large |x|.
Tensor softplus(const Tensor& self) {
  return unary_math_op("softplus", self, vec::Unary::softplus, [](auto x) {
    using T = decltype(x);
    return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
  });
}

}  // namespace tg::cpu
