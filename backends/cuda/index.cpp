// CUDA index_select, index_add, index_copy, index_reduce, index_select_backward, index_fill
// (tensor and scalar value), index_fill_value_backward and index_reduce's fused backward: the row
// form of the scatter plan (entries.h), a 1-d index along dim. Arguments were checked before
// dispatch (ops/checks/index.cpp); index values are checked on the device (device_errors.h).
#include <tapegrad/generated/kernels.h>

#include "entries.h"

namespace tg::cuda {
namespace {

using detail::ScatterReduce;

ScatterReduce parse_reduce(const std::string& name) {
  if (name == "prod") return ScatterReduce::Prod;
  if (name == "mean") return ScatterReduce::Mean;
  if (name == "amax") return ScatterReduce::Amax;
  if (name == "amin") return ScatterReduce::Amin;
  fail<ValueError>("index_reduce", "unknown reduce '", name, "'");
}

// Entries over `iter` (source's shape, or the output's for index_select), the index followed
// along dim, slots in `target` (size dim_size along dim).
detail::Entries row_entries(const char* op, const Shape& iter, const Shape& src_strides,
                            const Shape& target_strides, int64_t d, int64_t dim_size,
                            const Tensor& index, bool sort, bool wrap_negative = false) {
  const Tensor idx = detail::index64(detail::as_1d(index));
  return detail::make_entries(op, iter, detail::row_index_strides(iter.size(), d), src_strides,
                              target_strides, d, dim_size, idx, sort, wrap_negative);
}

// source combined into a copy of base along dim at index (index_add/copy/reduce and
// index_select_backward), atomically unless deterministic or an assignment (entries.h).
Tensor index_scatter(const char* op, const Tensor& base, int64_t dim, const Tensor& index,
                     const Tensor& source, ScatterReduce reduce, bool include_self,
                     const Scalar& scale = 1) {
  const Tensor base1 = detail::as_1d(base);
  const Tensor src1 = detail::dense(detail::as_1d(source), base.dtype());
  const int64_t d = wrap_dim(op, dim, base1.dim());
  Tensor out = detail::fresh_copy(base1);
  if (src1.numel() > 0) {
    const bool sort = !detail::atomic_path(reduce, out.dtype());
    const detail::Entries e =
        row_entries(op, src1.shape(), src1.strides(), out.strides(), d, out.size(d), index, sort);
    detail::combine_into(e, reduce, out, src1, include_self, scale);
  }
  return detail::like_input(out, base);
}

// The positions along dim that index_fill sets (each slot of self's shape with its coordinate
// along dim in index, negatives from the end): entries over self's shape with dim -> index.
detail::Entries fill_entries(const char* op, const Tensor& t1, int64_t d, const Tensor& index) {
  Shape iter = t1.shape();
  iter[static_cast<size_t>(d)] = detail::as_1d(index).numel();
  return row_entries(op, iter, Shape(iter.size(), 0), t1.strides(), d, t1.size(d), index, false,
                     /*wrap_negative=*/true);
}

Tensor fill_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
               const Tensor& value) {
  const Tensor self1 = detail::as_1d(self);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  Tensor out = detail::fresh_copy(self1);
  const Tensor v = detail::dense(value.device() == self.device() ? value : value.to(self.device()),
                                 self.dtype());
  const detail::Entries e = fill_entries(op, out, d, index);
  detail::launch_fill_slots(self.dtype(), out.data_ptr(), v.data_ptr(), e.slots.data<int64_t>(),
                            e.n);
  return detail::like_input(out, self);
}

}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  const Tensor self1 = detail::as_1d(self);
  const int64_t d = wrap_dim("index_select", dim, self1.dim());
  Shape shape = self1.shape();
  shape[static_cast<size_t>(d)] = detail::as_1d(index).numel();
  Tensor out = empty(shape, self.dtype(), self.device());
  if (out.numel() > 0) {
    const detail::Entries e = row_entries("index_select", shape, Shape(shape.size(), 0),
                                          self1.strides(), d, self1.size(d), index, false);
    detail::launch_gather_slots(self.dtype(), out.data_ptr(), self1.data_ptr(),
                                e.slots.data<int64_t>(), e.n);
  }
  return detail::like_input(out, self);
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  return index_scatter("index_add", self, dim, index, source, ScatterReduce::Sum, true, alpha);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_scatter("index_copy", self, dim, index, source, ScatterReduce::Assign, true);
}

Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const std::string& reduce, bool include_self) {
  return index_scatter("index_reduce", self, dim, index, source, parse_reduce(reduce),
                       include_self);
}

