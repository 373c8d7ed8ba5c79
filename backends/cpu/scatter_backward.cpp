// CPU kernels of the fused backward ops of the index/scatter family:
//   gather_backward, index_select_backward: grad added into a fresh zero tensor of self's shape;
//   scatter_reduce_backward (walk form), index_reduce_backward (row form): the gradient of self or
//   of src/source, in one or two passes over the entries.
// The rules are those of the composed formulas in autograd/formulas/scatter.cpp (used for double
// backward), with the same arithmetic, so both paths give the same values:
//   sum   self: grad                      src: grad at the slot
//   mean  self: grad / n                  src: grad / n at the slot   (n: count, +1 with self)
//   amax  self: grad / ties * [self ties]  src: grad / ties * [src == result]   (amin alike)
//   prod  x != 0: grad * result / x;  x == 0: grad * (p if the slot has 1 zero, (s - x) * p if 2,
//         else 0), with p the product of the slot's nonzero contributors and s the sum of its zeros.
// With include_self false, self's gradient is 0 at every slot that received an entry, and self
// does not count among the ties. Zero statistics are gathered only at slots whose result is 0 or
// NaN (the only slots that can hold a zero), inside the kernel: nothing is decided on the host.
#include <type_traits>

#include <tapegrad/core/factories.h>
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

namespace tg::cpu {
namespace {
using namespace scatter_engine;

// A tensor read element by element in row-major order: data[e * step], with step 1 (contiguous)
// or 0 (every stride 0: an expanded scalar such as the gradient of a sum).
template <typename T>
struct Flat {
  const T* data = nullptr;
  int64_t step = 1;
  Tensor keep;
  T operator[](int64_t e) const { return data[e * step]; }
};

template <typename T>
Flat<T> flat_of(const Tensor& t) {
  Flat<T> f;
  bool all_zero = true;
  for (int64_t s : t.strides()) all_zero = all_zero && s == 0;
  f.keep = all_zero ? t : t.contiguous();
  f.step = all_zero ? 0 : 1;
  f.data = f.keep.template data<T>();
  return f;
}

// A slot whose prod result may hide a zero contributor (0 * finite = 0; 0 * inf = NaN).
template <typename T>
bool may_hold_zero(T result) {
  return result == T(0) || result != result;
}

// The prod gradient factor of a zero contributor x of a slot with `zeros` zeros, nonzero product p
// and zero sum s (prod_contributor in autograd/formulas/scatter.cpp).
template <typename T>
T prod_at_zero(T zeros, T p, T s, T x) {
  return zeros == T(1) ? p : (zeros == T(2) ? static_cast<T>((s - x) * p) : T(0));
}

// Statistics of the slots, in buffers of self's shape (dense): entries per slot, and per reduce
// the ties (amax/amin) or the zero count, nonzero product and zero sum (prod). A slot's statistics
// are set up when its first entry arrives. SlotStats owns the buffers; loops get a Stats<T> (raw
// pointers, by value, so they stay in registers).
template <typename T>
struct Stats {
  int32_t* count = nullptr;
  T *ties = nullptr, *zeros = nullptr, *prod = nullptr, *zsum = nullptr;

  // The first entry of slot b (self value x, result r) arrives.
  template <Reduce kR>
  void start(int64_t b, T x, T r, bool include_self) const {
    if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
      ties[b] = (include_self && x == r) ? T(1) : T(0);
    } else if constexpr (kR == Reduce::Prod) {
      const bool zero = include_self && x == T(0);
      zeros[b] = zero ? T(1) : T(0);
      prod[b] = include_self && !zero ? x : T(1);
      zsum[b] = zero ? x : T(0);
    }
  }
  // One more entry, value v, arrives at slot b (result r).
  template <Reduce kR>
  void add(int64_t b, T v, T r) const {
    if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
      ties[b] += v == r ? T(1) : T(0);
    } else if constexpr (kR == Reduce::Prod) {
      if (!may_hold_zero(r)) return;
      const bool zero = v == T(0);
      zeros[b] += zero ? T(1) : T(0);
      prod[b] = static_cast<T>(prod[b] * (zero ? T(1) : v));
      zsum[b] += zero ? v : T(0);
    }
  }
};

