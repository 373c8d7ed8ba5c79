// Checks of index_select, index_add, index_copy, index_reduce, index_fill and their backwards
// (kernels: backends/cpu/indexing/). The index values are data: the kernels check them before
// writing anything (backends/cpu/indexing/data_checks.h).
#include <utility>

#include <tapegrad/ops/checks/common.h>

namespace tg::checks {
namespace {

// dim in range for self (0-d seen as [1]) and a 0-d or 1-d index; returns the wrapped dim.
int64_t row_layout(const char* op, const Shape& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim(op, dim, static_cast<int64_t>(self.size()));
  TG_CHECK(index.dim() <= 1, ValueError, op, "index must be 0-d or 1-d, got a ", index.dim(),
           "-d index of shape ", index.shape());
  return d;
}

// self's shape with index.numel() at dim d: the shape of index_add's source, of
// index_select's result.
Shape rows_at(const Shape& self, int64_t d, const Tensor& index) {
  Shape expected = self;
  expected[static_cast<size_t>(d)] = index.numel();
  return expected;
}

// source has self's dtype, and self's shape with index.numel() at dim d.
void source_rows(const char* op, const Tensor& self, int64_t d, const Tensor& index,
                 const Tensor& source) {
  TG_CHECK(source.dtype() == self.dtype(), TypeError, op, "source has dtype ",
           dtype_name(source.dtype()), ", expected self's dtype ", dtype_name(self.dtype()));
  const Shape expected = rows_at(shape_1d(self), d, index);
  TG_CHECK(shape_1d(source) == expected, ValueError, op, "shape mismatch: source has shape ",
           shape_1d(source), ", expected ", expected, " (self's shape with index's ", index.numel(),
           " entries at dim ", d, ")");
}

void index_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                   const Tensor& source) {
  source_rows(op, self, row_layout(op, shape_1d(self), dim, index), index, source);
}

// index_fill: dim in range (a 0-d self accepts 0 and -1) and a 0-d or 1-d index.
void fill_layout(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  wrap_dim(op, dim, self.dim());
  TG_CHECK(index.dim() <= 1, ValueError, op, "index must be 0-d or 1-d, got a ", index.dim(),
           "-d tensor of shape ", index.shape());
}

}  // namespace

void index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  row_layout("index_select", shape_1d(self), dim, index);
}

void index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
               const Scalar&) {
  index_scatter("index_add", self, dim, index, source);
}

void index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  index_scatter("index_copy", self, dim, index, source);
}

void index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                  const std::string&, bool) {
  index_scatter("index_reduce", self, dim, index, source);
}

void index_select_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                           const Tensor& index) {
  constexpr const char* op = "index_select_backward";
  const Shape self = self_shape.empty() ? Shape{1} : Shape(self_shape);
  const int64_t d = row_layout(op, self, dim, index);
  const Shape expected = rows_at(self, d, index);
  TG_CHECK(shape_1d(grad_output) == expected, ValueError, op, "grad_output has shape ",
           grad_output.shape(), ", expected ", expected, " (self's shape with index's ",
           index.numel(), " entries at dim ", d, ")");
}

void index_reduce_backward(const Tensor& grad_output, const Tensor& self, int64_t dim,
                           const Tensor& index, const Tensor& source, const std::string&, bool,
                           const Tensor& result, const std::string&) {
  constexpr const char* op = "index_reduce_backward";
  index_scatter(op, self, dim, index, source);
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"grad_output", &grad_output}, {"result", &result}}) {
    TG_CHECK(shape_1d(*t) == shape_1d(self), ValueError, op, name, " has shape ", shape_1d(*t),
             ", expected self's shape ", shape_1d(self));
    dtype_of_self(op, name, *t, self);
  }
}

void index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TG_CHECK(value.dim() == 0, ValueError, "index_fill", "value must be a 0-d tensor, got shape ",
           value.shape(), " (use a Scalar or value.reshape({}) for one element)");
  fill_layout("index_fill", self, dim, index);
}

void index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index, const Scalar&) {
  fill_layout("index_fill_scalar", self, dim, index);
}

void index_fill_value_backward(const Tensor& grad_output, int64_t dim, const Tensor& index) {
  fill_layout("index_fill_value_backward", grad_output, dim, index);
}

}  // namespace tg::checks
