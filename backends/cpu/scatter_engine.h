#pragma once
// The CPU engine behind the index/scatter family (backends/cpu/scatter.cpp and index.cpp).
//
// Every op is brought to one form: an index tensor of some shape and a dim d. A "line" is one
// position of every dim but d; along a line, entry k sends src[.., k, ..] to slot index[.., k, ..]
// of out's line (scatter), or reads self's slot index[.., k, ..] into result[.., k, ..] (gather).
// Different lines never touch the same slot, so lines run in parallel; within a line entries are
// applied in index order, which makes duplicates deterministic (the last write wins). The index ops
// (index_add, index_copy, index_select, index_reduce) use the same engine with their 1-d index
// viewed as expanded to source's shape (stride 0 off dim d).
#include <string>

#include <tapegrad/core/scalar.h>
#include <tapegrad/core/tensor.h>

namespace tg::cpu::scatter_engine {

enum class Reduce { Assign, Sum, Prod, Mean, Amax, Amin };

// "sum" | "prod" | "mean" | "amax" | "amin" (the spec's `allowed` key has already checked it).
Reduce parse_reduce(const std::string& name);

// IndexError unless every value of index lies in [0, size); names the first bad value.
void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size);

// Applies every entry of index (any strides) to `out` (contiguous, written in place):
//   out[p with p[dim] = index[p]]  (reduce)=  src[p] * alpha     for every position p of index.
// With include_self false, a slot that receives at least one entry starts from the reduction's
// identity instead of its old value. Mean divides each touched slot by its count (+1 with self);
// integral means round down, as PyTorch's.
void scatter_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                  Reduce reduce, bool include_self, const Scalar& alpha = 1);

// The index ops' fast path: out and src contiguous, index 0-d or 1-d with n entries, src of out's
// shape with n at dim; whole rows (the dims after dim) at a time. False (nothing done) when src or
// out is not contiguous.
bool scatter_rows_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       Reduce reduce, bool include_self, const Scalar& alpha = 1);
// index_select's fast path (rows copied with memcpy); undefined when self is not contiguous.
Tensor select_rows(const Tensor& self, int64_t dim, const Tensor& index);

// result[p] = self[p with p[dim] = index[p]] for every position p of index (result: index's shape).
Tensor gather_from(const Tensor& self, int64_t dim, const Tensor& index);

// A fresh contiguous copy of t (the result the scatter ops write into).
Tensor fresh_copy(const Tensor& t);

// A 0-d tensor seen as [1] (so dim 0 / -1 work on 0-d tensors, as in PyTorch); others unchanged.
Tensor as_1d(const Tensor& t);

}  // namespace tg::cpu::scatter_engine