// The buffers are tensors: the CPU allocator keeps large freed blocks for reuse, where fresh
// std::vector memory would page-fault on every call.
template <typename T>
struct SlotStats {
  Tensor count, ties, zeros, prod, zsum;  // count zeroed; the rest set by a slot's first entry
  // with_count: the walk form counts per slot here (the row form counts per row of slots itself)
  SlotStats(int64_t numel, Reduce reduce, bool with_count) {
    if (with_count) count = tg::zeros({numel}, kInt32);
    auto buffer = [&] { return empty({numel}, dtype_of<T>()); };
    if (reduce == Reduce::Amax || reduce == Reduce::Amin) ties = buffer();
    if (reduce == Reduce::Prod) {
      zeros = buffer();
      prod = buffer();
      zsum = buffer();
    }
  }
  Stats<T> view() const {
    auto ptr = [](const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; };
    return {count.defined() ? count.data<int32_t>() : nullptr, ptr(ties), ptr(zeros), ptr(prod),
            ptr(zsum)};
  }
};

// Self's gradient at slot b: g, r, x the grad, result and self there; c the entries it received
// (its statistics are set when c > 0).
template <Reduce kR, typename T>
T self_grad_at(const Stats<T>& st, int64_t b, T g, T r, T x, int64_t c, bool include_self) {
  if (!include_self && c > 0) return T(0);
  if constexpr (kR == Reduce::Mean) {
    const int64_t n = c + (include_self ? 1 : 0);
    return static_cast<T>(g / static_cast<T>(n == 0 ? 1 : n));
  } else if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
    const T is = x == r ? T(1) : T(0);  // include_self here, or no entries
    const T ties = c > 0 ? st.ties[b] : is;
    return static_cast<T>(static_cast<T>(g / ties) * is);
  } else if constexpr (kR == Reduce::Prod) {
    if (!include_self) return g;
    if (x != T(0)) return static_cast<T>(g * static_cast<T>(r / x));
    return c > 0 ? static_cast<T>(g * prod_at_zero(st.zeros[b], st.prod[b], st.zsum[b], x))
                 : g;  // self alone, a zero: the product of nothing else, 1
  } else {  // Sum
    return g;
  }
}

// src's gradient for one entry of value v that went to slot b (grad g, result r there); n the
// slot's divisor for mean.
template <Reduce kR, typename T>
T src_grad_at(const Stats<T>& st, int64_t b, T g, T r, T v, T n) {
  if constexpr (kR == Reduce::Mean) {
    return static_cast<T>(g / n);
  } else if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) {
    return static_cast<T>(static_cast<T>(g / st.ties[b]) * (v == r ? T(1) : T(0)));
  } else if constexpr (kR == Reduce::Prod) {
    if (v != T(0)) return static_cast<T>(g * static_cast<T>(r / v));
    return static_cast<T>(g * prod_at_zero(st.zeros[b], st.prod[b], st.zsum[b], v));
  } else {  // Sum
    return g;
  }
}

// Calls fn(std::integral_constant<Reduce, kR>) for a gradient's reduce (sum | prod | mean | amax
// | amin).
template <typename Fn>
decltype(auto) visit_grad_reduce(Reduce reduce, Fn&& fn) {
  switch (reduce) {
    case Reduce::Prod:
      return fn(std::integral_constant<Reduce, Reduce::Prod>{});
    case Reduce::Mean:
      return fn(std::integral_constant<Reduce, Reduce::Mean>{});
    case Reduce::Amax:
      return fn(std::integral_constant<Reduce, Reduce::Amax>{});
    case Reduce::Amin:
      return fn(std::integral_constant<Reduce, Reduce::Amin>{});
    default:
      return fn(std::integral_constant<Reduce, Reduce::Sum>{});
  }
}

// ---- scatter_reduce: the walk form --------------------------------------------------------------

enum { INDEX, SRC, GRAD, RESULT, SELF, STATS, GRAD_SRC };  // the walk's tensors, in add order

// Counts and statistics of the slots one task owns, entries in index order (as the forward).
// Everything by value, so the loop keeps it in registers. False if an index was out of range.
template <Reduce kR, typename T, typename I>
bool stats_task(const Span& sp, const I* ix, const T* s, const T* r, const T* x, Stats<T> st,
                int64_t slots, bool include_self) {
  bool ok = true;
  for_entries(sp, [&](const Line& l, int64_t k) {
    const int64_t slot = ix[l.at(INDEX, k)];
    if (!IndexGuard::in_range(slot, slots)) {
      ok = false;
      return;
    }
    const int64_t b = l.at(STATS, slot);
    const T rv = r[l.at(RESULT, slot)];
    if (st.count[b]++ == 0) st.template start<kR>(b, x[l.at(SELF, slot)], rv, include_self);
    st.template add<kR>(b, s[l.at(SRC, k)], rv);
  });
  return ok;
}

