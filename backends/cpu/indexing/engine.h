#pragma once
// The indexing engine's forward kernels, shared by the op kernels of this folder. Two layouts:
//
// - Walk form (walk.h; gather, scatter, scatter_add, scatter_reduce): an index of any shape and
//   strides; entry p of the index sends src[p] to out's slot p with p[dim] = index[p] (or reads
//   it, for gather).
// - Row form (rows.h; index_select, index_add, index_copy, index_reduce): contiguous tensors seen
//   as [outer, slots, inner] and a 1-d index; entry k combines a whole row.
//
// The arguments were checked before dispatch (ops/checks); the index values are checked here
// (data_checks.h).
#include <cstdint>

#include <tapegrad/core/scalar.h>
#include <tapegrad/generated/tensor.h>

#include "combine.h"

namespace tg::cpu::indexing {

// Applies every entry of index (any strides) to `out` (contiguous, written in place):
//   out[p with p[dim] = index[p]]  (reduce)=  src[p]     for every position p of index.
// With include_self false, a slot that receives at least one entry starts from the reduction's
// identity instead of its old value. Mean divides each touched slot by its count (+1 with self);
// integral means round down, as PyTorch's. An index value out of [0, out.size(dim)) is an
// IndexError naming op.
void scatter_into(const char* op, const Tensor& out, int64_t dim, const Tensor& index,
                  const Tensor& src, Reduce reduce, bool include_self);

// The index ops: out contiguous [outer, slots, inner]; index 0-d or 1-d with n entries; src of
// out's shape with n at dim (any strides: read through rows_of). Row k of src goes to row
// index[k] of out, scaled by alpha (Sum only). fresh: out holds no values yet (an `empty`
// tensor): every slot starts from the reduction's identity, written, not read.
void scatter_rows_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       Reduce reduce, bool include_self, const Scalar& alpha = 1,
                       bool fresh = false);

// result[p] = self[p with p[dim] = index[p]] for every position p of index (result: index's shape,
// contiguous). self may have any strides (an expanded gradient reads one value per row). An index
// value out of [0, self.size(dim)) is an IndexError naming op.
Tensor gather_from(const char* op, const Tensor& self, int64_t dim, const Tensor& index);

}  // namespace tg::cpu::indexing
