#pragma once
// The one generic elementwise kernel: for every element of the iteration shape, its per-operand
// offsets go to a small functor op(off). Contiguous layouts skip the index math. Launched
// through launch.cuh, so the same functor runs on the GPU and in the emulation.
#include "launch.cuh"

namespace tg::cuda::detail {

// Element offsets of linear (row-major) index i in each of the N operands.
template <int N> __host__ __device__ inline void strided_offsets(const StridedLayout<N>& layout,
                                                                 int64_t i, int64_t* off) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const int64_t size = layout.sizes[d];
    const int64_t index = i % size;
    i /= size;
    for (int k = 0; k < N; ++k) off[k] += index * layout.strides[k][d];
  }
}

// The body run for each index i: computes the offsets and calls op.
template <int N, bool Contiguous, typename Op> struct ElementwiseBody {
  StridedLayout<N> layout;
  Op op;
  __host__ __device__ void operator()(int64_t i) const {
    int64_t off[N];
    if constexpr (Contiguous) {
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      strided_offsets(layout, i, off);
    }
    op(off);
  }
};

// Calls op(off) for every element, off[k] being operand k's element offset.
template <int N, typename Op>
void launch_elementwise(const char* op_name, int64_t n, const StridedLayout<N>& layout, Op op) {
  if (layout.contiguous) {
    launch_n(op_name, n, ElementwiseBody<N, true, Op>{layout, op});
  } else {
    launch_n(op_name, n, ElementwiseBody<N, false, Op>{layout, op});
  }
}

}  // namespace tg::cuda::detail
