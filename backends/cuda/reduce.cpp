// Reductions on CUDA: the reduced dims are moved last (with a copy when needed), so that each
// output element is the sum of one contiguous row; CUB then sums the rows.
#include <algorithm>
#include <vector>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"

namespace tg::cuda {

Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  // Like the CPU kernel: bool and integer inputs sum to int64 unless a dtype is given.
  const DType out_dtype = dtype ? *dtype : is_integral(self.dtype(), true) ? kInt64 : self.dtype();
  const int64_t ndim = self.dim();

  // The reduced dims: those listed, or all of them when the list is empty. A 0-d tensor accepts
  // dim 0 or -1 and reduces nothing (as on the CPU). The list was checked before dispatch (in
  // range, none twice: ops/checks/reduce.cpp).
  std::vector<bool> reduced(static_cast<size_t>(ndim), dim.empty());
  for (int64_t d : dim) {
    const int64_t w = wrap_dim("sum", d, std::max<int64_t>(ndim, 1));
    if (ndim > 0) reduced[w] = true;
  }

  // The input viewed as a rows x cols matrix: kept dims first, reduced dims last.
  Shape perm_shape, perm_strides, out_shape;
  int64_t rows = 1, cols = 1;
  for (bool pass_reduced : {false, true}) {
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d] != pass_reduced) continue;
      perm_shape.push_back(self.size(d));
      perm_strides.push_back(self.stride(d));
      (pass_reduced ? cols : rows) *= self.size(d);
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) {
      out_shape.push_back(self.size(d));
    } else if (keepdim) {
      out_shape.push_back(1);
    }
  }

  Tensor out = empty(out_shape, out_dtype, self.device());
  if (rows == 0) return out;
  if (cols == 0) {  // sums over nothing
    fill_data(out, 0);
    return out;
  }

  // Copy into a contiguous buffer of the output dtype unless the input already is one.
  const auto layout =
      detail::make_layout<2>("sum", perm_shape, {contiguous_strides(perm_shape), perm_strides});
  Tensor matrix = self;
  if (!layout.contiguous || self.dtype() != out_dtype) {
    matrix = empty(perm_shape, out_dtype, self.device());
    detail::launch_copy(matrix.data_ptr(), out_dtype, self.data_ptr(), self.dtype(), rows * cols,
                        layout);
  }
  if (rows == 1) {
    detail::launch_sum_all(matrix.data_ptr(), out.data_ptr(), out_dtype, cols);
  } else {
    detail::launch_sum_rows(matrix.data_ptr(), out.data_ptr(), out_dtype, rows, cols);
  }
  return out;
}

}  // namespace tg::cuda
