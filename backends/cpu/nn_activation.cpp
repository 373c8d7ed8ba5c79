// CPU kernels of the nn activations: gelu (erf and tanh forms), its fused backward, leaky_relu.
// gelu runs on SLEEF's vector kernels when built with it (simd/vec_ops.h; the formulas below are
// the scalar fallback, the same mathematics); leaky_relu on the elementwise engine (loops.h).
#include <algorithm>
#include <cmath>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/simd/vec_ops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// gelu(x) = x * Phi(x) = x/2 * erfc(-x / sqrt(2)) (= x/2 * (1 + erf(x / sqrt(2))) without the
// cancellation for negative x).
template <typename T> T gelu_erf(T x) { return T(0.5) * x * std::erfc(x * T(-M_SQRT1_2)); }
// d/dx: Phi(x) + x * phi(x).
template <typename T> T gelu_erf_grad(T x) {
  const T cdf = T(0.5) * std::erfc(x * T(-M_SQRT1_2));
  const T pdf = std::exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1/sqrt(2 pi)
  return cdf + x * pdf;
}

// gelu(x) ~ x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3), as PyTorch's "tanh".
constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;
// As the vector kernel (simd/vec_math_impl.h): x * sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)),
// the sigmoid from e = exp(-|2u|): no cancellation for negative x, no overflow.
template <typename T> T gelu_tanh(T x) {
  const T u2 = x * (T(2 * kBeta) + T(2 * kBeta * kKappa) * x * x);
  const T e = std::exp(-std::abs(u2)), r = T(1) / (T(1) + e);
  return x * (u2 < T(0) ? e * r : r);
}
// d/dx: s + x s (1 - s) 2u' with s = sigmoid(2u), and s (1 - s) = e r^2; x clamped to +-1e4
// as in the vector kernel (x - x keeps NaN and inf giving NaN).
template <typename T> T gelu_tanh_grad(T x) {
  const T xc = std::max(std::min(x, T(1e4)), T(-1e4));
  const T u2 = xc * (T(2 * kBeta) + T(2 * kBeta * kKappa) * xc * xc);
  const T e = std::exp(-std::abs(u2)), r = T(1) / (T(1) + e);
  const T du2 = T(2 * kBeta) + T(6 * kBeta * kKappa) * xc * xc;
  return ((u2 < T(0) ? e * r : r) + xc * du2 * e * r * r) + (x - x);
}

}  // namespace

Tensor gelu(const Tensor& self, const std::string& approximate) {
  if (approximate == "tanh")
    return unary_math_op("gelu", self, vec::Unary::gelu_tanh, [](auto x) { return gelu_tanh(x); });
  return unary_math_op("gelu", self, vec::Unary::gelu_erf, [](auto x) { return gelu_erf(x); });
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     const std::string& approximate) {
  if (approximate == "tanh")
    return grad_math_op("gelu_backward", grad_output, self, vec::Grad::gelu_tanh,
                        [](auto g, auto x) { return g * gelu_tanh_grad(x); });
  return grad_math_op("gelu_backward", grad_output, self, vec::Grad::gelu_erf,
                      [](auto g, auto x) { return g * gelu_erf_grad(x); });
}

Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  visit_floating("leaky_relu", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T slope = negative_slope.to<T>();
    map_into<T, T>(
        out,
        [slope](T x) {
          // = (x > 0 ? x : x * slope), bit for bit (NaN, -0 and inf included), but without a branch
          // (gcc keeps the ternary as one, mispredicted half the time): the loop vectorises.
          return std::max(x, T(0)) + slope * std::min(x, T(0));
        },
        self);
  });
  return out;
}

}  // namespace tg::cpu
