#pragma once
// Backward helpers for the view ops (namespace tg::formulas). Written with public ops only, so the
// gradients they build are themselves differentiable (double backward).
#include <cstdint>
#include <vector>

#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// expand / broadcast_to: sums grad over the dims that broadcasting created (leading extra dims, and
// dims where shape has 1 but grad does not), so the result has `shape`.
Tensor sum_to(const Tensor& grad, const Shape& shape);
// permute: the permutation that undoes `dims` (negative entries count from the end).
std::vector<int64_t> inverse_permutation(IntArrayRef dims);
// select: zeros of self's shape with grad at `index` along dim.
Tensor select_backward(const Tensor& grad, IntArrayRef self_shape, int64_t dim, int64_t index);
// narrow: zeros of self's shape with grad in the window [start, start + length) along dim.
Tensor narrow_backward(const Tensor& grad, IntArrayRef self_shape, int64_t dim, int64_t start,
                       int64_t length);

}  // namespace tg::formulas
