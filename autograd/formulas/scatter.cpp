// Backward helpers of the index/scatter family; see scatter.h.
#include <tapegrad/autograd/formulas/scatter.h>

#include <tapegrad/autograd/formulas/fused.h>

namespace tg::formulas {
namespace {

// A 0-d tensor of t's dtype and device holding `value` (broadcasts in where()).
Tensor constant(const Tensor& t, const Scalar& value) {
  return full({}, value, t.dtype(), t.device());
}

// The two ways an index addresses self: scatter-style (index of src's rank, gather/scatter_add) or
// index-style (a 1-d index along dim, index_select/index_add). The reduce backward is written once
// over these three primitives.
struct Along {
  bool by_index;
  int64_t dim;
  const Tensor& index;

  // base with vals added at index
  Tensor add(const Tensor& base, const Tensor& vals) const {
    return by_index ? index_add(base, dim, index, vals) : scatter_add(base, dim, index, vals);
  }
  // t read at index (the slot value each src entry went to)
  Tensor pick(const Tensor& t) const {
    return by_index ? index_select(t, dim, index) : gather(t, dim, index);
  }
  Tensor reduce(const Tensor& base, const Tensor& vals, const std::string& name,
                bool include_self) const {
    return by_index ? index_reduce(base, dim, index, vals, name, include_self)
                    : scatter_reduce(base, dim, index, vals, name, include_self);
  }
};

// The gradient of one contributor x of a prod slot (the same rule as prod_backward in reduce.cpp):
// r / x where x != 0; at a zero: the product of the nonzero contributors p when the slot holds one
// zero, (s - x) * p when it holds two (s: the sum of the slot's zeros, value 0, derivative 1 in the
// other zero), 0 when three or more. Each branch is exact to first order, so double backward is
// exact too. c, p, s, r are the slot's values seen at x.
Tensor prod_contributor(const Tensor& x, const Tensor& x_zero, const Tensor& x_safe,
                        const Tensor& c, const Tensor& p, const Tensor& s, const Tensor& r) {
  const Tensor nil = constant(x, 0);
  const Tensor at_zero = where(c == 1, p, where(c == 2, (s - x) * p, nil));
  return where(x_zero, at_zero, r / x_safe);
}

// {self's gradient, src_part's gradient} of a scatter_reduce / index_reduce, each computed only
// when asked for (want_self, want_src; the other stays undefined); src_part is the part of src
// that index covers. What the two share (counts, ties, prod's zero statistics) is computed once.
// Counts are tensors: no host-side branching.
std::pair<Tensor, Tensor> reduce_backward(const Along& a, const Tensor& grad, const Tensor& self,
                                          const Tensor& src_part, const std::string& reduce,
                                          bool include_self, const Tensor& result, bool want_self,
                                          bool want_src) {
  const DType dt = grad.dtype();
  const bool ties_rule = reduce == "amax" || reduce == "amin";
  auto none = [&] { return zeros(self.shape(), dt, grad.device()); };  // nothing per slot
  // entries per slot, only where a rule needs it: mean's divisor; with self left out, the slots
  // that received something (self's gradient is 0 there, and self is no amax/amin contributor)
  Tensor count, touched;
  if (reduce == "mean" || (!include_self && (want_self || ties_rule))) {
    count = a.add(none(), ones(src_part.shape(), dt, grad.device()));
    touched = count > 0;
  }
  // self's gradient at slots that received something is 0 when self was left out
  auto self_side = [&](const Tensor& g_self) {
    return include_self ? g_self : where(touched, constant(grad, 0), g_self);
  };
  Tensor g_self, g_src;
  if (reduce == "sum" || reduce == "mean") {
    Tensor g = grad;  // each slot's share of its grad
    if (reduce == "mean") {
      const Tensor n = include_self ? count + 1 : count;
      g = grad / where(n == 0, constant(n, 1), n);  // empty slots keep grad
    }
    if (want_self) g_self = self_side(g);
    if (want_src) g_src = a.pick(g);
  } else if (ties_rule) {
    // every contributor equal to the result shares the slot's grad evenly; with include_self
    // false, self contributes only to slots nothing was scattered into
    Tensor self_is = self == result;
    if (!include_self) self_is = self_is && !touched;
    const Tensor src_is = src_part == a.pick(result);
    const Tensor g = grad / a.add(self_is.to(dt), src_is.to(dt));
    if (want_self) g_self = self_side(g * self_is);
    if (want_src) g_src = a.pick(g) * src_is;
  } else {  // prod
    const Tensor nil = constant(self, 0), one = constant(self, 1);
    const Tensor self_zero = self == 0, src_zero = src_part == 0;
    const Tensor self_safe = where(self_zero, one, self);
    const Tensor src_safe = where(src_zero, one, src_part);
    // per slot: zeros among the contributors, product of the nonzero ones, sum of the zero ones
    const Tensor c = a.add(include_self ? self_zero.to(dt) : none(), src_zero.to(dt));
    const Tensor p = a.reduce(self_safe, src_safe, "prod", include_self);
    const Tensor s =
        a.add(include_self ? where(self_zero, self, nil) : none(), where(src_zero, src_part, nil));
    if (want_self)
      g_self = include_self ? grad * prod_contributor(self, self_zero, self_safe, c, p, s, result)
                            : self_side(grad);
    if (want_src)
      g_src = a.pick(grad) * prod_contributor(src_part, src_zero, src_safe, a.pick(c), a.pick(p),
                                              a.pick(s), a.pick(result));
  }
  return {g_self, g_src};
}

// src narrowed to index's shape (only src[:index.shape] takes part in a scatter).
Tensor narrow_to(const Tensor& src, const Shape& shape) {
  Tensor t = src;
  for (size_t k = 0; k < shape.size(); ++k)
    if (t.size(static_cast<int64_t>(k)) > shape[k])
      t = narrow(t, static_cast<int64_t>(k), 0, shape[k]);
  return t;
}

// Positions 0..n-1 along dim of a tensor of `shape`, broadcast to that shape (int64).
Tensor positions(const Shape& shape, int64_t dim, Device device) {
  if (shape.empty()) return zeros({}, kInt64, device);
  Shape pos_shape(shape.size() - static_cast<size_t>(dim), 1);
  pos_shape[0] = shape[dim];
  return arange(shape[dim], kInt64, device).reshape(pos_shape).expand(shape);
}

int64_t wrap(int64_t dim, int64_t ndim) { return wrap_dim("backward", dim, ndim == 0 ? 1 : ndim); }

}  // namespace

Tensor pad_to(const Tensor& t, const Shape& shape) {
  Tensor padded = t;
  Shape current = t.shape();
  for (size_t k = 0; k < shape.size(); ++k) {
    if (current[k] == shape[k]) continue;
    const int64_t n = current[k];
    current[k] = shape[k];
    padded = slice_backward(padded, current, static_cast<int64_t>(k), 0, n);
  }
  return padded;
}

Tensor scatter_add_src_backward(const Tensor& grad, int64_t dim, const Tensor& index,
                                const Shape& src_shape) {
  return pad_to(gather(grad, dim, index), src_shape);
}

Tensor scatter_self_backward(const Tensor& grad, int64_t dim, const Tensor& index) {
  return scatter(grad, dim, index, zeros(index.shape(), grad.dtype(), grad.device()));
}

Tensor scatter_src_backward(const Tensor& grad, const Shape& self_shape, int64_t dim,
                            const Tensor& index, const Shape& src_shape) {
  // the winner of each slot: scatter every entry's position along dim, read back, compare
  const Tensor pos = positions(index.shape(), wrap(dim, index.dim()), index.device());
  const Tensor board = scatter(full(self_shape, -1, kInt64, index.device()), dim, index, pos);
  const Tensor wins = gather(board, dim, index) == pos;
  return pad_to(gather(grad, dim, index) * wins, src_shape);
}

Tensor index_copy_self_backward(const Tensor& grad, int64_t dim, const Tensor& index,
                                const Shape& source_shape) {
  return index_copy(grad, dim, index, zeros(source_shape, grad.dtype(), grad.device()));
}

Tensor index_copy_source_backward(const Tensor& grad, const Shape& self_shape, int64_t dim,
                                  const Tensor& index) {
  const int64_t ndim = static_cast<int64_t>(self_shape.size());
  const int64_t d = wrap(dim, ndim);
  const int64_t slots = ndim == 0 ? 1 : self_shape[d];
  const Tensor flat_index = index.reshape({-1});
  const Tensor pos = arange(flat_index.numel(), kInt64, index.device());
  const Tensor board = index_copy(full({slots}, -1, kInt64, index.device()), 0, flat_index, pos);
  Tensor wins = index_select(board, 0, flat_index) == pos;
  if (ndim == 0) {
    wins = wins.reshape({});
  } else {
    Shape wins_shape(static_cast<size_t>(ndim - d), 1);
    wins_shape[0] = flat_index.numel();
    wins = wins.reshape(wins_shape);
  }
  return index_select(grad, dim, index) * wins;
}

std::tuple<Tensor, Tensor> scatter_reduce_grads(const Tensor& grad, const Tensor& self, int64_t dim,
                                                const Tensor& index, const Tensor& src,
                                                const std::string& reduce, bool include_self,
                                                const Tensor& result,
                                                const std::array<bool, 2>& grad_input_mask) {
  const auto [want_self, want_src] = grad_input_mask;
  // sum's gradients are a view and a gather already: nothing to fuse
  if (reduce != "sum" && use_fused({&grad, &self, &src, &result}))
    return scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result,
                                   want_self ? (want_src ? "both" : "self") : "src");
  const Along a{false, dim, index};
  auto [g_self, g_src] = reduce_backward(a, grad, self, narrow_to(src, index.shape()), reduce,
                                         include_self, result, want_self, want_src);
  return {g_self, want_src ? pad_to(g_src, src.shape()) : g_src};
}

std::tuple<Tensor, Tensor> index_reduce_grads(const Tensor& grad, const Tensor& self, int64_t dim,
                                              const Tensor& index, const Tensor& source,
                                              const std::string& reduce, bool include_self,
                                              const Tensor& result,
                                              const std::array<bool, 2>& grad_input_mask) {
  const auto [want_self, want_source] = grad_input_mask;
  if (use_fused({&grad, &self, &source, &result}))
    return index_reduce_backward(grad, self, dim, index, source, reduce, include_self, result,
                                 want_self ? (want_source ? "both" : "self") : "source");
  const Along a{true, dim, index};
  return reduce_backward(a, grad, self, source, reduce, include_self, result, want_self,
                         want_source);
}

}  // namespace tg::formulas
