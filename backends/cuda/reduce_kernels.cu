// Sum reductions with CUB: a whole contiguous array, or each row of a contiguous matrix.
#include <algorithm>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include "cuda_utils.h"

namespace tg::cuda::detail {
namespace {

// offsets[i] = i * cols for i in [0, count): where each row starts (and the previous one ends).
__global__ void row_offsets_kernel(int64_t* offsets, int64_t count, int64_t cols) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += step) {
    offsets[i] = i * cols;
  }
}

// CUB treats a null temp-storage pointer as "only report the size", so the real call must get a
// non-null buffer even when CUB asks for 0 bytes.
size_t temp_size(size_t cub_bytes) { return std::max<size_t>(cub_bytes, 16); }

}  // namespace

void launch_sum_all(const void* in, void* out, DType dtype, int64_t n) {
  visit_dtype("sum", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d_in = static_cast<const T*>(in);
    T* d_out = static_cast<T*>(out);
    size_t temp_bytes = 0;
    TG_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, d_in, d_out, n), "sum");
    DeviceBuffer temp(temp_size(temp_bytes));
    TG_CUDA_CHECK(cub::DeviceReduce::Sum(temp.get(), temp_bytes, d_in, d_out, n), "sum");
  });
}

void launch_sum_rows(const void* in, void* out, DType dtype, int64_t rows, int64_t cols) {
  // Row r is the segment [offsets[r], offsets[r + 1]).
  DeviceBuffer offsets_buffer(static_cast<size_t>(rows + 1) * sizeof(int64_t));
  int64_t* offsets = static_cast<int64_t*>(offsets_buffer.get());
  const int64_t blocks = std::min<int64_t>((rows + 1 + 255) / 256, 65535);
  row_offsets_kernel<<<static_cast<unsigned>(blocks), 256>>>(offsets, rows + 1, cols);
  TG_CUDA_CHECK(cudaGetLastError(), "sum");

  visit_dtype("sum", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d_in = static_cast<const T*>(in);
    T* d_out = static_cast<T*>(out);
    size_t temp_bytes = 0;
    TG_CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, d_in, d_out, rows, offsets,
                                                  offsets + 1),
                  "sum");
    DeviceBuffer temp(temp_size(temp_bytes));
    TG_CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(temp.get(), temp_bytes, d_in, d_out, rows,
                                                  offsets, offsets + 1),
                  "sum");
  });
}

}  // namespace tg::cuda::detail
