#pragma once
// Device-wide algorithms behind one interface: CUB or Thrust on the GPU, Thrust's host device
// system (or a launch_n loop) in the emulation. Kernels that need threads to cooperate (sums,
// scans, compaction) call these instead of writing shared-memory code. Temporaries come from the
// caching allocator.
#include <cstddef>
#include <cstdint>

#include <thrust/execution_policy.h>
#include <thrust/scan.h>

#include "launch.cuh"

#if !defined(TG_CUDA_EMULATION)
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/system/cuda/execution_policy.h>
#endif

namespace tg::cuda::detail {

// Thrust's temporary storage from the caching allocator.
struct ThrustAllocator {
  using value_type = char;
  char* allocate(std::ptrdiff_t n) { return static_cast<char*>(device_alloc(n > 0 ? n : 1)); }
  void deallocate(char* p, size_t n) { device_free(p, n > 0 ? n : 1); }
};

// The execution policy of every Thrust call: the default stream, no implicit synchronisation
// (par_nosync) on the GPU; the configured host device system in the emulation.
inline auto thrust_policy(ThrustAllocator& alloc) {
#if defined(TG_CUDA_EMULATION)
  return thrust::device(alloc);
#else
  return thrust::cuda::par_nosync(alloc).on(0);
#endif
}

// out[r] = init op row r (op over the cols elements of row r of a contiguous rows x cols
// matrix), for rows > 0, cols >= 0. Op is a __host__ __device__ binary functor.
template <typename T, typename Op> struct RowReduceBody {
  const T* in;
  T* out;
  int64_t cols;
  Op op;
  T init;
  __host__ __device__ void operator()(int64_t r) const {
    T acc = init;
    for (int64_t c = 0; c < cols; ++c) acc = op(acc, in[r * cols + c]);
    out[r] = acc;
  }
};

// offsets[r] = r * cols: where each row starts (and the previous one ends).
struct RowOffsetsBody {
  int64_t* offsets;
  int64_t cols;
  __host__ __device__ void operator()(int64_t r) const { offsets[r] = r * cols; }
};

template <typename T, typename Op> void reduce_rows(const char* op_name, const T* in, T* out,
                                                    int64_t rows, int64_t cols, Op op, T init) {
  if (rows <= 0) return;
#if defined(TG_CUDA_EMULATION)
  launch_n(op_name, rows, RowReduceBody<T, Op>{in, out, cols, op, init});
#else
  if (cols == 0) {
    launch_n(op_name, rows, RowReduceBody<T, Op>{in, out, cols, op, init});
    return;
  }
  // CUB treats a null temp-storage pointer as "only report the size", so the real call must get
  // a non-null buffer even when CUB asks for 0 bytes.
  size_t temp_bytes = 0;
  if (rows == 1) {
    TG_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, temp_bytes, in, out, cols, op, init), op_name);
    DeviceBuffer temp(temp_bytes > 16 ? temp_bytes : 16);
    TG_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.get(), temp_bytes, in, out, cols, op, init),
                  op_name);
    return;
  }
  DeviceBuffer offsets_buffer(static_cast<size_t>(rows + 1) * sizeof(int64_t));
  int64_t* offsets = static_cast<int64_t*>(offsets_buffer.get());
  launch_n(op_name, rows + 1, RowOffsetsBody{offsets, cols});
  TG_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(nullptr, temp_bytes, in, out, rows, offsets,
                                                   offsets + 1, op, init),
                op_name);
  DeviceBuffer temp(temp_bytes > 16 ? temp_bytes : 16);
  TG_CUDA_CHECK(cub::DeviceSegmentedReduce::Reduce(temp.get(), temp_bytes, in, out, rows, offsets,
                                                   offsets + 1, op, init),
                op_name);
#endif
}

// out[i] = sum of in[0..i) (out[0] = 0), n elements, no host synchronisation.
template <typename T> void exclusive_scan(const T* in, T* out, int64_t n) {
  if (n <= 0) return;
  ThrustAllocator alloc;
  thrust::exclusive_scan(thrust_policy(alloc), in, in + n, out);
}

}  // namespace tg::cuda::detail
