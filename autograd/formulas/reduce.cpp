// Backward helpers of the reduce family; see reduce.h.
#include <tapegrad/autograd/formulas/reduce.h>

namespace tg::formulas {
namespace {

// Whether each dim of a tensor with `ndim` dims was reduced (empty `dim`: all of them).
std::vector<bool> reduced_mask(int64_t ndim, IntArrayRef dim) {
  std::vector<bool> reduced(ndim, dim.empty());
  for (int64_t d : dim)
    if (ndim > 0) reduced[wrap_dim("backward", d, ndim)] = true;
  return reduced;
}

// A 0-d tensor of t's dtype and device holding `value` (broadcasts in where()).
Tensor constant(const Tensor& t, const Scalar& value) {
  return full({}, value, t.dtype(), t.device());
}

}  // namespace

Tensor unsqueeze_reduced(const Tensor& t, const Shape& self_shape, IntArrayRef dim, bool keepdim) {
  if (keepdim) return t;
  const std::vector<bool> reduced = reduced_mask(static_cast<int64_t>(self_shape.size()), dim);
  Shape kept;
  for (size_t d = 0; d < self_shape.size(); ++d) kept.push_back(reduced[d] ? 1 : self_shape[d]);
  return t.reshape(kept);
}

Tensor sum_backward(const Tensor& grad, const Shape& self_shape, IntArrayRef dim, bool keepdim) {
  if (grad.dim() == 0) return grad.expand(self_shape);  // full reduction: no unsqueeze needed
  return unsqueeze_reduced(grad, self_shape, dim, keepdim).expand(self_shape);
}

Tensor mean_backward(const Tensor& grad, const Shape& self_shape, IntArrayRef dim, bool keepdim) {
  const std::vector<bool> reduced = reduced_mask(static_cast<int64_t>(self_shape.size()), dim);
  int64_t count = 1;
  for (size_t d = 0; d < self_shape.size(); ++d) count *= reduced[d] ? self_shape[d] : 1;
  return sum_backward(grad, self_shape, dim, keepdim) / static_cast<double>(count);
}

// Along one slot x with result r = prod(x), c zeros, x_safe = x with zeros replaced by 1,
// p_nz = prod(x_safe) and s = sum of x over the zeros (value 0, derivative 1 at each zero):
//   dr/dx_i = r / x_safe_i                  where x_i != 0 (0 when the slot has a zero: r is 0)
//           = p_nz                          where x_i == 0 and c == 1
//           = (s - x_i) * p_nz              where x_i == 0 and c == 2 (value 0, but its
//                                           derivative wrt the other zero is p_nz)
//           = 0                             where x_i == 0 and c >= 3
// Each branch is also right to first order in every x_j, so the second derivative is exact.
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                     std::optional<int64_t> dim, bool keepdim) {
  std::vector<int64_t> dims;
  if (dim) dims.push_back(*dim);
  auto slot_sum = [&](const Tensor& t) { return sum(t, dims, /*keepdim=*/true); };
  auto slot_prod = [&](const Tensor& t) { return dim ? prod(t, dim, true) : prod(t); };
  const Tensor grad_b = unsqueeze_reduced(grad, self.shape(), dims, keepdim);
  const Tensor result_b = unsqueeze_reduced(result, self.shape(), dims, keepdim);
  const Tensor zero = self == 0;
  const Tensor count = slot_sum(zero);
  const Tensor nil = constant(self, 0);
  const Tensor x_safe = where(zero, constant(self, 1), self);
  const Tensor p_nz = slot_prod(x_safe);
  const Tensor s = slot_sum(where(zero, self, nil));
  const Tensor at_zero = where(count == 1, p_nz, where(count == 2, (s - self) * p_nz, nil));
  return grad_b * where(zero, at_zero, result_b / x_safe);
}

Tensor amax_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dim,
                     bool keepdim) {
  const Tensor mask = self == unsqueeze_reduced(result, self.shape(), dim, keepdim);
  const Tensor ties = sum(mask, dim, /*keepdim=*/true);
  // grad / ties * mask, as PyTorch (an inf or NaN grad gives NaN off the extremes), with the
  // division on the reduced shape and a select instead of a bool-to-float conversion and a
  // multiply on self's.
  const Tensor share = unsqueeze_reduced(grad, self.shape(), dim, keepdim) / ties;
  return where(mask, share, share * 0.0);
}

Tensor max_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices, int64_t dim,
                    bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(self_shape.size());
  if (ndim == 0) return grad;
  const int64_t d = wrap_dim("max", dim, ndim);
  // positions 0..n-1 along dim, shaped [n, 1, ..., 1] to broadcast against the indices
  Shape pos_shape(static_cast<size_t>(ndim - d), 1);
  pos_shape[0] = self_shape[d];
  const Tensor pos = arange(self_shape[d], kInt64, indices.device()).reshape(pos_shape);
  const Tensor one_hot = pos == (keepdim ? indices : unsqueeze(indices, d));
  return (keepdim ? grad : unsqueeze(grad, d)) * one_hot;
}

}  // namespace tg::formulas
