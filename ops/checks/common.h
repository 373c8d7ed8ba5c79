#pragma once
// Helpers shared by the op checks in ops/checks/*.cpp. An op's check (spec key "check") runs in
// the generated front end after the generic argument checks (arguments.h), before autograd and
// dispatch, for every backend. It reads shapes, dims, dtypes and non-tensor arguments only, never
// tensor values: checks that need the data (index values in range, how many elements a mask
// selects) stay where the data is, in the kernels.
#include <tapegrad/core/error.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/core/tensor.h>

namespace tg::checks {

// t's shape with a 0-d tensor seen as [1]: the indexing ops accept dim 0 and -1 on a 0-d tensor,
// as in PyTorch.
inline Shape shape_1d(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.shape(); }

// TypeError "[op] <name> has dtype D, expected self's dtype S" unless t has self's dtype.
inline void dtype_of_self(const char* op, const char* name, const Tensor& t, const Tensor& self) {
  TG_CHECK(t.dtype() == self.dtype(), TypeError, op, name, " has dtype ", dtype_name(t.dtype()),
           ", expected self's dtype ", dtype_name(self.dtype()));
}

}  // namespace tg::checks
