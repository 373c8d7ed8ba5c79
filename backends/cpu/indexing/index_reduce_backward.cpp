// CPU index_reduce_backward: the gradients of self and/or of source of index_reduce over whole
// rows (rows.h), both from one set of per-slot statistics. The rules are in slot_grads.h. Its
// arguments were checked before dispatch (ops/checks/index.cpp); the index values are checked
// here, before anything is computed.
#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "data_checks.h"
#include "index_values.h"
#include "layout.h"
#include "rows.h"
#include "select.h"
#include "simd.h"
#include "slot_grads.h"

namespace tg::cpu {
namespace {
using namespace indexing;

// index_reduce amax/amin with self included, in one pass over the source: every slot has at least
// one winner (self or a source entry equal to the result) unless its result is NaN, so when the
// winners of a row of slots add up to its length every slot in it has exactly one, and the
// gradients there are grad * [winner] (grad / ties with ties 1, bit for bit). The rows of slots
// where they do not (ties, NaN) are then redone with tie counts. Writes source's gradient into
// source_out and self's into self_out (each if defined). False, with nothing usable written, when
// more than an eighth of the rows need redoing (data full of ties): the caller's general path is
// faster then.
template <typename T> bool index_reduce_single_winner(const Rows<T>& g, const T* r, const T* x,
                                                      const T* s, const std::vector<int64_t>& ix,
                                                      const Dims3& d, const Tensor& source_out,
                                                      const Tensor& self_out) {
  const int64_t slots = d.mid, inner = d.inner, n = static_cast<int64_t>(ix.size());
  const int64_t rows = d.outer * slots;  // rows of slots
  T* so = source_out.defined() ? source_out.data<T>() : nullptr;
  T* xo = self_out.defined() ? self_out.data<T>() : nullptr;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1));
  std::vector<std::atomic<int64_t>> winners(static_cast<size_t>(rows));
  parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {  // self's share; NaN: -inf
    for (int64_t row = first; row < last; ++row) {
      const T* rr = r + row * inner;
      bool nan = false;
      for (int64_t j = 0; j < inner; ++j) nan |= rr[j] != rr[j];
      const int64_t w = winners_of_row(x + row * inner, rr, g.row(row / slots, row % slots), 1,
                                       xo ? xo + row * inner : nullptr, inner);
      winners[static_cast<size_t>(row)].store(nan ? std::numeric_limits<int64_t>::min() : w,
                                              std::memory_order_relaxed);
    }
  });
  parallel_for(0, d.outer * n, grain, [&](int64_t first, int64_t last) {
    for (int64_t entry = first; entry < last; ++entry) {
      const int64_t outer = entry / n, slot = ix[static_cast<size_t>(entry % n)];
      const int64_t row = outer * slots + slot;
      winners[static_cast<size_t>(row)].fetch_add(winners_of_row(s + entry * inner, r + row * inner,
                                                                 g.row(outer, slot), 1,
                                                                 so ? so + entry * inner : nullptr,
                                                                 inner),
                                                  std::memory_order_relaxed);
    }
  });
  std::vector<int64_t> redo;  // rows of slots with ties or a NaN result
  for (int64_t row = 0; row < rows; ++row)
    if (winners[static_cast<size_t>(row)].load(std::memory_order_relaxed) != inner)
      redo.push_back(row);
  if (redo.empty()) return true;
  if (static_cast<int64_t>(redo.size()) * 8 > rows) return false;
  const EntriesBySlot grouped = group_by_slot(ix, slots);
  parallel_for(0, static_cast<int64_t>(redo.size()), 1, [&](int64_t first, int64_t last) {
    std::vector<int32_t> ties(static_cast<size_t>(inner));
    for (int64_t i = first; i < last; ++i) {
      const int64_t row = redo[static_cast<size_t>(i)], outer = row / slots, slot = row % slots;
      const T *rr = r + row * inner, *xr = x + row * inner, *gr = g.row(outer, slot);
      const auto entries = [&](auto fn) {  // fn(source row) for each entry of this slot
        const int64_t first_entry = grouped.begin[static_cast<size_t>(slot)];
        for (int64_t e = first_entry; e < first_entry + grouped.count(slot); ++e)
          fn(outer * n + grouped.order[static_cast<size_t>(e)]);
      };
      for (int64_t j = 0; j < inner; ++j) ties[static_cast<size_t>(j)] = xr[j] == rr[j];
      entries([&](int64_t entry) {
        const T* v = s + entry * inner;
        for (int64_t j = 0; j < inner; ++j) ties[static_cast<size_t>(j)] += v[j] == rr[j];
      });
      auto share = [&](int64_t j) {  // grad / ties, as the composed formula
        return static_cast<T>(gr[j] / static_cast<T>(ties[static_cast<size_t>(j)]));
      };
      if (xo)
        for (int64_t j = 0; j < inner; ++j)
          xo[row * inner + j] = static_cast<T>(share(j) * one_if<T>(xr[j] == rr[j]));
      if (so)
        entries([&](int64_t entry) {
          const T* v = s + entry * inner;
          for (int64_t j = 0; j < inner; ++j)
            so[entry * inner + j] = static_cast<T>(share(j) * one_if<T>(v[j] == rr[j]));
        });
    }
  });
  return true;
}

