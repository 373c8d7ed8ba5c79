// Backward helpers of the linalg family; see linalg.h.
#include <tapegrad/autograd/formulas/linalg.h>

namespace tg::formulas {

Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, int64_t input) {
  const bool self_vector = self.dim() == 1, other_vector = other.dim() == 1;
  if (self_vector && other_vector) return input == 0 ? grad * other : grad * self;  // dot
  // As in the forward: a 1-D self is a [1, k] row, a 1-D other a [k, 1] column, and grad gets
  // back the dims that were dropped from the result.
  Tensor g = grad;
  if (self_vector) g = unsqueeze(g, g.dim() - 1);
  if (other_vector) g = unsqueeze(g, g.dim());
  if (input == 0) {
    const Tensor b = other_vector ? unsqueeze(other, 1) : other;
    const Tensor grad_self = matmul(g, transpose_last(b));  // [..., m, k]
    return self_vector ? grad_self.squeeze(grad_self.dim() - 2) : grad_self;
  }
  const Tensor a = self_vector ? unsqueeze(self, 0) : self;
  const Tensor grad_other = matmul(transpose_last(a), g);  // [..., k, n]
  return other_vector ? grad_other.squeeze(grad_other.dim() - 1) : grad_other;
}

}  // namespace tg::formulas