Tensor index_select_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                             const Tensor& index) {
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor base = zeros(shape, grad_output.dtype(), grad_output.device());
  return index_scatter("index_select_backward", base, dim, index, grad_output, ScatterReduce::Sum,
                       true);
}

std::tuple<Tensor, Tensor> index_reduce_backward(const Tensor& grad_output, const Tensor& self,
                                                 int64_t dim, const Tensor& index,
                                                 const Tensor& source, const std::string& reduce,
                                                 bool include_self, const Tensor& result,
                                                 const std::string& input) {
  constexpr const char* op = "index_reduce_backward";
  const DType dtype = self.dtype();
  const Tensor self1 = detail::dense(detail::as_1d(self), dtype);
  const Tensor src1 = detail::dense(detail::as_1d(source), dtype);
  const Tensor grad1 = detail::dense(detail::as_1d(grad_output), dtype);
  const Tensor result1 = detail::dense(detail::as_1d(result), dtype);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  const bool want_self = input != "source", want_src = input != "self";
  Tensor grad_self = want_self ? empty(self1.shape(), dtype, self.device()) : Tensor();
  Tensor grad_src = want_src ? zeros(src1.shape(), dtype, self.device()) : Tensor();
  const detail::Entries e =
      row_entries(op, src1.shape(), src1.strides(), self1.strides(), d, self1.size(d), index, true);
  detail::launch_reduce_backward(parse_reduce(reduce), dtype, grad1.data_ptr(), self1.data_ptr(),
                                 result1.data_ptr(), src1.data_ptr(), self1.numel(),
                                 e.slots.data<int64_t>(), e.order.data<int64_t>(),
                                 e.src_off.data<int64_t>(), e.n, include_self,
                                 want_self ? grad_self.data_ptr() : nullptr,
                                 want_src ? grad_src.data_ptr() : nullptr);
  return {want_self ? detail::like_input(grad_self, self) : Tensor(),
          want_src ? detail::like_input(grad_src, source) : Tensor()};
}

Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return fill_op("index_fill", self, dim, index, value);
}

Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index,
                         const Scalar& value) {
  return fill_op("index_fill_scalar", self, dim, index, scalar_to_tensor(value, self.device()));
}

// The sum of grad over the filled slices, each once: a mask of the filled positions, then
// sum(where(mask, grad, 0)).
Tensor index_fill_value_backward(const Tensor& grad_output, int64_t dim, const Tensor& index) {
  constexpr const char* op = "index_fill_value_backward";
  const Tensor grad1 = detail::as_1d(grad_output);
  const int64_t d = wrap_dim(op, dim, grad1.dim());
  Tensor mask = zeros(grad1.shape(), kBool, grad1.device());
  const Tensor yes = detail::dense(scalar_to_tensor(true, grad1.device()), kBool);
  const detail::Entries e = fill_entries(op, mask, d, index);
  detail::launch_fill_slots(kBool, mask.data_ptr(), yes.data_ptr(), e.slots.data<int64_t>(), e.n);
  const Tensor none = zeros({}, grad1.dtype(), grad1.device());
  return cuda::sum(cuda::where(mask, grad1, none), {}, false, std::nullopt);
}

}  // namespace tg::cuda