// src's gradient for the entries of one task (after stats_task on the same task).
template <Reduce kR, typename T, typename I>
bool src_grad_task(const Span& sp, const I* ix, const T* s, const T* g, const T* r, Stats<T> st,
                   T* out, int64_t slots, bool include_self) {
  bool ok = true;
  const int extra = include_self ? 1 : 0;
  for_entries(sp, [&](const Line& l, int64_t k) {
    const int64_t slot = ix[l.at(INDEX, k)];
    if (!IndexGuard::in_range(slot, slots)) {
      ok = false;
      return;
    }
    const int64_t b = l.at(STATS, slot);
    const T n = kR == Reduce::Mean ? static_cast<T>(st.count[b] + extra) : T(1);
    out[l.at(GRAD_SRC, k)] =
        src_grad_at<kR>(st, b, g[l.at(GRAD, slot)], r[l.at(RESULT, slot)], s[l.at(SRC, k)], n);
  });
  return ok;
}

template <Reduce kR, typename T, typename I>
Tensor scatter_reduce_grad(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src, bool include_self, const Tensor& result,
                           bool want_self, IndexGuard& guard) {
  // src's gradient: entries outside index's extent (src larger than index) get 0
  Tensor g_src;
  if (!want_self)
    g_src = index.shape() == src.shape() ? empty(src.shape(), src.dtype(), src.device())
                                         : zeros(src.shape(), src.dtype(), src.device());
  Walk w(index.shape(), dim);
  for (const Tensor* t : {&index, &src, &grad, &result, &self}) w.add(*t);
  w.add_dense(self.shape());
  if (!want_self) w.add(g_src);
  const I* ix = index.data<I>();
  const T *s = src.data<T>(), *g = grad.data<T>(), *r = result.data<T>(), *x = self.data<T>();
  const int64_t slots = self.size(dim);
  SlotStats<T> stats(self.numel(), kR, true);
  const Stats<T> st = stats.view();
  if (want_self) {
    for_each_task(w, 6, [&](const Span& sp) {
      if (!stats_task<kR>(sp, ix, s, r, x, st, slots, include_self)) guard.flag();
    });
    Tensor out = empty(self.shape(), self.dtype(), self.device());
    const Flat<T> gf = flat_of<T>(grad), rf = flat_of<T>(result), xf = flat_of<T>(self);
    T* o = out.data<T>();
    parallel_for(0, self.numel(), kElementwiseGrain, [&](int64_t first, int64_t last) {
      for (int64_t e = first; e < last; ++e)
        o[e] = self_grad_at<kR>(st, e, gf[e], rf[e], xf[e], st.count[e], include_self);
    });
    return out;
  }
  T* o = g_src.data<T>();
  for_each_task(w, 7, [&](const Span& sp) {
    bool ok = kR == Reduce::Sum || stats_task<kR>(sp, ix, s, r, x, st, slots, include_self);
    ok = src_grad_task<kR>(sp, ix, s, g, r, st, o, slots, include_self) && ok;
    if (!ok) guard.flag();
  });
  return g_src;
}

// ---- index_reduce: the row form -----------------------------------------------------------------

