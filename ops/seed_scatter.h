#pragma once
// The scatter seed's form (paddle.scatter with axis, reduce and include_self), mapped onto the
// ATen-style ops: overwrite -> index_copy, otherwise scatter_reduce with index expanded along axis.
//   tg::scatter(x, index, updates, {.overwrite = false, .axis = 0, .reduce = "add",
//                                   .include_self = false})
#include <cstdint>
#include <string>

#include <tapegrad/generated/tensor.h>

namespace tg {

struct ScatterOptions {
  bool overwrite = true;       // assign (the last duplicate in index order wins) instead of reduce
  int64_t axis = 0;            // the dim index runs along
  std::string reduce = "add";  // add | sum, mul | multiply, mean, amax, amin (when !overwrite)
  bool include_self = false;   // whether x's old value takes part in a reduced slot
};

// index: 0-d or 1-d int32/int64 with values in [0, x.size(axis)). updates: x's shape with at least
// index.numel() rows at axis (row i goes to slot index[i]; extra rows are unused), or x's shape
// without axis for a 0-d index.
Tensor scatter(const Tensor& x, const Tensor& index, const Tensor& updates,
               const ScatterOptions& options = {});
// The same, written into x (x keeps its shape; returns x).
Tensor scatter_(const Tensor& x, const Tensor& index, const Tensor& updates,
                const ScatterOptions& options = {});

}  // namespace tg
