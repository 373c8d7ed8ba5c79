// Checks of the reductions and of softmax's family (kernels: backends/cpu/reduce.cpp,
// argmax.cpp, softmax.cpp): dims in range and not repeated; no empty slot where the reduction has
// no identity.
#include <algorithm>

#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

void sum(const Tensor& self, IntArrayRef dim, bool, std::optional<DType>) {
  reduce_dims("sum", self.dim(), dim);
}

void mean(const Tensor& self, IntArrayRef dim, bool) {
  TG_CHECK(is_floating(self.dtype()), TypeError, "mean", "self must have a floating dtype, got ",
           dtype_name(self.dtype()));
  reduce_dims("mean", self.dim(), dim);
}

void prod(const Tensor& self, std::optional<int64_t> dim, bool) {
  if (dim) reduce_dims("prod", self.dim(), {*dim});
}

void amax(const Tensor& self, IntArrayRef dim, bool) {
  reduce_dims("amax", self.dim(), dim);
  nonempty_slots("amax", self.shape(), dim);
}

void amin(const Tensor& self, IntArrayRef dim, bool) {
  reduce_dims("amin", self.dim(), dim);
  nonempty_slots("amin", self.shape(), dim);
}

void max(const Tensor& self, int64_t dim, bool) {
  reduce_dims("max", self.dim(), {dim});
  nonempty_slots("max", self.shape(), {dim});
}

void min(const Tensor& self, int64_t dim, bool) {
  reduce_dims("min", self.dim(), {dim});
  nonempty_slots("min", self.shape(), {dim});
}

namespace {

// argmax / argmin: a dim in range whose size is not 0, or (no dim) a tensor that is not empty.
void arg_reduce(const char* op, const Tensor& self, std::optional<int64_t> dim) {
  if (!dim) {
    TG_CHECK(self.numel() > 0, ValueError, op, "cannot reduce a tensor of size 0 (shape ",
             self.shape(), ")");
    return;
  }
  const int64_t n = std::max<int64_t>(self.dim(), 1);
  TG_CHECK(*dim >= -n && *dim < n, IndexError, op, "dim ", *dim,
           " is out of range for a tensor with ", self.dim(), " dims");
  TG_CHECK(self.dim() == 0 || self.size(*dim) > 0, ValueError, op, "cannot reduce over dim ", *dim,
           " of size 0");
}

}  // namespace

void argmax(const Tensor& self, std::optional<int64_t> dim, bool) {
  arg_reduce("argmax", self, dim);
}

void argmin(const Tensor& self, std::optional<int64_t> dim, bool) {
  arg_reduce("argmin", self, dim);
}

void softmax(const Tensor& self, int64_t dim) { wrap_dim("softmax", dim, self.dim()); }

void log_softmax(const Tensor& self, int64_t dim) { wrap_dim("log_softmax", dim, self.dim()); }

namespace {

void softmax_grad(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim) {
  TG_CHECK(grad_output.shape() == output.shape(), ValueError, op,
           "grad_output and output must have the same shape, got ", grad_output.shape(), " and ",
           output.shape());
  wrap_dim(op, dim, output.dim());
}

}  // namespace

void softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  softmax_grad("softmax_backward", grad_output, output, dim);
}

void log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  softmax_grad("log_softmax_backward", grad_output, output, dim);
}

void logsumexp(const Tensor& self, IntArrayRef dim, bool) {
  reduce_dims("logsumexp", self.dim(), dim);
}

}  // namespace tg::checks
