#pragma once
// Backward helpers for the linalg op family (namespace tg::formulas).
#include <tapegrad/core/factories.h>
#include <tapegrad/core/operators.h>
#include <tapegrad/core/tensor.h>
#include <tapegrad/generated/functions.h>

namespace tg::formulas {

// Gradient of matmul(self, other) wrt self (input 0: grad @ other^T) or other (input 1:
// self^T @ grad), with 1-D operands treated as the forward treats them. Broadcast batch dims
// are left for the engine to sum.
Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, int64_t input);

}  // namespace tg::formulas
