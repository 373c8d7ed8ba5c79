// Fused backward kernels of tanh and sigmoid (as in PyTorch): one pass instead of four
// temporaries. Each is itself an op with a formula, so double backward still works.
#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

Tensor tanh_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("tanh_backward", grad_output, output,
                                  [](auto g, auto y) { return g * (decltype(g)(1) - y * y); });
}

Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output) {
  return binary_op<Types::NoBool>("sigmoid_backward", grad_output, output,
                                  [](auto g, auto y) { return g * y * (decltype(g)(1) - y); });
}

}  // namespace tg::cpu
