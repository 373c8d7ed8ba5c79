#pragma once
// The one generic elementwise kernel: a grid-stride loop over the iteration shape that hands each
// element's per-operand offsets to a small functor. Contiguous layouts skip the index math.
#include <algorithm>

#include "cuda_utils.h"

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

// Calls op(off) for every element, off[k] being operand k's element offset.
template <int N, bool Contiguous, typename Op>
__global__ void elementwise_kernel(int64_t n, StridedLayout<N> layout, Op op) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[N];
    if constexpr (Contiguous) {
      for (int k = 0; k < N; ++k) off[k] = i;
    } else {
      strided_offsets(layout, i, off);
    }
    op(off);
  }
}

inline constexpr int kThreadsPerBlock = 256;
inline constexpr int64_t kMaxBlocks = 65535;  // the grid-stride loop covers the rest

// Launches elementwise_kernel on the default stream and checks the launch.
template <int N, typename Op>
void launch_elementwise(const char* op_name, int64_t n, const StridedLayout<N>& layout, Op op) {
  if (n == 0) return;
  const int64_t blocks = std::min((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kThreadsPerBlock);
  if (layout.contiguous) {
    elementwise_kernel<N, true><<<grid, block>>>(n, layout, op);
  } else {
    elementwise_kernel<N, false><<<grid, block>>>(n, layout, op);
  }
  TG_CUDA_CHECK(cudaGetLastError(), op_name);
}

}  // namespace tg::cuda::detail