// Rows of [outer, slots, inner] (self, result, grad, statistics) and [outer, n, inner] (source).
template <Reduce kR, typename T>
Tensor index_reduce_grad(const Tensor& grad, const Tensor& self, int64_t dim,
                         const std::vector<int64_t>& ix, const Tensor& source, bool include_self,
                         const Tensor& result, bool want_self) {
  constexpr bool kTies = kR == Reduce::Amax || kR == Reduce::Amin;
  const Dims3 d = dims3(self.shape(), dim);
  const int64_t slots = d.mid, inner = d.inner, n = static_cast<int64_t>(ix.size());
  const Rows<T> g = rows_of<T>(grad, dim);
  const Tensor rc = result.contiguous(), xc = self.contiguous(), sc = source.contiguous();
  const T *r = rc.data<T>(), *x = xc.data<T>(), *s = sc.data<T>();
  std::vector<int64_t> count(static_cast<size_t>(slots), 0);  // the same for every column
  for (int64_t slot : ix) ++count[static_cast<size_t>(slot)];
  // Statistics (amax/amin ties, prod zero statistics) over whole rows, in column blocks. A row of
  // slots is "suspect" (prod) when some result in it may hide a zero.
  SlotStats<T> stats(self.numel(), kR, false);
  const Stats<T> st = stats.view();
  std::vector<char> suspect(static_cast<size_t>(d.outer * slots), 0);
  if constexpr (kR == Reduce::Prod) {
    for (int64_t row = 0; row < d.outer * slots; ++row)
      for (int64_t j = 0; j < inner; ++j)
        if (may_hold_zero(r[row * inner + j])) {
          suspect[static_cast<size_t>(row)] = 1;
          break;
        }
  }
  if ((kTies && (include_self || !want_self)) || kR == Reduce::Prod) {
    for_each_column_block(d.outer, inner, n + slots, [&](int64_t o, int64_t j0, int64_t j1) {
      for (int64_t slot = 0; slot < slots; ++slot) {
        const int64_t row = o * slots + slot;
        if (count[static_cast<size_t>(slot)] == 0) continue;
        if (kR == Reduce::Prod && !suspect[static_cast<size_t>(row)]) continue;
        for (int64_t j = j0; j < j1; ++j)
          st.template start<kR>(row * inner + j, x[row * inner + j], r[row * inner + j],
                                include_self);
      }
      for (int64_t k = 0; k < n; ++k) {
        const int64_t row = o * slots + ix[static_cast<size_t>(k)];
        const T* __restrict v = s + (o * n + k) * inner;
        const T* __restrict rr = r + row * inner;
        if constexpr (kTies) {
          T* __restrict t = st.ties + row * inner;
          for (int64_t j = j0; j < j1; ++j) t[j] += v[j] == rr[j] ? T(1) : T(0);
        } else {
          if (!suspect[static_cast<size_t>(row)]) continue;
          for (int64_t j = j0; j < j1; ++j) st.template add<kR>(row * inner + j, v[j], rr[j]);
        }
      }
    });
  }
  if (want_self) {
    Tensor out = empty(self.shape(), self.dtype(), self.device());
    T* o = out.data<T>();
    parallel_for(0, d.outer * slots, std::max<int64_t>(1, kElementwiseGrain / inner),
                 [&](int64_t first, int64_t last) {
                   for (int64_t row = first; row < last; ++row) {
                     const int64_t c = count[static_cast<size_t>(row % slots)];
                     const T* __restrict gr = g.row(row / slots, row % slots);
                     const int64_t b = row * inner;
                     for (int64_t j = 0; j < inner; ++j)
                       o[b + j] = self_grad_at<kR>(st, b + j, gr[j], r[b + j], x[b + j], c,
                                                   include_self);
                   }
                 });
    return out;
  }
  Tensor out = empty(source.shape(), source.dtype(), source.device());
  T* o = out.data<T>();
  parallel_for(0, d.outer * n, std::max<int64_t>(1, kElementwiseGrain / inner),
               [&](int64_t first, int64_t last) {
                 for (int64_t row = first; row < last; ++row) {
                   const int64_t outer = row / n, slot = ix[static_cast<size_t>(row % n)];
                   const int64_t b = (outer * slots + slot) * inner;
                   const T* __restrict gr = g.row(outer, slot);
                   const T* __restrict rr = r + b;
                   const T* __restrict v = s + row * inner;
                   T* __restrict out_row = o + row * inner;
                   const T c = static_cast<T>(count[static_cast<size_t>(slot)] +
                                              (include_self ? 1 : 0));
                   if (kR == Reduce::Prod && !suspect[static_cast<size_t>(outer * slots + slot)]) {
                     // no zero in this row of slots: every contributor is nonzero
                     for (int64_t j = 0; j < inner; ++j)
                       out_row[j] = static_cast<T>(gr[j] * static_cast<T>(rr[j] / v[j]));
                   } else {
                     for (int64_t j = 0; j < inner; ++j)
                       out_row[j] = src_grad_at<kR>(st, b + j, gr[j], rr[j], v[j], c);
                   }
                 }
               });
  return out;
}

// grad_output must have self's shape and dtype (it is the gradient of a result of that shape).
void check_grad_like(const char* op, const char* name, const Tensor& t, const Tensor& self) {
  TG_CHECK(t.shape() == self.shape(), ValueError, op, name, " has shape ", t.shape(),
           ", expected self's shape ", self.shape());
  TG_CHECK(t.dtype() == self.dtype(), TypeError, op, name, " has dtype ", dtype_name(t.dtype()),
           ", expected self's dtype ", dtype_name(self.dtype()));
}

