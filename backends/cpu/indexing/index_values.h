#pragma once
// Reading an index tensor: its C++ type, its values, and its entries grouped by slot.
#include <cstdint>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::cpu::indexing {

// Calls fn(TypeTag<I>{}) with I the index's C++ type (int32 or int64, as the specs allow).
template <typename Fn> decltype(auto) visit_index(const Tensor& index, Fn&& fn) {
  if (index.dtype() == kInt32) return fn(TypeTag<int32_t>{});
  return fn(TypeTag<int64_t>{});
}

// The values of an index (any shape and strides) in row-major order, as int64 (the row-form ops
// and index_fill: a 1-d index of a few thousand entries at most).
std::vector<int64_t> index_values(const Tensor& index);

// Scratch arrays from the tensor allocator, which keeps freed blocks of 64 KiB and more: an
// embedding's gradient groups 8192 ids into 50,000 slots (400 KB of offsets) every step, and
// glibc gave those pages back to the kernel between steps, to fault them in again the next.
using ScratchInt64 = std::vector<int64_t, ObjectAllocator<int64_t>>;

// The entries of a 1-d index grouped by slot, in index order within each slot (a stable counting
// sort): slot b's entries are order[begin[b]] to order[begin[b + 1] - 1].
struct EntriesBySlot {
  ScratchInt64 begin, order;
  int64_t count(int64_t slot) const {
    return begin[static_cast<size_t>(slot) + 1] - begin[static_cast<size_t>(slot)];
  }
};
EntriesBySlot group_by_slot(const std::vector<int64_t>& ix, int64_t slots);

}  // namespace tg::cpu::indexing
