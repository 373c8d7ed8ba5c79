// CPU cat and stack: allocate the result in the promoted dtype and copy each input into its slice
// of the result (copy_data converts dtypes and handles strides). The shapes are checked before
// dispatch (ops/checks/join.cpp).
#include <algorithm>
#include <cstring>

#include <tapegrad/core/copy.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {
namespace {

// The dtype of the result: all inputs promoted together, as in PyTorch.
DType promoted_dtype(const std::vector<Tensor>& tensors) {
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  return dtype;
}

// The view of `out` with `shape`, starting `index` steps along `dim` (strides as out's, minus
// `dim` itself when drop_dim is set: stack writes one slice per input).
Tensor slice_of(const Tensor& out, const Shape& shape, int64_t dim, int64_t index, bool drop_dim) {
  Shape strides = out.strides();
  const int64_t offset = out.storage_offset() + index * strides[dim];
  if (drop_dim) strides.erase(static_cast<size_t>(dim));
  return make_view(out, shape, strides, offset);
}

// Copies t into `slice`, its place in the contiguous result: `rows` runs of t.numel() / rows
// elements, `run_stride` elements apart. A contiguous t of the result's dtype (the common case)
// is copied run by run with memcpy; anything else element by element, converting.
void copy_into(const Tensor& slice, const Tensor& t, int64_t rows, int64_t run_stride) {
  if (t.dtype() != slice.dtype() || !t.is_contiguous() || t.numel() == 0) {
    copy_data(slice, t);
    return;
  }
  const int64_t run = t.numel() / rows, item = static_cast<int64_t>(itemsize(t.dtype()));
  const char* src = static_cast<const char*>(t.data_ptr());
  char* dst = static_cast<char*>(slice.data_ptr());
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / run), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      std::memcpy(dst + r * run_stride * item, src + r * run * item, run * item);
  });
}

// cat skips 1-D empty tensors whatever the other shapes are (PyTorch's legacy rule).
bool skipped_by_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const Tensor* ref = nullptr;  // the first tensor cat does not skip
  for (const Tensor& t : tensors)
    if (!ref && !skipped_by_cat(t)) ref = &t;
  const DType dtype = promoted_dtype(tensors);
  if (!ref) {  // only [0] tensors
    wrap_dim("cat", dim, 1);
    return empty({0}, dtype, tensors[0].device());
  }
  const int64_t d = wrap_dim("cat", dim, ref->dim());
  Shape out_shape = ref->shape();
  out_shape[d] = 0;
  for (const Tensor& t : tensors)
    if (!skipped_by_cat(t)) out_shape[d] += t.size(d);
  Tensor out = empty(out_shape, dtype, ref->device());
  // Each input lands in `rows` runs of the result, one per index of the dims before d.
  int64_t rows = 1, offset = 0;
  for (int64_t k = 0; k < d; ++k) rows *= out_shape[k];
  const int64_t run_stride = d > 0 ? out.strides()[d - 1] : 0;
  for (const Tensor& t : tensors) {
    if (skipped_by_cat(t)) continue;
    copy_into(slice_of(out, t.shape(), d, offset, /*drop_dim=*/false), t, rows, run_stride);
    offset += t.size(d);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  const Shape& shape = tensors[0].shape();
  const int64_t d = wrap_dim("stack", dim, tensors[0].dim() + 1);
  Shape out_shape = shape;
  out_shape.insert(static_cast<size_t>(d), static_cast<int64_t>(tensors.size()));
  Tensor out = empty(out_shape, promoted_dtype(tensors), tensors[0].device());
  int64_t rows = 1;
  for (int64_t k = 0; k < d; ++k) rows *= out_shape[k];
  const int64_t run_stride = d > 0 ? out.strides()[d - 1] : 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    copy_into(slice_of(out, shape, d, static_cast<int64_t>(i), /*drop_dim=*/true), tensors[i], rows,
              run_stride);
  return out;
}

}  // namespace tg::cpu
