#pragma once
// The backend-neutral part of cat and stack: the result's shape and dtype, which inputs take
// part, and the slice of the result each fills. Each backend passes only its copy. Shapes were
// checked before dispatch (ops/checks/join.cpp).
#include <cstdint>
#include <vector>

#include <tapegrad/core/tensor_base.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

namespace tg::shared {

// The dtype of the result: all inputs promoted together, as in PyTorch.
inline DType promoted_dtype(const std::vector<Tensor>& tensors) {
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  return dtype;
}

// cat skips 1-D empty tensors whatever the other shapes are (PyTorch's legacy rule).
inline bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// The view of `out` with `shape`, starting `index` steps along `dim` (strides as out's, minus
// `dim` itself when drop_dim is set: stack writes one slice per input).
inline Tensor slice_of(const Tensor& out, const Shape& shape, int64_t dim, int64_t index,
                       bool drop_dim) {
  Shape strides = out.strides();
  const int64_t offset = out.storage_offset() + index * strides[static_cast<size_t>(dim)];
  if (drop_dim) strides.erase(static_cast<size_t>(dim));
  return make_view(out, shape, strides, offset);
}

// cat (stack = false) or stack of tensors along dim: allocates the result and calls
// copy(out, d, slice, input) for each input that takes part, d being the wrapped dim of out.
template <typename Copy>
Tensor join(bool stack, const std::vector<Tensor>& tensors, int64_t dim, Copy copy) {
  const DType dtype = promoted_dtype(tensors);
  if (stack) {
    const Shape& shape = tensors[0].shape();
    const int64_t d = wrap_dim("stack", dim, tensors[0].dim() + 1);
    Shape out_shape = shape;
    out_shape.insert(static_cast<size_t>(d), static_cast<int64_t>(tensors.size()));
    Tensor out = empty(out_shape, dtype, tensors[0].device());
    for (size_t i = 0; i < tensors.size(); ++i)
      copy(out, d, slice_of(out, shape, d, static_cast<int64_t>(i), true), tensors[i]);
    return out;
  }
  const Tensor* ref = nullptr;  // the first tensor cat does not skip
  for (const Tensor& t : tensors)
    if (!ref && !skipped_by_cat(t)) ref = &t;
  if (!ref) {  // only [0] tensors
    wrap_dim("cat", dim, 1);
    return empty({0}, dtype, tensors[0].device());
  }
  const int64_t d = wrap_dim("cat", dim, ref->dim());
  Shape out_shape = ref->shape();
  out_shape[static_cast<size_t>(d)] = 0;
  for (const Tensor& t : tensors)
    if (!skipped_by_cat(t)) out_shape[static_cast<size_t>(d)] += t.size(d);
  Tensor out = empty(out_shape, dtype, ref->device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (skipped_by_cat(t)) continue;
    copy(out, d, slice_of(out, t.shape(), d, offset, false), t);
    offset += t.size(d);
  }
  return out;
}

}  // namespace tg::shared
