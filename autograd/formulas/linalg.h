#pragma once
// Backward helpers for the linalg op family (namespace tg::formulas).
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// t with its last two dims swapped (the batched matrix transpose).
inline Tensor transpose_last(const Tensor& t) { return t.transpose(-2, -1); }

// Gradient of matmul(self, other) wrt self (input 0: grad @ other^T) or other (input 1:
// self^T @ grad), with 1-D operands treated as the forward treats them. Broadcast batch dims
// are left for the engine to sum.
Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, int64_t input);

// Gradient of linear(self, weight, bias) wrt weight [out, in]: the sum over all leading dims of
// grad^T @ self, i.e. grad [M, out]^T @ self [M, in] with every leading dim folded into M.
// M is counted, not inferred with -1: with no out or in features (grad [M, 0]) a -1 would have
// to be inferred from 0 elements, which reshape refuses.
inline Tensor linear_weight_grad(const Tensor& grad, const Tensor& self) {
  const int64_t out = grad.size(-1), in = self.size(-1);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) rows *= self.size(d);
  return matmul(grad.reshape({rows, out}).t(), self.reshape({rows, in}));
}

}  // namespace tg::formulas
