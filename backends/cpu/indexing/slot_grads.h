#pragma once
// The gradient rules of scatter_reduce and index_reduce per slot, shared by their fused backward
// kernels (scatter_reduce_backward.cpp: walk form, index_reduce_backward.cpp: row form). The rules
// are stated by the composed formulas in autograd/formulas/scatter.cpp (used for double
// backward); these kernels are a fast path that tg_opcheck --fused-vs-composed holds to them bit
// for bit on every spec sample. In short:
//   sum   self: grad                      src: grad at the slot
//   mean  self: grad / n                  src: grad / n at the slot   (n: count, +1 with self)
//   amax  self: grad / ties * [self ties]  src: grad / ties * [src == result]   (amin alike)
//   prod  x != 0: grad * result / x;  x == 0: grad * (p if the slot has 1 zero, (s - x) * p if
//         2, else 0), with p the product of the slot's nonzero contributors, s the sum of zeros.
// With include_self false, self's gradient is 0 at every slot that received an entry, and self
// does not count among the ties. Zero statistics are gathered only at slots whose result is 0 or
// NaN (the only slots that can hold a zero), inside the kernel: nothing is decided on the host.
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include "combine.h"
#include "layout.h"
#include "select.h"

namespace tg::cpu::indexing {

// A slot whose prod result may hide a zero contributor (0 * finite = 0; 0 * inf = NaN).
template <typename T> bool may_hold_zero(T result) { return result == T(0) || result != result; }

// The prod gradient factor of a zero contributor x of a slot with `zeros` zeros, nonzero product p
// and zero sum s (prod_contributor in autograd/formulas/scatter.cpp).
template <typename T> T prod_at_zero(int32_t zeros, T p, T s, T x) {
  return zeros == 1 ? p : (zeros == 2 ? static_cast<T>((s - x) * p) : T(0));
}

// Statistics of the slots, in buffers of self's shape (dense): entries per slot, and per reduce
// the ties (amax/amin) or the zero count, nonzero product and zero sum (prod). Every slot starts
// from self's share (start(), before any entry), then each entry adds its own (add()). SlotStats
// owns the buffers; loops get a Stats<T> (raw pointers, by value, so they stay in registers).
template <typename T> struct Stats {
  // counts are int32 (exact, and an int `+= (a == b)` compiles without a branch)
  int32_t *count = nullptr, *ties = nullptr, *zeros = nullptr;
  T *prod = nullptr, *zsum = nullptr;

  // Slot b before any entry: self's share (self value x, result r).
  template <Reduce kR> void start(int64_t b, T x, T r, bool include_self) const {
    if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
      ties[b] = include_self && x == r;
    } else if constexpr (kR == Reduce::Prod) {
      const bool zero = include_self && x == T(0);
      zeros[b] = zero;
      prod[b] = include_self && !zero ? x : T(1);
      zsum[b] = zero ? x : T(0);
    }
  }
  // One more entry, value v, arrives at slot b (result r).
  template <Reduce kR> void add(int64_t b, T v, T r) const {
    if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
      ties[b] += v == r;
    } else if constexpr (kR == Reduce::Prod) {
      if (!may_hold_zero(r)) return;
      const bool zero = v == T(0);
      zeros[b] += zero;
      prod[b] = static_cast<T>(prod[b] * (zero ? T(1) : v));
      zsum[b] += zero ? v : T(0);
    }
  }
};

// The buffers are tensors: the CPU allocator keeps large freed blocks for reuse, where fresh
// std::vector memory would page-fault on every call.
template <typename T> struct SlotStats {
  // count: set (zeroed) by the walk form when it counts per slot; the rest are set by start()
  Tensor count, ties, zeros, prod, zsum;
  SlotStats(int64_t numel, Reduce reduce) {
    auto buffer = [&](DType dtype) { return empty({numel}, dtype); };
    if (reduce == Reduce::Amax || reduce == Reduce::Amin) ties = buffer(kInt32);
    if (reduce == Reduce::Prod) {
      zeros = buffer(kInt32);
      prod = buffer(dtype_of<T>());
      zsum = buffer(dtype_of<T>());
    }
  }
  Stats<T> view() const {
    auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    auto iptr = [](const Tensor& t) { return t.defined() ? t.data<int32_t>() : nullptr; };
    return {iptr(count), iptr(ties), iptr(zeros), ptr(prod), ptr(zsum)};
  }
};

// Self's gradient at slot b: g, r, x the grad, result and self there; c the entries the slot
// received (counted for mean, and when include_self is false). Every slot's statistics start from
// self's share (Stats::start), entries or not.
template <Reduce kR, typename T>
T self_grad_at(const Stats<T>& st, int64_t b, T g, T r, T x, int64_t c, bool include_self) {
  if (!include_self && c > 0) return T(0);
  if constexpr (kR == Reduce::Mean) {
    const int64_t n = c + (include_self ? 1 : 0);
    return static_cast<T>(g / static_cast<T>(n == 0 ? 1 : n));
  } else if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
    const T is = one_if<T>(x == r);
    const T ties = include_self ? static_cast<T>(st.ties[b]) : is;  // no entries: self alone
    return static_cast<T>(static_cast<T>(g / ties) * is);
  } else if constexpr (kR == Reduce::Prod) {
    if (!include_self) return g;
    if (x != T(0)) return static_cast<T>(g * static_cast<T>(r / x));
    return static_cast<T>(g * prod_at_zero(st.zeros[b], st.prod[b], st.zsum[b], x));
  } else {  // Sum
    return g;
  }
}

// src's gradient for one entry of value v that went to slot b (grad g, result r there); n the
// slot's divisor for mean.
template <Reduce kR, typename T> T src_grad_at(const Stats<T>& st, int64_t b, T g, T r, T v, T n) {
  if constexpr (kR == Reduce::Mean) {
    return static_cast<T>(g / n);
  } else if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
    return static_cast<T>(static_cast<T>(g / static_cast<T>(st.ties[b])) * one_if<T>(v == r));
  } else if constexpr (kR == Reduce::Prod) {
    if (v != T(0)) return static_cast<T>(g * static_cast<T>(r / v));
    return static_cast<T>(g * prod_at_zero(st.zeros[b], st.prod[b], st.zsum[b], v));
  } else {  // Sum
    return g;
  }
}

// Calls fn(std::integral_constant<Reduce, kR>) for a gradient's reduce (sum | prod | mean | amax
// | amin).
template <typename Fn> decltype(auto) visit_grad_reduce(Reduce reduce, Fn&& fn) {
  switch (reduce) {
    case Reduce::Prod: return fn(std::integral_constant<Reduce, Reduce::Prod>{});
    case Reduce::Mean: return fn(std::integral_constant<Reduce, Reduce::Mean>{});
    case Reduce::Amax: return fn(std::integral_constant<Reduce, Reduce::Amax>{});
    case Reduce::Amin: return fn(std::integral_constant<Reduce, Reduce::Amin>{});
    default: return fn(std::integral_constant<Reduce, Reduce::Sum>{});
  }
}

// A 0-d input's gradient comes back 0-d.
inline Tensor like_input(const Tensor& g, const Tensor& input) {
  return input.dim() == 0 ? as_0d(g) : g;
}

// like_input for both gradients; an undefined one (not asked for) stays undefined.
inline std::tuple<Tensor, Tensor> like_inputs(const std::pair<Tensor, Tensor>& g,
                                              const Tensor& self, const Tensor& src) {
  return {g.first.defined() ? like_input(g.first, self) : g.first,
          g.second.defined() ? like_input(g.second, src) : g.second};
}

}  // namespace tg::cpu::indexing
