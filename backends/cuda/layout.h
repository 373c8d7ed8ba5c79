#pragma once
// Host side: a StridedLayout built from tensor metadata.
#include <array>

#include <tapegrad/core/error.h>
#include <tapegrad/core/shape.h>

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
