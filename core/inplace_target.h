#pragma once
// Lets an in-place op that autograd does not record write its result straight into self: the
// in-place wrapper (autograd/inplace.h) names the op and self here for the duration of the call,
// and the CPU elementwise engine (backends/cpu/loops.h), about to allocate that op's result with
// self's shape and dtype, takes self instead. The wrapper then sees its result is self and copies
// nothing: three memory streams instead of five for a += b.
//
// Only a kernel of the same op name takes the target, once, so the other ops an in-place call may
// run on the way (a dtype conversion of `other`, say) never write into self.
#include <tapegrad/core/tensor_base.h>

namespace tg::detail {

class InplaceTarget {
 public:
  // Offers self to the kernel named `op` (the in-place op's name without its trailing '_') on
  // this thread, if self is contiguous and no other input shares its storage.
  InplaceTarget(const char* op, const TensorBase& self, bool others_alias_self);
  ~InplaceTarget();
  InplaceTarget(const InplaceTarget&) = delete;
  InplaceTarget& operator=(const InplaceTarget&) = delete;
};

// The target for `op`'s result of `shape` and `dtype`, if one is offered and fits (then no longer
// offered); else an undefined tensor.
TensorBase take_inplace_target(const char* op, const Shape& shape, DType dtype);

}  // namespace tg::detail
