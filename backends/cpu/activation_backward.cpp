// Fused backward kernels of relu, tanh and sigmoid (as in PyTorch): one pass instead of four
// temporaries. Each is itself an op with a formula, so double backward still works.
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

Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("sigmoid_backward", grad_output, output,
                                  [](auto g, auto y) { return g * y * (decltype(g)(1) - y); });
}

}  // namespace tg::cpu
