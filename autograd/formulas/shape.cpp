// Backward helpers of the shape family; see shape.h.
#include <tapegrad/autograd/formulas/shape.h>

namespace tg::formulas {

std::vector<Tensor> cat_backward(const Tensor& grad, const std::vector<Tensor>& tensors,
                                 int64_t dim) {
  const int64_t d = wrap_dim("cat", dim, grad.dim());
  std::vector<Tensor> grads;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0 && grad.dim() != 1) {
      // A legacy [0] input that cat skipped: its gradient is empty too.
      grads.push_back(zeros({0}, grad.dtype(), grad.device()));
      continue;
    }
    grads.push_back(grad.narrow(d, offset, t.size(d)));
    offset += t.size(d);
  }
  return grads;
}

std::vector<Tensor> stack_backward(const Tensor& grad, int64_t dim) {
  const int64_t d = wrap_dim("stack", dim, grad.dim());
  std::vector<Tensor> grads;
  for (int64_t i = 0; i < grad.size(d); ++i) grads.push_back(grad.select(d, i));
  return grads;
}

}  // namespace tg::formulas
