#pragma once
// Helpers shared by the op checks in ops/checks/*.cpp. An op's check (spec key "check") runs in
// the generated front end after the generic argument checks (arguments.h), before autograd and
// dispatch, for every backend. It reads shapes, dims, dtypes and non-tensor arguments only, never
// tensor values: checks that need the data (index values in range, how many elements a mask
// selects) stay where the data is, in the kernels.
#include <algorithm>
#include <vector>

#include <tapegrad/core/error.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/generated/tensor.h>

namespace tg::checks {

// t's shape with a 0-d tensor seen as [1]: the indexing ops accept dim 0 and -1 on a 0-d tensor,
// as in PyTorch.
inline Shape shape_1d(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.shape(); }

// TypeError "[op] <name> has dtype D, expected self's dtype S" unless t has self's dtype.
inline void dtype_of_self(const char* op, const char* name, const Tensor& t, const Tensor& self) {
  TG_CHECK(t.dtype() == self.dtype(), TypeError, op, name, " has dtype ", dtype_name(t.dtype()),
           ", expected self's dtype ", dtype_name(self.dtype()));
}

// ValueError "[op] shapes A and B cannot broadcast (...)" unless a and b broadcast together.
inline void broadcastable(const char* op, const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) broadcast_shapes(op, a.shape(), b.shape());
}

// A list of dims to reduce over a tensor of ndim dims: each in range (a 0-d tensor accepts 0 and
// -1), none twice. An empty list means every dim.
inline void reduce_dims(const char* op, int64_t ndim, IntArrayRef dims) {
  uint64_t seen = 0;  // a bit per dim below 64 (no allocation: every reduction checks this)
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t w = wrap_dim(op, dims[i], ndim);
    bool repeated = false;
    if (w < 64) {
      repeated = (seen >> w) & 1;
      seen |= uint64_t{1} << w;
    } else {
      for (size_t j = 0; j < i; ++j) repeated = repeated || wrap_dim(op, dims[j], ndim) == w;
    }
    TG_CHECK(!repeated, ValueError, op, "dim ", w, " appears multiple times in the list of dims");
  }
}

// Reductions with no identity (amax, max, ...) reject an empty slot, as PyTorch does: no dim in
// `dims` (every dim when empty; already checked by reduce_dims) may have size 0.
inline void nonempty_slots(const char* op, const Shape& shape, IntArrayRef dims) {
  const auto ndim = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), dims.empty());
  for (int64_t d : dims)
    if (ndim > 0) reduced[static_cast<size_t>(wrap_dim(op, d, ndim))] = true;
  for (size_t d = 0; d < shape.size(); ++d)
    TG_CHECK(!reduced[d] || shape[d] != 0, ValueError, op, "cannot reduce over dim ", d,
             " of size 0 (shape ", shape, "): the operation has no identity");
}

}  // namespace tg::checks
