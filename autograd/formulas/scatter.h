#pragma once
// Backward helpers for the index/scatter family (namespace tg::formulas). All are written with
// public ops (gather, scatter_add, index_select, index_add, ...), so double backward works.
// gather and index_select use the fused ops gather_backward / index_select_backward directly.
#include <array>
#include <string>
#include <tuple>

#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

// t (index's shape) zero-padded at the end of each dim to `shape` (src may be larger than index).
Tensor pad_to(const Tensor& t, const Shape& shape);

// scatter_add's src: grad gathered at index, padded to src's shape.
Tensor scatter_add_src_backward(const Tensor& grad, int64_t dim, const Tensor& index,
                                const Shape& src_shape);

// scatter / index_copy (the last write to a slot wins): self gets grad with written slots zeroed;
// only the winning src entry of each slot gets that slot's grad.
Tensor scatter_self_backward(const Tensor& grad, int64_t dim, const Tensor& index);
Tensor scatter_src_backward(const Tensor& grad, const Shape& self_shape, int64_t dim,
                            const Tensor& index, const Shape& src_shape);
Tensor index_copy_self_backward(const Tensor& grad, int64_t dim, const Tensor& index,
                                const Shape& source_shape);
Tensor index_copy_source_backward(const Tensor& grad, const Shape& self_shape, int64_t dim,
                                  const Tensor& index);

// scatter_reduce / index_reduce: the gradients of self and of src (source), each computed only
// where grad_input_mask asks for it (the other comes back undefined), for reduce in sum | prod |
// mean | amax | amin. The rules are stated by their composed form in scatter.cpp (public ops, so
// double backward works). When use_fused() allows it (a plain backward: fused.h) the fused ops
// scatter_reduce_backward / index_reduce_backward compute the same gradients, bit for bit, from
// one set of per-slot statistics.
std::tuple<Tensor, Tensor> scatter_reduce_grads(const Tensor& grad, const Tensor& self, int64_t dim,
                                                const Tensor& index, const Tensor& src,
                                                const std::string& reduce, bool include_self,
                                                const Tensor& result,
                                                const std::array<bool, 2>& grad_input_mask);
std::tuple<Tensor, Tensor> index_reduce_grads(const Tensor& grad, const Tensor& self, int64_t dim,
                                              const Tensor& index, const Tensor& source,
                                              const std::string& reduce, bool include_self,
                                              const Tensor& result,
                                              const std::array<bool, 2>& grad_input_mask);

}  // namespace tg::formulas