// Rows of [outer, slots, inner] (self, result, grad, statistics) and [outer, n, inner] (source).
// {self's gradient, source's gradient}, each only when asked for; one set of statistics serves
// both.
template <Reduce kR, typename T>
std::pair<Tensor, Tensor> index_reduce_grad(const Tensor& grad, const Tensor& self, int64_t dim,
                                            const std::vector<int64_t>& ix, const Tensor& source,
                                            bool include_self, const Tensor& result, bool want_self,
                                            bool want_source) {
  constexpr bool kTies = kR == Reduce::Amax || kR == Reduce::Amin;
  const Dims3 d = dims3(self.shape(), dim);
  const int64_t slots = d.mid, inner = d.inner, n = static_cast<int64_t>(ix.size());
  const Rows<T> g = rows_of<T>(grad, dim);
  const Tensor rc = dense(result), xc = dense(self), sc = dense(source);
  const T *r = rc.data<T>(), *x = xc.data<T>(), *s = sc.data<T>();
  if (kTies && include_self) {  // the common case: one winner per slot, one pass
    Tensor self_out = want_self ? empty(self.shape(), self.dtype(), self.device()) : Tensor();
    Tensor source_out =
        want_source ? empty(source.shape(), source.dtype(), source.device()) : Tensor();
    if (index_reduce_single_winner(g, r, x, s, ix, d, source_out, self_out))
      return {self_out, source_out};
  }
  std::vector<int64_t> count(static_cast<size_t>(slots), 0);  // the same for every column
  for (int64_t slot : ix) ++count[static_cast<size_t>(slot)];
  // Statistics (amax/amin ties, prod zero statistics) over whole rows, in column blocks. A row of
  // slots is "suspect" (prod) when some result in it may hide a zero.
  SlotStats<T> stats(self.numel(), kR);
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
  if ((kTies && (include_self || want_source)) || kR == Reduce::Prod) {
    for_each_column_block(d.outer, inner, n + slots, [&](int64_t o, int64_t j0, int64_t j1) {
      for (int64_t slot = 0; slot < slots; ++slot) {  // self's share, entries or not
        const int64_t row = o * slots + slot;
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
          int32_t* __restrict t = st.ties + row * inner;
          for (int64_t j = j0; j < j1; ++j) t[j] += v[j] == rr[j];
        } else {
          if (!suspect[static_cast<size_t>(row)]) continue;
          for (int64_t j = j0; j < j1; ++j) st.template add<kR>(row * inner + j, v[j], rr[j]);
        }
      }
    });
  }
  // mean and amax/amin (with ties): each slot's share of its grad, grad / n or grad / ties, the
  // composed formula's self-shaped `g`; src entries then read it (no division per entry).
  const bool shared = kR == Reduce::Mean || (kTies && (include_self || want_source));
  Tensor share_buffer = shared ? empty({d.outer * slots * inner}, dtype_of<T>()) : Tensor();
  T* share = shared ? share_buffer.data<T>() : nullptr;
  const int extra = include_self ? 1 : 0;
  // rows of [outer, slots, inner] (or [outer, n, inner]) per task
  const int64_t row_grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1));
  if (shared)
    parallel_for(0, d.outer * slots, row_grain, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const T* __restrict gr = g.row(row / slots, row % slots);
        T* __restrict sh = share + row * inner;
        if constexpr (kR == Reduce::Mean) {
          const int64_t c = count[static_cast<size_t>(row % slots)] + extra;
          const T n = static_cast<T>(c == 0 ? 1 : c);
          for (int64_t j = 0; j < inner; ++j) sh[j] = static_cast<T>(gr[j] / n);
        } else {
          const int32_t* __restrict t = st.ties + row * inner;
          for (int64_t j = 0; j < inner; ++j) sh[j] = static_cast<T>(gr[j] / static_cast<T>(t[j]));
        }
      }
    });
  Tensor self_out, source_out;
  if (want_self) {
    self_out = empty(self.shape(), self.dtype(), self.device());
    T* o = self_out.data<T>();
    parallel_for(0, d.outer * slots, row_grain, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const int64_t c = count[static_cast<size_t>(row % slots)], b = row * inner;
        const T* __restrict gr = g.row(row / slots, row % slots);
        const T* __restrict rr = r + b;
        const T* __restrict xr = x + b;
        T* __restrict dst = o + b;
        if (!include_self && c > 0) {  // self left out of a slot that got entries
          std::fill_n(dst, inner, T(0));
        } else if (kR == Reduce::Mean || (kTies && include_self)) {
          const T* __restrict sh = share + b;
          for (int64_t j = 0; j < inner; ++j)
            dst[j] = kR == Reduce::Mean ? sh[j] : static_cast<T>(sh[j] * one_if<T>(xr[j] == rr[j]));
        } else if (kTies) {  // no entries, self alone: ties = [self == result]
          for (int64_t j = 0; j < inner; ++j) {
            const T is = one_if<T>(xr[j] == rr[j]);
            dst[j] = static_cast<T>(static_cast<T>(gr[j] / is) * is);
          }
        } else if (kR == Reduce::Prod && include_self && !suspect[static_cast<size_t>(row)]) {
          for (int64_t j = 0; j < inner; ++j)
            dst[j] = static_cast<T>(gr[j] * static_cast<T>(rr[j] / xr[j]));
        } else {
          for (int64_t j = 0; j < inner; ++j)
            dst[j] = self_grad_at<kR>(st, b + j, gr[j], rr[j], xr[j], c, include_self);
        }
      }
    });
  }
  if (!want_source) return {self_out, source_out};
  source_out = empty(source.shape(), source.dtype(), source.device());
  T* o = source_out.data<T>();
  parallel_for(0, d.outer * n, row_grain, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      const int64_t outer = row / n, slot = ix[static_cast<size_t>(row % n)];
      const int64_t b = (outer * slots + slot) * inner;
      const T* __restrict gr = g.row(outer, slot);
      const T* __restrict rr = r + b;
      const T* __restrict v = s + row * inner;
      T* __restrict dst = o + row * inner;
      if constexpr (kR == Reduce::Mean) {
        std::copy_n(share + b, inner, dst);
      } else if constexpr (kTies) {
        const T* __restrict sh = share + b;
        for (int64_t j = 0; j < inner; ++j)
          dst[j] = static_cast<T>(sh[j] * one_if<T>(v[j] == rr[j]));
      } else if (kR == Reduce::Prod && !suspect[static_cast<size_t>(outer * slots + slot)]) {
        // no zero in this row of slots: every contributor is nonzero
        for (int64_t j = 0; j < inner; ++j)
          dst[j] = static_cast<T>(gr[j] * static_cast<T>(rr[j] / v[j]));
      } else {
        for (int64_t j = 0; j < inner; ++j)
          dst[j] = src_grad_at<kR>(st, b + j, gr[j], rr[j], v[j], T(1));
      }
    }
  });
  return {self_out, source_out};
}

}  // namespace

std::tuple<Tensor, Tensor> index_reduce_backward(const Tensor& grad_output, const Tensor& self,
                                                 int64_t dim, const Tensor& index,
                                                 const Tensor& source, const std::string& reduce,
                                                 bool include_self, const Tensor& result,
                                                 const std::string& input) {
  constexpr const char* op = "index_reduce_backward";
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  const Tensor grad1 = as_1d(grad_output), result1 = as_1d(result);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  check_index_range(op, index, d, self1.size(d));  // the rows form reads every value unchecked
  const bool want_self = input != "source", want_source = input != "self";
  const std::vector<int64_t> ix = index_values(index);
  const auto g = visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_grad_reduce(parse_reduce(reduce), [&](auto kind) {
      return index_reduce_grad<decltype(kind)::value, T>(grad1, self1, d, ix, source1, include_self,
                                                         result1, want_self, want_source);
    });
  });
  return like_inputs(g, self, source);
}

}  // namespace tg::cpu
