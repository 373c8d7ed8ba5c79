#pragma once
// The row form of the indexing engine (index_select, index_add, index_copy, index_reduce,
// index_fill): contiguous tensors seen as [outer, slots, inner] and a 1-d index of n entries;
// entry k combines a whole row of `inner` values, in loops the compiler vectorises.
#include <algorithm>
#include <cstdint>

#include <tapegrad/backends/cpu/one_value.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"

namespace tg::cpu::indexing {

// A tensor seen as [outer, mid, inner] around dim: rows of `inner` contiguous values, row (o, m)
// at data + o * outer_stride + m * mid_stride. A contiguous tensor is read in place; a tensor with
// every stride 0 (an expanded scalar, e.g. the gradient of a sum) as one row repeated; anything
// else is made contiguous first.
template <typename T> struct Rows {
  const T* data = nullptr;
  int64_t outer_stride = 0, mid_stride = 0;
  Tensor keep;  // keeps a copy or the repeated row alive
  const T* row(int64_t o, int64_t m) const { return data + o * outer_stride + m * mid_stride; }
};

// [outer, mid, inner] sizes of `shape` around dim.
struct Dims3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
inline Dims3 dims3(const Shape& shape, int64_t dim) {
  Dims3 d;
  for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) {
    if (k < dim) d.outer *= shape[k];
    if (k == dim) d.mid = shape[k];
    if (k > dim) d.inner *= shape[k];
  }
  return d;
}

template <typename T> Rows<T> rows_of(const Tensor& t, int64_t dim) {
  const Dims3 d = dims3(t.shape(), dim);
  Rows<T> rows;
  if (holds_one_value(t)) {
    rows.keep = empty({d.inner}, t.dtype(), t.device());
    std::fill_n(rows.keep.template data<T>(), d.inner, *t.template data<T>());
  } else {
    rows.keep = dense(t);
    rows.outer_stride = d.mid * d.inner;
    rows.mid_stride = d.inner;
  }
  rows.data = rows.keep.template data<T>();
  return rows;
}

// Runs task(o, j0, j1) over outer positions and column blocks [j0, j1) of [0, inner), in parallel:
// tasks own disjoint columns, so they may write any row of those columns. `work` is the number of
// values one task touches per column.
template <typename Fn>
void for_each_column_block(int64_t outer, int64_t inner, int64_t work, Fn&& task) {
  if (outer == 0 || inner == 0) return;
  const int64_t threads = get_num_threads();
  int64_t block = inner;
  if (outer < threads && inner * work > kElementwiseGrain) {  // split columns to feed the threads
    block = (inner + threads - 1) / threads;
    block = std::min(inner, std::max<int64_t>(64, (block + 15) / 16 * 16));
  }
  const int64_t blocks = (inner + block - 1) / block;
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(block * work, 1));
  parallel_for(0, outer * blocks, grain, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t j0 = (t % blocks) * block;
      task(t / blocks, j0, std::min(inner, j0 + block));
    }
  });
}

// Starts fetching the first lines (up to 512 bytes) of row[0, n): loops over rows picked at random
// call it a few rows ahead, so the row is on its way when they reach it. kWrite: 1 for a row the
// loop will write.
template <int kWrite, typename T> inline void prefetch_row(const T* row, int64_t n) {
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(T));
  for (int64_t j = 0; j < std::min<int64_t>(n, 8 * kLine); j += kLine)
    __builtin_prefetch(row + j, kWrite);
}

}  // namespace tg::cpu::indexing
