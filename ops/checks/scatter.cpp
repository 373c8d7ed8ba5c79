// Checks of gather, scatter, scatter_add, scatter_reduce and their fused backwards (kernels:
// backends/cpu/indexing/). The index values are data: the kernels check them as they walk the
// index (backends/cpu/indexing/data_checks.h).
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {
namespace {

// The walk-form layout: index and src have self's rank, src has self's dtype, index fits in src
// (every dim) and in self (every dim but dim). Shapes are the 0-d-as-[1] forms; src may be null
// (gather), and self_dtype is read only with a src.
void walk_layout(const char* op, const Shape& self, DType self_dtype, int64_t dim,
                 const Shape& index, const Tensor* src) {
  const auto ndim = static_cast<int64_t>(self.size());
  const int64_t d = wrap_dim(op, dim, ndim);
  TG_CHECK(static_cast<int64_t>(index.size()) == ndim, ValueError, op,
           "index must have as many dims as self (", ndim, "), got a ", index.size(), "-d index");
  const Shape src_shape = src ? shape_1d(*src) : Shape();
  if (src) {
    TG_CHECK(src->dtype() == self_dtype, TypeError, op, "src has dtype ", dtype_name(src->dtype()),
             ", expected self's dtype ", dtype_name(self_dtype));
    TG_CHECK(static_cast<int64_t>(src_shape.size()) == ndim, ValueError, op,
             "src must have as many dims as self (", ndim, "), got ", src_shape.size());
  }
  for (size_t k = 0; k < self.size(); ++k) {
    TG_CHECK(static_cast<int64_t>(k) == d || index[k] <= self[k], ValueError, op,
             "shape mismatch: index has shape ", index, ", larger than self's shape ", self,
             " in dim ", k);
    TG_CHECK(!src || index[k] <= src_shape[k], ValueError, op, "shape mismatch: index has shape ",
             index, ", larger than src's shape ", src_shape, " in dim ", k);
  }
}

// A gradient or result of scatter_reduce has self's shape and dtype (0-d-as-[1] shapes).
void like_self(const char* op, const char* name, const Tensor& t, const Tensor& self) {
  TG_CHECK(shape_1d(t) == shape_1d(self), ValueError, op, name, " has shape ", shape_1d(t),
           ", expected self's shape ", shape_1d(self));
  dtype_of_self(op, name, t, self);
}

void scatter_args(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor& src) {
  walk_layout(op, shape_1d(self), self.dtype(), dim, shape_1d(index), &src);
}

}  // namespace

void gather(const Tensor& self, int64_t dim, const Tensor& index) {
  walk_layout("gather", shape_1d(self), self.dtype(), dim, shape_1d(index), nullptr);
}

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_args("scatter", self, dim, index, src);
}

void scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_args("scatter_add", self, dim, index, src);
}

void scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                    const std::string&, bool) {
  scatter_args("scatter_reduce", self, dim, index, src);
}

void gather_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                     const Tensor& index) {
  constexpr const char* op = "gather_backward";
  const Shape self = self_shape.empty() ? Shape{1} : Shape(self_shape);
  walk_layout(op, self, grad_output.dtype(), dim, shape_1d(index), nullptr);
  TG_CHECK(shape_1d(grad_output) == shape_1d(index), ValueError, op, "grad_output has shape ",
           grad_output.shape(), ", expected index's shape ", index.shape());
}

void scatter_reduce_backward(const Tensor& grad_output, const Tensor& self, int64_t dim,
                             const Tensor& index, const Tensor& src, const std::string&, bool,
                             const Tensor& result, const std::string&) {
  constexpr const char* op = "scatter_reduce_backward";
  scatter_args(op, self, dim, index, src);
  like_self(op, "grad_output", grad_output, self);
  like_self(op, "result", result, self);
}

}  // namespace tg::checks
