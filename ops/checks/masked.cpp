// Checks of masked_fill, masked_select, masked_scatter and masked_scatter's backward (kernels:
// backends/cpu/indexing/masked.cpp). How many elements a mask selects is data: the kernels check
// it against the source (backends/cpu/indexing/data_checks.h).
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

void masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  TG_CHECK(value.dim() == 0, ValueError, "masked_fill", "value must be a 0-d tensor, got shape ",
           value.shape(), " (use a Scalar or value.reshape({}) for one element)");
  broadcastable("masked_fill", self, mask);
}

void masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar&) {
  broadcastable("masked_fill_scalar", self, mask);
}

void masked_select(const Tensor& self, const Tensor& mask) {
  broadcastable("masked_select", self, mask);
}

void masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  constexpr const char* op = "masked_scatter";
  TG_CHECK(source.dtype() == self.dtype(), TypeError, op, "source has dtype ",
           dtype_name(source.dtype()), " but self has dtype ", dtype_name(self.dtype()),
           "; expected the same dtype");
  broadcastable(op, self, mask);
}

// mask broadcasts to grad_output's shape without changing it.
void masked_scatter_backward(const Tensor& grad_output, const Tensor& mask, IntArrayRef) {
  constexpr const char* op = "masked_scatter_backward";
  const Shape shape = grad_output.shape() == mask.shape()
                          ? grad_output.shape()
                          : broadcast_shapes(op, grad_output.shape(), mask.shape());
  TG_CHECK(shape == grad_output.shape(), ValueError, op, "mask of shape ", mask.shape(),
           " cannot change grad_output's shape ", grad_output.shape());
}

}  // namespace tg::checks
