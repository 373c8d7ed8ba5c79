#pragma once
// Backward helpers for the reduce op family (namespace tg::formulas). All are written with
// public ops, so their own gradients (double backward) come for free.
#include <optional>

#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// A reduction's grad (or result) put back on self's dims: reduced dims of size 1 again when the
// op dropped them (!keepdim). An empty `dim` means every dim was reduced.
Tensor unsqueeze_reduced(const Tensor& t, const Shape& self_shape, IntArrayRef dim, bool keepdim);

// sum: every element of a slot gets the slot's grad.
Tensor sum_backward(const Tensor& grad, const Shape& self_shape, IntArrayRef dim, bool keepdim);
// mean: the same, divided by the slot size.
Tensor mean_backward(const Tensor& grad, const Shape& self_shape, IntArrayRef dim, bool keepdim);
// prod: result / x, exact where the slot holds zeros (one, two or more), with no host sync.
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                     std::optional<int64_t> dim, bool keepdim);
// amax / amin: the grad is split evenly among the elements equal to the result.
Tensor amax_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dim,
                     bool keepdim);
// max / min along dim: the grad goes to the returned index only.
Tensor max_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices, int64_t dim,
                    bool keepdim);

}  // namespace tg::formulas
