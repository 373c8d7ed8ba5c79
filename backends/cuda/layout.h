#pragma once
// Host side: a StridedLayout built from tensor metadata, and dense_as for the drivers whose
// kernels take contiguous operands.
#include <array>

#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/ops/factories.h>

#include "cuda_utils.h"

namespace tg::cuda::detail {

// The layout of N operands iterated over `shape`, each with its strides (already broadcast to
// `shape`). ValueError naming op beyond kMaxDims dims.
template <int N> StridedLayout<N> make_layout(const char* op, const Shape& shape,
                                              const std::array<Shape, N>& strides) {
  TG_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), ValueError, op,
           "CUDA kernels support at most ", kMaxDims, " dims, got shape ", shape);
  const Shape expected = contiguous_strides(shape);
  StridedLayout<N> layout;
  layout.ndim = static_cast<int>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    layout.sizes[d] = shape[d];
    for (int k = 0; k < N; ++k) {
      layout.strides[k][d] = strides[k][d];
      // A size-1 dim never moves the index, so its stride does not matter.
      if (shape[d] != 1 && strides[k][d] != expected[d]) layout.contiguous = false;
    }
  }
  return layout;
}

}  // namespace tg::cuda::detail

namespace tg::cuda {

// t as a contiguous tensor of dtype (t itself when it already is one): the drivers whose
// kernels index operands as flat row-major arrays call it on every input.
inline Tensor dense_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  copy_data(out, t);
  return out;
}

// t as a contiguous tensor of its own dtype.
inline Tensor dense(const Tensor& t) { return dense_as(t, t.dtype()); }

}  // namespace tg::cuda