// A 0-d input's gradient comes back 0-d.
Tensor like_input(const Tensor& g, const Tensor& input) {
  return input.dim() == 0 ? g.reshape({}) : g;
}

}  // namespace

Tensor scatter_reduce_backward(const Tensor& grad_output, const Tensor& self, int64_t dim,
                               const Tensor& index, const Tensor& src, const std::string& reduce,
                               bool include_self, const Tensor& result, const std::string& input) {
  constexpr const char* op = "scatter_reduce_backward";
  const Tensor self1 = as_1d(self), index1 = as_1d(index), src1 = as_1d(src);
  const Tensor grad1 = as_1d(grad_output), result1 = as_1d(result);
  const int64_t d = check_scatter(op, self1, dim, index1, &src1);
  check_grad_like(op, "grad_output", grad1, self1);
  check_grad_like(op, "result", result1, self1);
  const bool want_self = input == "self";
  const Reduce r = parse_reduce(reduce);
  if (index1.numel() == 0 || (want_self && r == Reduce::Sum && include_self)) {
    // self's gradient is grad (nothing scattered, or a plain sum), src's is 0
    check_index_range(op, index1, d, self1.size(d));
    return want_self ? like_input(fresh_copy(grad1), self) : zeros(src.shape(), src.dtype());
  }
  IndexGuard guard;
  Tensor g = visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_index(index1, [&](auto itag) {
      using I = typename decltype(itag)::type;
      return visit_grad_reduce(r, [&](auto kind) {
        return scatter_reduce_grad<decltype(kind)::value, T, I>(grad1, self1, d, index1, src1,
                                                                include_self, result1, want_self,
                                                                guard);
      });
    });
  });
  guard.check(op, index1, d, self1.size(d));
  return like_input(g, want_self ? self : src);
}

Tensor index_reduce_backward(const Tensor& grad_output, const Tensor& self, int64_t dim,
                             const Tensor& index, const Tensor& source, const std::string& reduce,
                             bool include_self, const Tensor& result, const std::string& input) {
  constexpr const char* op = "index_reduce_backward";
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  const Tensor grad1 = as_1d(grad_output), result1 = as_1d(result);
  const int64_t d = check_index_op(op, self1, dim, index);
  check_source(op, self1, d, index, source1);
  check_grad_like(op, "grad_output", grad1, self1);
  check_grad_like(op, "result", result1, self1);
  const bool want_self = input == "self";
  const std::vector<int64_t> ix = index_values(index);
  Tensor g = visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_grad_reduce(parse_reduce(reduce), [&](auto kind) {
      return index_reduce_grad<decltype(kind)::value, T>(grad1, self1, d, ix, source1,
                                                         include_self, result1, want_self);
    });
  });
  return like_input(g, want_self ? self : source);
}

Tensor gather_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                       const Tensor& index) {
  constexpr const char* op = "gather_backward";
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor out = zeros(shape.empty() ? Shape{1} : shape, grad_output.dtype(),
                           grad_output.device());
  const Tensor index1 = as_1d(index), grad1 = as_1d(grad_output);
  const int64_t d = check_scatter(op, out, dim, index1, nullptr);
  TG_CHECK(grad1.shape() == index1.shape(), ValueError, op, "grad_output has shape ",
           grad_output.shape(), ", expected index's shape ", index.shape());
  if (index1.numel() > 0) scatter_into(op, out, d, index1, grad1, Reduce::Sum, true);
  return shape.empty() ? out.reshape({}) : out;
}

Tensor index_select_backward(const Tensor& grad_output, IntArrayRef self_shape, int64_t dim,
                             const Tensor& index) {
  constexpr const char* op = "index_select_backward";
  const Shape shape(self_shape.begin(), self_shape.end());
  const Tensor out = zeros(shape.empty() ? Shape{1} : shape, grad_output.dtype(),
                           grad_output.device());
  const int64_t d = check_index_op(op, out, dim, index);
  const Tensor grad1 = as_1d(grad_output);
  Shape expected = out.shape();
  expected[d] = index.numel();
  TG_CHECK(grad1.shape() == expected, ValueError, op, "grad_output has shape ", grad_output.shape(),
           ", expected ", expected, " (self's shape with index's ", index.numel(), " entries at dim ",
           d, ")");
  if (index.numel() > 0) scatter_rows_into(out, d, index, grad1, Reduce::Sum, true);
  return shape.empty() ? out.reshape({}) : out;
}

}  // namespace tg::cpu
