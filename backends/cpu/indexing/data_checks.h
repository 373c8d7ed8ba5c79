#pragma once
// The checks of the indexing kernels that need the data itself, which the check layer (ops/checks,
// before dispatch) cannot make: index values in range, and how many elements a mask selects
// against the source that fills them. Each raises the op's error ("[op] ...") before the kernel
// returns anything, and the kernels write only fresh results, so a rejected call changes nothing.
#include <atomic>
#include <cstdint>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::cpu::indexing {

// IndexError unless every value of index lies in [0, size); names the first bad value.
void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size);

// index_fill's index values: each in [-size, size) (a negative one counts from the end).
void check_fill_index(const char* op, const std::vector<int64_t>& values, int64_t dim,
                      int64_t size);

// masked_scatter: the source must hold at least the `selected` elements the mask selects.
void check_source_count(const char* op, int64_t selected, int64_t source_numel);
// masked_scatter_backward: source_shape must hold at least the `selected` elements.
void check_source_shape_count(const char* op, int64_t selected, int64_t source_numel);

// Out-of-range index values met by a walk-form kernel: the kernel skips them (nothing out of
// bounds is read or written), and check() afterwards raises check_index_range's IndexError. This
// saves a separate pass over a large index.
class IndexGuard {
 public:
  static bool in_range(int64_t value, int64_t size) {
    return static_cast<uint64_t>(value) < static_cast<uint64_t>(size);
  }
  // A task met a bad value. Tasks keep a local flag in their loops and call this once at the
  // end: an atomic store inside a hot loop would stop the compiler hoisting loads out of it.
  void flag() { bad_.store(true, std::memory_order_relaxed); }
  void check(const char* op, const Tensor& index, int64_t dim, int64_t size) const {
    if (bad_.load()) check_index_range(op, index, dim, size);
  }

 private:
  std::atomic<bool> bad_{false};
};

// Whether any of n contiguous index values lies outside [0, slots) (slots > 0), without a compare
// per value (SSE2 has no 64-bit one): v is out of range iff v < 0 or slots - 1 - v < 0, the sign
// bit of v | (slots - 1 - v), ORed over the values in a loop the compiler vectorises.
template <typename I> bool any_out_of_range(const I* ix, int64_t n, int64_t slots) {
  const auto last = static_cast<uint64_t>(slots - 1);
  uint64_t signs = 0;
  for (int64_t j = 0; j < n; ++j) {
    const auto v = static_cast<uint64_t>(static_cast<int64_t>(ix[j]));
    signs |= v | (last - v);
  }
  return (signs >> 63) != 0;
}

}  // namespace tg::cpu::indexing
