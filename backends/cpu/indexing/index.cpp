// CPU index_select, index_add, index_copy, index_reduce and index_select_backward on the row form
// of the engine (engine.h, rows.h); index_select gathers through the 1-d index viewed as expanded
// to the result's shape (stride 0 off dim), which copies whole rows. Their arguments were checked
// before dispatch (ops/checks/index.cpp); the index values are checked here, before anything is
// written (the row form reads them unchecked). index_reduce's fused backward is in
// index_reduce_backward.cpp.
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "data_checks.h"
#include "engine.h"
#include "layout.h"

namespace tg::cpu {
namespace {
using namespace indexing;

// index_add, index_copy and index_reduce: self copied, then source scattered into the copy.
Tensor index_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& source, Reduce reduce, bool include_self,
                     const Scalar& alpha = 1) {
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  check_index_range(op, index, d, self1.size(d));
  Tensor out = fresh_copy(self1);
  if (index.numel() > 0) scatter_rows_into(out, d, index, source1, reduce, include_self, alpha);
  return self.dim() == 0 ? as_0d(out) : out;
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = as_1d(self);
  const int64_t d = wrap_dim("index_select", dim, self1.dim());
  check_index_range("index_select", index, d, self1.size(d));
  Shape shape = self1.shape();
  shape[d] = index.numel();
  const Tensor result = gather_from("index_select", self1, d, expand_index(index, shape, d));
  // A 0-d self gives a 0-d result whatever the index's dims (one entry either way), as PyTorch.
  return self.dim() == 0 ? as_0d(result) : result;
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  return index_scatter("index_add", self, dim, index, source, Reduce::Sum, true, alpha);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_scatter("index_copy", self, dim, index, source, Reduce::Assign, true);
}

Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self) {
  return index_scatter("index_reduce", self, dim, index, source, parse_reduce(reduce),
                       include_self);
}

// grad_output's slices added into zeros of self's shape at index along dim, in one pass.
Tensor index_select_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                             const Tensor& index) {
  constexpr const char* op = "index_select_backward";
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor out =
      empty(shape.empty() ? Shape{1} : shape, grad_output.dtype(), grad_output.device());
  const int64_t d = wrap_dim(op, dim, out.dim());
  check_index_range(op, index, d, out.size(d));
  const Tensor grad1 = as_1d(grad_output);
  if (index.numel() > 0)  // zeros where no entry goes, 0 + the sum of the entries elsewhere
    scatter_rows_into(out, d, index, grad1, Reduce::Sum, false, 1, /*fresh=*/true);
  else
    fill_data(out, 0);
  return shape.empty() ? as_0d(out) : out;
}

}  // namespace tg::cpu
