// Fused backward kernels of relu, leaky_relu, tanh and sigmoid (as in PyTorch): one pass instead of
// four temporaries. Each is itself an op with a formula, so double backward still works.
#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("tanh_backward", grad_output, output,
                                  [](auto g, auto y) { return g * (decltype(g)(1) - y * y); });
}

// A select, not g * (y > 0): a NaN gradient where relu was 0 gives 0, as where(y > 0, g, 0)
// (the composed form) and PyTorch's threshold_backward do. The select vectorises.
Tensor relu_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("relu_backward", grad_output, output, [](auto g, auto y) {
    return y > decltype(y)(0) ? g : decltype(g)(0);
  });
}

// grad where self > 0, else grad * slope: the composed where(self > 0, grad, grad * slope) in
// one pass, the same bits.
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self,
                           const Scalar& negative_slope) {
  const DType dtype = result_type(grad_output, self);
  Tensor out =
      empty(broadcast_pair("leaky_relu_backward", grad_output, self), dtype, grad_output.device());
  visit_floating("leaky_relu_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T slope = negative_slope.to<T>();
    map_into<T, T, T>(
        out, [slope](T g, T x) { return select_bits(x > T(0), g, g * slope); }, grad_output, self);
  });
  return out;
}

Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("sigmoid_backward", grad_output, output,
                                  [](auto g, auto y) { return g * y * (decltype(g)(1) - y); });
}

}  // namespace tg::cpu
