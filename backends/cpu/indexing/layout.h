#pragma once
// Layout helpers of the indexing kernels: 0-d tensors seen as [1] and back, fresh contiguous
// copies, and a 1-d index viewed along one dim of a larger shape. Views are made directly
// (make_view), not through the generated view ops: a kernel never re-enters the front end.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <tapegrad/generated/tensor.h>

namespace tg::cpu::indexing {

// A 0-d tensor seen as [1] (so dim 0 / -1 work on 0-d tensors, as in PyTorch); others unchanged.
Tensor as_1d(const Tensor& t);
// A one-element result seen as 0-d (the result of an op on 0-d inputs).
Tensor as_0d(const Tensor& t);

// A fresh contiguous copy of t (the result the scatter ops write into), row by row: an expanded
// or transposed t copies at memory speed.
Tensor fresh_copy(const Tensor& t);
// t itself when contiguous, else fresh_copy(t).
Tensor dense(const Tensor& t);

// index (0-d or 1-d, n entries) viewed with `shape` (n at dim): entry k at position k of dim.
Tensor expand_index(const Tensor& index, const Shape& shape, int64_t dim);

// dst[j] = src[j * stride] for j in [0, n): a memcpy, a fill, or a strided loop. Plain stores,
// not non-temporal ones: they keep a large result in the cache the threads share.
template <typename T> void copy_run(T* dst, const T* src, int64_t n, int64_t stride) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else if (stride == 0) {
    std::fill_n(dst, n, *src);
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j * stride];
  }
}

}  // namespace tg::cpu::indexing
