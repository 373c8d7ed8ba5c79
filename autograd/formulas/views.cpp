// Backward helpers of the view ops; see views.h. The scatter into zeros is the op slice_backward
// (its own gradient is a slice), so double backward works through all of them.
#include <tapegrad/autograd/formulas/views.h>

namespace tg::formulas {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) dims.push_back(d);
  }
  // An empty dim list would mean "all dims" to sum: then only a reshape is needed.
  Tensor summed = dims.empty() ? grad : tg::sum(grad, dims, /*keepdim=*/true);
  return summed.reshape(shape);
}

std::vector<int64_t> inverse_permutation(IntArrayRef dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  std::vector<int64_t> inverse(dims.size());
  for (int64_t i = 0; i < n; ++i) inverse[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
  return inverse;
}

Tensor select_backward(const Tensor& grad, IntArrayRef self_shape, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim("select_backward", dim, static_cast<int64_t>(self_shape.size()));
  const int64_t i = index < 0 ? index + self_shape[d] : index;
  return tg::slice_backward(grad.unsqueeze(d), self_shape, d, i, i + 1, 1);
}

Tensor narrow_backward(const Tensor& grad, IntArrayRef self_shape, int64_t dim, int64_t start,
                       int64_t length) {
  const int64_t d = wrap_dim("narrow_backward", dim, static_cast<int64_t>(self_shape.size()));
  const int64_t s = start < 0 ? start + self_shape[d] : start;
  return tg::slice_backward(grad, self_shape, d, s, s + length, 1);
}

}  // namespace tg::formulas
