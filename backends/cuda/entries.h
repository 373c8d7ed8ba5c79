#pragma once
// Host side of the indexing kernels: building a scatter plan (indexing_kernels.h) from tensors.
#include <tapegrad/core/copy.h>
#include <tapegrad/core/deterministic.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include "device_errors.h"
#include "indexing_kernels.h"
#include "layout.h"

namespace tg::cuda::detail {

// A 0-d tensor as [1] (the indexing ops treat a 0-d self, index or src as one element).
inline Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? Tensor(make_view(t, {1}, {1}, t.storage_offset())) : t;
}
// r (a result computed on as_1d(input)) back as 0-d when input is.
inline Tensor like_input(const Tensor& r, const Tensor& input) {
  return input.dim() == 0 && r.dim() == 1 ? Tensor(make_view(r, {}, {}, r.storage_offset())) : r;
}

// A fresh contiguous copy of t (same device and dtype).
inline Tensor fresh_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

// The index values as a contiguous int64 tensor on the device.
inline Tensor index64(const Tensor& index) {
  if (index.dtype() == kInt64 && index.is_contiguous()) return index;
  Tensor out = empty(index.shape(), kInt64, index.device());
  copy_data(out, index);
  return out;
}
// t as a contiguous tensor of dtype (t itself when it already is one).
inline Tensor dense(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  copy_data(out, t);
  return out;
}

// The entries of one scatter-like call, sorted by slot when asked.
struct Entries {
  Tensor slots, order, src_off;  // int64 [n]; order undefined unless sorted
  int64_t n = 0;
};

// Entries over `iter` (the iteration shape): index element at index_strides, source element at
// src_strides, slot along `dim` of a target with target_strides (size dim_size there).
inline Entries make_entries(const char* op, const Shape& iter, const Shape& index_strides,
                            const Shape& src_strides, const Shape& target_strides, int64_t dim,
                            int64_t dim_size, const Tensor& index, bool sort,
                            bool wrap_negative = false, int32_t error_code = 0) {
  EntryLayout l;
  l.iter = make_layout<2>(op, iter, {index_strides, src_strides});
  for (size_t d = 0; d < target_strides.size(); ++d) l.target_strides[d] = target_strides[d];
  l.dim = static_cast<int>(dim);
  l.dim_size = dim_size;
  l.wrap_negative = wrap_negative;
  l.error_code = error_code;
  Entries e;
  e.n = iter.numel();
  const Device device = index.device();
  e.slots = empty({e.n}, kInt64, device);
  e.src_off = empty({e.n}, kInt64, device);
  launch_entries(op, l, index.data<int64_t>(), e.n, e.slots.data<int64_t>(),
                 e.src_off.data<int64_t>());
  checkpoint();  // checked mode: raise a bad index here, before anything is written
  if (sort) {
    e.order = empty({e.n}, kInt64, device);
    sort_entries(e.slots.data<int64_t>(), e.order.data<int64_t>(), e.n);
  }
  return e;
}

// Whether a scatter-like accumulation takes the atomic path (launch_combine_atomic): deterministic
// algorithms off (core/deterministic.h), a reduce that accumulates and a dtype with atomics.
// Assignments (the last entry in index order wins) and bool always sort.
inline bool atomic_path(ScatterReduce reduce, DType dtype) {
  return !are_deterministic_algorithms_enabled() && reduce != ScatterReduce::Assign &&
         dtype != kBool;
}

// Combines the entries of src into out (contiguous): in index order when they were sorted,
// atomically when not (make_entries with sort = !atomic_path(...)).
inline void combine_into(const Entries& e, ScatterReduce reduce, const Tensor& out,
                         const Tensor& src, bool include_self, const Scalar& scale) {
  if (e.order.defined()) {
    launch_combine(reduce, out.dtype(), out.data_ptr(), src.data_ptr(), e.slots.data<int64_t>(),
                   e.order.data<int64_t>(), e.src_off.data<int64_t>(), e.n, include_self, scale);
  } else {
    launch_combine_atomic(reduce, out.dtype(), out.data_ptr(), out.numel(), src.data_ptr(),
                          e.slots.data<int64_t>(), e.src_off.data<int64_t>(), e.n, include_self,
                          scale);
  }
}

// Strides that follow a 1-d index along dim over `iter` (0 elsewhere): the index_* ops' row form.
inline Shape row_index_strides(size_t ndim, int64_t dim) {
  Shape s(ndim, 0);
  s[static_cast<size_t>(dim)] = 1;
  return s;
}

}  // namespace tg::cuda::detail
