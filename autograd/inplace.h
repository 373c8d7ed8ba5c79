#pragma once
// The in-place variant of every op: run the op out of place, then write its result into self.
// Under autograd the op's node becomes self's history (self's old history is its input, through
// a clone, so saved values are never the storage being overwritten).
#include <initializer_list>

#include <tapegrad/core/inplace_target.h>
#include <tapegrad/generated/tensor.h>

namespace tg::detail {

struct InplacePlan {
  bool record = false;  // autograd records this in-place op
};
// Checks before anything runs (leaf that requires grad, views under autograd).
InplacePlan begin_inplace(const char* op, const Tensor& self,
                          std::initializer_list<const Tensor*> others);
// Writes result into self (shape and dtype checked first), bumps the version, moves history.
void finish_inplace(const char* op, const Tensor& self, const Tensor& result,
                    const InplacePlan& plan);
Tensor clone_for_inplace(const Tensor& self);

// Whether some tensor of `others` shares self's storage.
bool shares_storage(const Tensor& self, std::initializer_list<const Tensor*> others);

// Unrecorded, the op may write its result straight into self (core/inplace_target.h); the
// result is then self itself and finish_inplace copies nothing.
template <typename Fn> Tensor apply_inplace(const char* op, const Tensor& self,
                                            std::initializer_list<const Tensor*> others, Fn&& fn) {
  InplacePlan plan = begin_inplace(op, self, others);
  Tensor result;
  if (plan.record) {
    result = fn(clone_for_inplace(self));
  } else {
    InplaceTarget target(op, self, shares_storage(self, others));
    result = fn(self);
  }
  finish_inplace(op, self, result, plan);
  return self;
}

}  // namespace tg::detail
