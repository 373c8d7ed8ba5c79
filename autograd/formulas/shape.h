#pragma once
// Backward helpers for the shape op family (namespace tg::formulas).
#include <vector>

#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// cat: each input gets its own slice of grad along dim (only the inputs' sizes are read).
std::vector<Tensor> cat_backward(const Tensor& grad, const std::vector<Tensor>& tensors,
                                 int64_t dim);
// stack: input i gets grad.select(dim, i).
std::vector<Tensor> stack_backward(const Tensor& grad, int64_t dim);

}  // namespace tg::formulas
