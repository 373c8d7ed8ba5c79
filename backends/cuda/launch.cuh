#pragma once
// The launch layer: f(i) for every i in [0, n), on the backend's stream. With nvcc it is one
// grid-stride kernel launch; in the emulation build the same functor runs over the same index
// range in an OpenMP loop (as Thrust's OpenMP device system runs its for_each; a plain loop
// without OpenMP). Not through Thrust's for_each itself: its iterator layers, one instance per
// kernel, doubled the emulated kernels' compile and ran slowly unoptimised (docs/CI.md).
// Kernels must therefore not depend on the order of i nor on which thread runs it; cooperation
// between indices goes through atomics (atomics.cuh) or the device-wide algorithms
// (algorithms.cuh), never through shared memory.
#include <algorithm>
#include <cstdint>

#include "cuda_utils.h"

namespace tg::cuda::detail {

#if !defined(TG_CUDA_EMULATION)
template <typename F> __global__ void grid_stride_kernel(int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    f(i);
}
#endif

inline constexpr int kThreadsPerBlock = 256;
inline constexpr int64_t kMaxBlocks = 65535;  // the grid-stride loop covers the rest

// Runs f(i) for i in [0, n) and checks the launch (the kernel's own failures surface at the
// next synchronisation, as CUDA reports them).
template <typename F> void launch_n(const char* op, int64_t n, const F& f) {
  if (n <= 0) return;
#if defined(TG_CUDA_EMULATION)
  (void)op;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
  for (int64_t i = 0; i < n; ++i) f(i);
#else
  const int64_t blocks = std::min((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  const unsigned grid = static_cast<unsigned>(blocks), block = kThreadsPerBlock;
  // clang-format off
  grid_stride_kernel<<<grid, block>>>(n, f);
  // clang-format on
  TG_CUDA_CHECK(cudaGetLastError(), op);
#endif
}

}  // namespace tg::cuda::detail
