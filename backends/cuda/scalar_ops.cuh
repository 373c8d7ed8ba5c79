#pragma once
// The per-element math of the elementwise ops, as __host__ __device__ functions: one definition
// for the GPU and the emulation, with the same formulas as the CPU kernels (backends/cpu/unary.cpp,
// binary.cpp, nn_activation.cpp) so that results agree to rounding.
#include <cmath>
#include <type_traits>

#include <tapegrad/backends/shared/int_math.h>

#include "cuda_utils.h"
#include "math.cuh"

namespace tg::cuda::detail {

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluBeta = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

using ::tg::shared::power;  // one rule with the CPU (backends/shared/int_math.h)

// -x; integers wrap (computed unsigned) instead of overflowing on the lowest value.
template <typename T> __host__ __device__ inline T negate(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return -x;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  }
}
// std::max(x, 0) and std::min(x, 0) exactly, NaN included (the CPU kernels use those).
template <typename T> __host__ __device__ inline T std_max0(T x) { return x < T(0) ? T(0) : x; }
template <typename T> __host__ __device__ inline T std_min0(T x) { return T(0) < x ? T(0) : x; }

template <UnaryKind K, typename T> __host__ __device__ inline T unary_value(T x, T p0, T p1) {
  if constexpr (K == UnaryKind::Neg) {
    return negate(x);
  } else if constexpr (K == UnaryKind::Abs) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(x);
    } else {
      return x < T(0) ? negate(x) : x;
    }
  } else if constexpr (K == UnaryKind::Sign) {
    if constexpr (std::is_same_v<T, bool>) {
      return x;
    } else {
      return static_cast<T>((T(0) < x) - (x < T(0)));
    }
  } else if constexpr (K == UnaryKind::Relu) {
    return x < 0 ? T(0) : x;  // NaN passes through
  } else if constexpr (K == UnaryKind::Clamp) {
    const T at_least_lo = x < p0 ? p0 : x;  // min first, then max; NaN passes through
    return at_least_lo > p1 ? p1 : at_least_lo;
  } else if constexpr (K == UnaryKind::Exp) {
    return std::exp(x);
  } else if constexpr (K == UnaryKind::Log) {
    return std::log(x);
  } else if constexpr (K == UnaryKind::Sqrt) {
    return std::sqrt(x);
  } else if constexpr (K == UnaryKind::Rsqrt) {
    return T(1) / std::sqrt(x);  // as the CPU: two correctly rounded steps
  } else if constexpr (K == UnaryKind::Log1p) {
    return std::log1p(x);
  } else if constexpr (K == UnaryKind::Expm1) {
    return std::expm1(x);
  } else if constexpr (K == UnaryKind::Erf) {
    return std::erf(x);
  } else if constexpr (K == UnaryKind::Sigmoid) {
    return T(1) / (T(1) + std::exp(-x));
  } else if constexpr (K == UnaryKind::Tanh) {
    return std::tanh(x);
  } else if constexpr (K == UnaryKind::Softplus) {
    return std_max0(x) + std::log1p(std::exp(-std::abs(x)));
  } else if constexpr (K == UnaryKind::GeluErf) {
    return T(0.5) * x * (T(1) + std::erf(x * T(kSqrt1_2)));
  } else if constexpr (K == UnaryKind::GeluTanh) {
    const T inner = T(kGeluBeta) * (x + T(kGeluKappa) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  } else {
    static_assert(K == UnaryKind::LeakyRelu);
    (void)p1;
    return std_max0(x) + p0 * std_min0(x);
  }
}

template <BinaryKind K, typename T> __host__ __device__ inline T binary_value(T a, T b, T alpha) {
  // Integers wrap on overflow (math.cuh); bool add is an "or", bool mul an "and".
  if constexpr (K == BinaryKind::Add) {
    return wrapping_add(a, wrapping_mul(alpha, b));
  } else if constexpr (K == BinaryKind::Sub) {
    return wrapping_sub(a, wrapping_mul(alpha, b));
  } else if constexpr (K == BinaryKind::Mul) {
    return wrapping_mul(a, b);
  } else if constexpr (K == BinaryKind::Div) {
    return a / b;
  } else if constexpr (K == BinaryKind::Pow) {
    return power(a, b);
  } else if constexpr (K == BinaryKind::ReluBackward) {
    return b > T(0) ? a : T(0);
  } else if constexpr (K == BinaryKind::LeakyReluBackward) {
    return b > T(0) ? a : a * alpha;
  } else if constexpr (K == BinaryKind::TanhBackward) {
    return a * (T(1) - b * b);
  } else if constexpr (K == BinaryKind::SigmoidBackward) {
    return a * b * (T(1) - b);
  } else if constexpr (K == BinaryKind::GeluErfBackward) {
    const T cdf = T(0.5) * (T(1) + std::erf(b * T(kSqrt1_2)));
    const T pdf = std::exp(T(-0.5) * b * b) * T(kInvSqrt2Pi);
    return a * (cdf + b * pdf);
  } else {
    static_assert(K == BinaryKind::GeluTanhBackward);
    const T t = std::tanh(T(kGeluBeta) * (b + T(kGeluKappa) * b * b * b));
    const T du = T(kGeluBeta) * (T(1) + T(3 * kGeluKappa) * b * b);
    return a * (T(0.5) * (T(1) + t) + T(0.5) * b * (T(1) - t * t) * du);
  }
}

template <BinaryKind K, typename T> __host__ __device__ inline bool compare_value(T a, T b) {
  if constexpr (K == BinaryKind::Eq) {
    return a == b;
  } else if constexpr (K == BinaryKind::Ne) {
    return a != b;
  } else if constexpr (K == BinaryKind::Lt) {
    return a < b;
  } else if constexpr (K == BinaryKind::Le) {
    return a <= b;
  } else if constexpr (K == BinaryKind::Gt) {
    return a > b;
  } else if constexpr (K == BinaryKind::Ge) {
    return a >= b;
  } else if constexpr (K == BinaryKind::LogicalAnd) {
    return static_cast<bool>(a) && static_cast<bool>(b);
  } else {
    static_assert(K == BinaryKind::LogicalOr);
    return static_cast<bool>(a) || static_cast<bool>(b);
  }
}

}  // namespace tg::cuda::detail
