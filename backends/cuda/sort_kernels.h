#pragma once
// The plain-data interface of sort_kernels.cu (sort, topk, one_hot).
#include "cuda_utils.h"

namespace tg::cuda::detail {

// Rows along one dim of a contiguous tensor [outer, size, inner]: row r = o * inner + i.
struct SortRows {
  int64_t outer = 1, size = 1, inner = 1;
  int64_t rows() const { return outer * inner; }
};

// values / indices [outer, k, inner] = the first k elements of each row of x in sorted order
// (ascending, or descending), and their positions in the row. The order is stable (ties keep
// their order in both directions) and puts NaN above every number, as the CPU's. keys and perm
// are device scratch buffers of rows * size elements.
void launch_sort_rows(DType dtype, const void* x, const SortRows& l, int64_t k, bool descending,
                      uint64_t* keys, int64_t* perm, void* values, int64_t* indices);

// out [n, classes] (zeroed) gets out[i, index[i]] = 1; an index outside [0, classes) is recorded
// as a device error of one_hot instead.
void launch_one_hot(const int64_t* index, int64_t n, int64_t classes, int64_t* out);

}  // namespace tg::cuda::detail
