// Reductions on CUDA: the reduced dims are moved last (with a copy that also converts to the
// accumulation dtype, unless the input already is that way), so that each output element is the
// reduction of one contiguous row; algorithms.cuh then reduces the rows (CUB on the GPU).
// Like the CPU backend, floating reductions accumulate in float64 and integer ones in int64.
#include <algorithm>
#include <vector>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"

namespace tg::cuda {
namespace {

// `self` as a contiguous rows x cols matrix of dtype `dtype`: kept dims first, reduced last.
struct Rows {
  Tensor matrix;  // contiguous, rows * cols elements of dtype
  int64_t rows = 1, cols = 1;
  Shape out_shape;
};

// The reduced dims: those listed, or all of them when the list is empty. A 0-d tensor accepts
// dim 0 or -1 and reduces nothing. The list was checked before dispatch (in range, none twice:
// ops/checks/reduce.cpp).
std::vector<bool> reduced_dims(const char* op, int64_t ndim, IntArrayRef dim) {
  std::vector<bool> reduced(static_cast<size_t>(ndim), dim.empty());
  for (int64_t d : dim) {
    const int64_t w = wrap_dim(op, d, std::max<int64_t>(ndim, 1));
    if (ndim > 0) reduced[w] = true;
  }
  return reduced;
}

Rows to_rows(const char* op, const Tensor& self, const std::vector<bool>& reduced, bool keepdim,
             DType dtype) {
  const int64_t ndim = self.dim();
  Rows r;
  Shape perm_shape, perm_strides;
  for (bool pass_reduced : {false, true}) {
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d] != pass_reduced) continue;
      perm_shape.push_back(self.size(d));
      perm_strides.push_back(self.stride(d));
      (pass_reduced ? r.cols : r.rows) *= self.size(d);
    }
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d]) {
      r.out_shape.push_back(self.size(d));
    } else if (keepdim) {
      r.out_shape.push_back(1);
    }
  }
  const auto layout =
      detail::make_layout<2>(op, perm_shape, {contiguous_strides(perm_shape), perm_strides});
  r.matrix = self;
  if (!layout.contiguous || self.dtype() != dtype) {
    r.matrix = empty(perm_shape, dtype, self.device());
    detail::launch_copy(r.matrix.data_ptr(), dtype, self.data_ptr(), self.dtype(), r.rows * r.cols,
                        layout);
  }
  return r;
}

// Reduces self over `reduced` with `kind` in dtype `acc`, then converts to out_dtype.
Tensor accumulate(const char* op, detail::ReduceKind kind, const Tensor& self,
                  const std::vector<bool>& reduced, bool keepdim, DType acc, DType out_dtype) {
  const Rows r = to_rows(op, self, reduced, keepdim, acc);
  Tensor out = empty(r.out_shape, out_dtype, self.device());
  if (r.rows == 0) return out;
  Tensor sums = empty(r.out_shape, acc, self.device());
  detail::launch_reduce_rows(kind, r.matrix.data_ptr(), sums.data_ptr(), acc, r.rows, r.cols);
  copy_data(out, sums);
  return out;
}

DType accumulate_dtype(DType in) { return is_floating(in) ? kFloat64 : kInt64; }

template <bool Greater> std::tuple<Tensor, Tensor> extreme_with_index(const char* op,
                                                                      const Tensor& self,
                                                                      int64_t dim, bool keepdim) {
  const Rows r = to_rows(op, self, reduced_dims(op, self.dim(), {dim}), keepdim, self.dtype());
  Tensor values = empty(r.out_shape, self.dtype(), self.device());
  Tensor indices = empty(r.out_shape, kInt64, self.device());
  if (r.rows == 0) return {values, indices};
  detail::launch_extreme_index_rows(Greater, r.matrix.data_ptr(), values.data_ptr(),
                                    indices.data<int64_t>(), self.dtype(), r.rows, r.cols);
  return {values, indices};
}

}  // namespace

Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  // Like the CPU kernel: bool and integer inputs sum to int64 unless a dtype is given; with a
  // dtype the input is converted first (sum(x, dtype=bool) is an "any").
  const DType out_dtype = dtype ? *dtype : is_integral(self.dtype(), true) ? kInt64 : self.dtype();
  const Tensor input = dtype && *dtype != self.dtype() ? self.to(*dtype) : self;
  return accumulate("sum", detail::ReduceKind::Sum, input, reduced_dims("sum", self.dim(), dim),
                    keepdim, accumulate_dtype(out_dtype), out_dtype);
}

Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return accumulate("mean", detail::ReduceKind::Mean, self, reduced_dims("mean", self.dim(), dim),
                    keepdim, kFloat64, self.dtype());
}

Tensor prod(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const std::vector<bool> reduced =
      dim ? reduced_dims("prod", self.dim(), {*dim}) : reduced_dims("prod", self.dim(), {});
  const DType out_dtype = is_floating(self.dtype()) ? self.dtype() : kInt64;
  return accumulate("prod", detail::ReduceKind::Prod, self, reduced, keepdim,
                    accumulate_dtype(out_dtype), out_dtype);
}

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return accumulate("amax", detail::ReduceKind::Max, self, reduced_dims("amax", self.dim(), dim),
                    keepdim, self.dtype(), self.dtype());
}

Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return accumulate("amin", detail::ReduceKind::Min, self, reduced_dims("amin", self.dim(), dim),
                    keepdim, self.dtype(), self.dtype());
}

std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<true>("max", self, dim, keepdim);
}

std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return extreme_with_index<false>("min", self, dim, keepdim);
}

}  // namespace tg::cuda
