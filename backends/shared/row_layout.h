#pragma once
// A tensor read as a contiguous block [outer, size, inner]: a "row" is the `size` elements along
// one dim, element j of row r = o * inner + i at o * size * inner + j * inner + i. The CPU row
// kernels (softmax, losses, sort) and the CUDA sort share this one definition.
#include <cstddef>
#include <cstdint>

#include "host_device.h"

namespace tg::shared {

struct RowLayout {
  int64_t outer = 1, size = 1, inner = 1;
  TG_HOST_DEVICE int64_t rows() const { return outer * inner; }
  // Offset of element 0 of row r.
  TG_HOST_DEVICE int64_t start(int64_t r) const { return (r / inner) * size * inner + r % inner; }
};

// The rows along `dim` (already wrapped) of a contiguous tensor of this shape (any container of
// sizes); 0-d is one row of 1. Only an empty tensor's parts can pass int64 (its other dims may be
// huge, as in an expanded [2^62, 4, 0]): a part holding a zero dim is 0 whatever comes before
// the zero, and a part without one stops at INT64_MAX; callers visit no element of an empty
// tensor.
template <typename Sizes> RowLayout row_layout(const Sizes& shape, int64_t dim) {
  RowLayout l;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    int64_t& part = d < dim ? l.outer : d == dim ? l.size : l.inner;
    const int64_t n = shape[static_cast<std::size_t>(d)];
    part = part == 0 || n == 0 ? 0 : part > INT64_MAX / n ? INT64_MAX : part * n;
  }
  return l;
}

}  // namespace tg::shared
