#pragma once
// Backward helpers for the mask and index op family (namespace tg::formulas). Each is written
// with public ops, so double backward works through them. masked_scatter's source and index_fill's
// value have fused ops of their own (masked_scatter_backward, index_fill_value_backward).
#include <tapegrad/autograd/formulas/elementwise.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// The gradient of a 0-d fill value: grad summed over the positions it was written to.
inline Tensor fill_value_backward(const Tensor& grad, const Tensor& filled) {
  return sum(keep_where(filled, grad));
}

// masked_fill's value: the sum of grad where mask is true (mask broadcasts to grad).
inline Tensor masked_fill_value_backward(const Tensor& grad, const Tensor& mask) {
  return fill_value_backward(grad, mask);
}

// masked_select(self, mask) -> 1-D: grad goes back to the masked positions of the broadcast
// shape, zeros elsewhere (the engine then sums it down to self's shape).
inline Tensor masked_select_backward(const Tensor& grad, const Shape& self_shape,
                                     const Tensor& mask) {
  const Shape shape = broadcast_shapes("masked_select", self_shape, mask.shape());
  return masked_scatter(zeros(shape, grad.dtype(), grad.device()), mask, grad);
}

// index_fill's self: grad with the filled slices zeroed.
inline Tensor index_fill_self_backward(const Tensor& grad, int64_t dim, const Tensor& index) {
  return index_fill_scalar(grad, dim, index, 0);
}

}  // namespace tg::formulas
