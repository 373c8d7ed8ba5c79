// CUDA gather, scatter, scatter_add, scatter_reduce, gather_backward and scatter_reduce's fused
// backward: one scatter plan each (entries.h, indexing_kernels.h). Arguments were checked before
// dispatch (ops/checks/scatter.cpp); index values are checked on the device (device_errors.h).
#include <tapegrad/generated/kernels.h>

#include "entries.h"

namespace tg::cuda {
namespace {

using detail::ScatterReduce;

ScatterReduce parse_reduce(const std::string& name) {
  if (name == "sum") return ScatterReduce::Sum;
  if (name == "prod") return ScatterReduce::Prod;
  if (name == "mean") return ScatterReduce::Mean;
  if (name == "amax") return ScatterReduce::Amax;
  if (name == "amin") return ScatterReduce::Amin;
  fail<ValueError>("scatter", "unknown reduce '", name, "'");
}

// The entries of index (walk form: one per index element) into a target of `target` strides.
detail::Entries walk_entries(const char* op, const Tensor& index1, const Tensor& index64,
                             const Shape& src_strides, const Tensor& target, int64_t d, bool sort) {
  return detail::make_entries(op, index1.shape(), index64.strides(), src_strides, target.strides(),
                              d, target.size(d), index64, sort);
}

// scatter, scatter_add, scatter_reduce, gather_backward: src scattered into a copy of `base`,
// atomically unless deterministic algorithms are on or it assigns (entries.h, atomic_path).
Tensor scatter_op(const char* op, const Tensor& base, int64_t dim, const Tensor& index,
                  const Tensor& src, ScatterReduce reduce, bool include_self,
                  const Scalar& scale = 1) {
  const Tensor base1 = detail::as_1d(base), index1 = detail::as_1d(index);
  const Tensor src1 = detail::dense(detail::as_1d(src), base.dtype());
  const int64_t d = wrap_dim(op, dim, base1.dim());
  Tensor out = detail::fresh_copy(base1);
  if (index1.numel() > 0) {
    const Tensor idx = detail::index64(index1);
    const bool sort = !detail::atomic_path(reduce, out.dtype());
    const detail::Entries e = walk_entries(op, index1, idx, src1.strides(), out, d, sort);
    detail::combine_into(e, reduce, out, src1, include_self, scale);
  }
  return detail::like_input(out, base);
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = detail::as_1d(self), index1 = detail::as_1d(index);
  const int64_t d = wrap_dim("gather", dim, self1.dim());
  Tensor out = empty(index1.shape(), self.dtype(), self.device());
  if (index1.numel() > 0) {
    const Tensor idx = detail::index64(index1);
    const detail::Entries e =
        walk_entries("gather", index1, idx, Shape(static_cast<size_t>(index1.dim()), 0), self1, d,
                     false);
    detail::launch_gather_slots(self.dtype(), out.data_ptr(), self1.data_ptr(),
                                e.slots.data<int64_t>(), e.n);
  }
  return detail::like_input(out, index);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter", self, dim, index, src, ScatterReduce::Assign, true);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op("scatter_add", self, dim, index, src, ScatterReduce::Sum, true);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  return scatter_op("scatter_reduce", self, dim, index, src, parse_reduce(reduce), include_self);
}

Tensor gather_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                       const Tensor& index) {
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor base = zeros(shape, grad_output.dtype(), grad_output.device());
  return scatter_op("gather_backward", base, dim, index, grad_output, ScatterReduce::Sum, true);
}

std::tuple<Tensor, Tensor> scatter_reduce_backward(const Tensor& grad_output, const Tensor& self,
                                                   int64_t dim, const Tensor& index,
                                                   const Tensor& src, const std::string& reduce,
                                                   bool include_self, const Tensor& result,
                                                   const std::string& input) {
  constexpr const char* op = "scatter_reduce_backward";
  const DType dtype = self.dtype();
  const Tensor self1 = detail::dense(detail::as_1d(self), dtype);
  const Tensor src1 = detail::dense(detail::as_1d(src), dtype);
  const Tensor grad1 = detail::dense(detail::as_1d(grad_output), dtype);
  const Tensor result1 = detail::dense(detail::as_1d(result), dtype);
  const Tensor index1 = detail::as_1d(index);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  const bool want_self = input != "src", want_src = input != "self";
  Tensor grad_self = want_self ? empty(self1.shape(), dtype, self.device()) : Tensor();
  Tensor grad_src = want_src ? zeros(src1.shape(), dtype, self.device()) : Tensor();
  const Tensor idx = detail::index64(index1);
  const detail::Entries e = walk_entries(op, index1, idx, src1.strides(), self1, d, true);
  detail::launch_reduce_backward(parse_reduce(reduce), dtype, grad1.data_ptr(), self1.data_ptr(),
                                 result1.data_ptr(), src1.data_ptr(), self1.numel(),
                                 e.slots.data<int64_t>(), e.order.data<int64_t>(),
                                 e.src_off.data<int64_t>(), e.n, include_self,
                                 want_self ? grad_self.data_ptr() : nullptr,
                                 want_src ? grad_src.data_ptr() : nullptr);
  return {want_self ? detail::like_input(grad_self, self) : Tensor(),
          want_src ? detail::like_input(grad_src, src) : Tensor()};
}

}  // namespace tg::cuda
