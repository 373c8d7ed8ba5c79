// CPU kernels of the nn activations: gelu (erf and tanh forms), its fused backward, leaky_relu.
// All run on the elementwise engine (loops.h): flat vectorisable loops, threads when large.
#include <algorithm>
#include <cmath>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// gelu(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt(2))).
template <typename T> T gelu_erf(T x) { return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2))); }
// d/dx: Phi(x) + x * phi(x).
template <typename T> T gelu_erf_grad(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2)));
  const T pdf = std::exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);  // 1/sqrt(2 pi)
  return cdf + x * pdf;
}

// gelu(x) ~ x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3), as PyTorch's "tanh".
constexpr double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;
template <typename T> T gelu_tanh(T x) {
  const T inner = T(kBeta) * (x + T(kKappa) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}
// d/dx: (1 + t)/2 + x/2 * (1 - t^2) * u'.
template <typename T> T gelu_tanh_grad(T x) {
  const T t = std::tanh(T(kBeta) * (x + T(kKappa) * x * x * x));
  const T du = T(kBeta) * (T(1) + T(3 * kKappa) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

// fn(a, b) with broadcasting, in result_type(a, b), which the spec's dtypes make floating.
template <typename Fn>
Tensor binary_floating(const char* op, const Tensor& a, const Tensor& b, const Fn& fn) {
  const DType dtype = result_type(a, b);
  Tensor out = empty(broadcast_pair(op, a, b), dtype, a.device());
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<T, T, T>(out, fn, a, b);
  });
  return out;
}

}  // namespace

Tensor gelu(const Tensor& self, const std::string& approximate) {
  if (approximate == "tanh")
    return unary_float_op("gelu", self, [](auto x) { return gelu_tanh(x); });
  return unary_float_op("gelu", self, [](auto x) { return gelu_erf(x); });
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     const std::string& approximate) {
  if (approximate == "tanh")
    return binary_floating("gelu_backward", grad_output, self,
                           [](auto g, auto x) { return g * gelu_tanh_grad(x); });
  return binary_floating("gelu_backward", grad_output, self,
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
