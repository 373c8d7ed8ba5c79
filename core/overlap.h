#pragma once
// The internal-overlap check shared by every in-place op: writing into a tensor where two
// elements are one memory location (an expanded tensor) would give a result that depends on the
// order of the writes, so it is an error, as in PyTorch.
#include <tapegrad/core/tensor_base.h>

namespace tg::detail {

// Whether two elements of t certainly share a memory location: a dim of size > 1 with stride 0
// (what expand and broadcast_to make). Like PyTorch's has_internal_overlap == YES: layouts from
// hand-made strides whose overlap is costly to decide are let through.
bool has_internal_overlap(const TensorBase& t);

// Throws ValueError "[op] unsupported operation: more than one element of the written-to tensor
// refers to a single memory location..." when `self`, about to be written in place by op, has
// internal overlap. fill_ (and zero_) are exempt: they write one value to every element, which is
// well-defined whatever the layout (as in PyTorch).
void check_inplace_overlap(const char* op, const TensorBase& self);

}  // namespace tg::detail
