// The indexing engine's forward kernels; see engine.h for the two layouts.
#include "engine.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include <tapegrad/core/parallel.h>
#include <tapegrad/ops/factories.h>

#include "data_checks.h"
#include "index_values.h"
#include "layout.h"
#include "rows.h"
#include "select.h"
#include "simd.h"
#include "walk.h"

namespace tg::cpu::indexing {

namespace {

// ---- scatter (walk form) ------------------------------------------------------------------------

enum { OUT, INDEX, SRC, COUNT };  // scatter_walk's tensors, in Walk::add order

// One entry combined into out. kCounted: count it in n; kFresh (include_self false): a slot
// starts from `start` on its first entry. o_at, n_at: the slot's offsets in out and n.
template <bool kCounted, bool kFresh, typename T, typename Op>
inline void combine_entry(T* o, int64_t o_at, int32_t* n, int64_t n_at, T value, T start, Op op) {
  T& v = o[o_at];
  if constexpr (kCounted) {
    const int32_t before = n[n_at]++;
    if constexpr (kFresh) v = pick(before == 0, start, v);
  }
  v = op(v, value);
}

// The entries of one task combined into out. Everything comes in by value, and a single line
// (the common case: dim is the last dim) runs on plain offset/step locals, so the loop keeps all
// of it in registers. Returns false if some index value was out of range.
template <bool kCounted, bool kFresh, typename T, typename I, typename Op>
bool scatter_task(const Span& sp, T* o, const I* ix, const T* s, int32_t* n, int64_t slots, T start,
                  Op op) {
  if (sp.width == 1) {  // base pointers, not offsets: few enough values to stay in registers
    bool ok = true;
    const Line& l = sp.first;
    T* const ob = o + l.off[OUT];
    const I* const ib = ix + l.off[INDEX];
    const T* const sb = s + l.off[SRC];
    int32_t* const nb = kCounted ? n + l.off[COUNT] : nullptr;
    const int64_t os = l.step[OUT], is = l.step[INDEX], ss = l.step[SRC], cs = l.step[COUNT];
    for (int64_t k = 0; k < sp.length; ++k) {
      const int64_t slot = ib[k * is];
      if (!IndexGuard::in_range(slot, slots)) {
        ok = false;
        continue;
      }
      combine_entry<kCounted, kFresh>(ob, slot * os, nb, slot * cs, sb[k * ss], start, op);
    }
    return ok;
  }
  return for_valid_entries<INDEX>(sp, ix, slots, [&](const Line& l, int64_t k, int64_t slot) {
    combine_entry<kCounted, kFresh>(o, l.at(OUT, slot), n, l.at(COUNT, slot), s[l.at(SRC, k)],
                                    start, op);
  });
}

// ---- mean along single lines: (sum, count) pairs ------------------------------------------------

// The mean of one line of entries (a task of width 1), summed into (sum, count) pairs in `pairs`
// (two values per slot, at twice the slot's dense offset). The sums are added in index order,
// starting from self (include_self) or 0, and divided by the count as the general path does: the
// same result bit for bit. Counts are exact: the caller keeps a line's entries below 2^24 for
// float. A slot no entry reaches keeps its value. False if some index value was out of range.
template <typename T, typename I> bool mean_line(const Line& l, int64_t length, T* o, const I* ix,
                                                 const T* s, T* pairs, int64_t slots,
                                                 bool include_self) {
  T* const ob = o + l.off[OUT];
  const I* const ib = ix + l.off[INDEX];
  const T* const sb = s + l.off[SRC];
  T* const pb = pairs + 2 * l.off[COUNT];
  const int64_t os = l.step[OUT], is = l.step[INDEX], ss = l.step[SRC], ps = 2 * l.step[COUNT];
  for (int64_t slot = 0; slot < slots; ++slot) {
    pb[slot * ps] = include_self ? ob[slot * os] : T(0);
    pb[slot * ps + 1] = include_self ? T(1) : T(0);
  }
  bool ok = true;
  for (int64_t k = 0; k < length; ++k) {
    const int64_t slot = ib[k * is];
    if (!IndexGuard::in_range(slot, slots)) {
      ok = false;
      continue;
    }
    add_to_pair(pb + slot * ps, sb[k * ss]);
  }
  for (int64_t slot = 0; slot < slots; ++slot) {  // branch-free: an empty slot keeps its value
    const T sum = pb[slot * ps], count = pb[slot * ps + 1];
    ob[slot * os] = pick(count == T(0), ob[slot * os], static_cast<T>(sum / count));
  }
  return ok;
}

template <typename T, typename I, typename Op>
void scatter_walk(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, Op op,
                  Reduce reduce, bool include_self, IndexGuard& guard) {
  Walk w(index.shape(), dim);
  w.add(out);
  w.add(index);
  w.add(src);
  w.add_dense(out.shape());
  T* o = out.data<T>();
  const I* ix = index.data<I>();
  const T* s = src.data<T>();
  const int64_t slots = out.size(dim);
  const T start = identity<T>(reduce);
  if (reduce != Reduce::Mean && include_self) {  // one pass, nothing to count
    for_each_task(w, [&](const Span& sp) {
      if (!scatter_task<false, false>(sp, o, ix, s, nullptr, slots, start, op)) guard.flag();
    });
    return;
  }
  // Floating mean with one line per task (dim last, or nothing after it): (sum, count) pairs.
  if constexpr (std::is_floating_point_v<T>) {
    const bool exact_counts = sizeof(T) == 8 || w.length() < (int64_t{1} << 24);
    if (reduce == Reduce::Mean && w.inner() == 1 && exact_counts) {
      const Tensor pairs = empty({2 * out.numel()}, out.dtype());  // reused memory
      T* p = pairs.data<T>();
      for_each_task(w, [&](const Span& sp) {
        if (!mean_line(sp.first, sp.length, o, ix, s, p, slots, include_self)) guard.flag();
      });
      return;
    }
  }
  // Entries per slot (out's shape); then the means are divided, one pass over out.
  const Tensor count = zeros({out.numel()}, kInt32);  // a tensor: reused memory, no page faults
  int32_t* n = count.data<int32_t>();
  for_each_task(w, [&](const Span& sp) {
    const bool ok = include_self ? scatter_task<true, false>(sp, o, ix, s, n, slots, start, op)
                                 : scatter_task<true, true>(sp, o, ix, s, n, slots, start, op);
    if (!ok) guard.flag();
  });
  if (reduce != Reduce::Mean) return;
  const int extra = include_self ? 1 : 0;
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t first, int64_t last) {
    if constexpr (std::is_floating_point_v<T>) {  // branch-free (it vectorises): an empty slot
      for (int64_t e = first; e < last; ++e)      // divides by 1, which changes nothing
        o[e] = o[e] / static_cast<T>(std::max(n[e] + extra, 1));
    } else {
      for (int64_t e = first; e < last; ++e)
        if (n[e] > 0) o[e] = mean_divide(o[e], n[e] + extra);
    }
  });
}

// ---- scatter (row form) -------------------------------------------------------------------------

template <typename T, typename Op>
void scatter_rows_typed(const Tensor& out, int64_t dim, const std::vector<int64_t>& ix,
                        const Rows<T>& src, Op op, Reduce reduce, bool include_self, bool fresh) {
  const Dims3 d = dims3(out.shape(), dim);
  const int64_t n = static_cast<int64_t>(ix.size()), slots = d.mid, inner = d.inner;
  const EntriesBySlot grouped = group_by_slot(ix, slots);
  const ScratchInt64& begin = grouped.begin;
  const ScratchInt64& order = grouped.order;
  auto count = [&](int64_t slot) { return grouped.count(slot); };
  T* o = out.data<T>();
  const T start = identity<T>(reduce);
  const bool restart = fresh || !include_self;  // a slot's first entry starts from `start`
  // A source that repeats one row (an expanded gradient) is read from cache whatever the order,
  // so the entries go slot by slot: each destination row is loaded once and stays in cache while
  // its entries combine into it. Otherwise they go in index order, reading the large source in
  // memory order (slot order would read it at random). The combines of a slot happen
  // in index order either way: the same result, bit for bit.
  const bool by_slot = src.outer_stride == 0 && src.mid_stride == 0;
  if (d.outer == 1 && get_num_threads() > 1 && slots * inner > kElementwiseGrain) {
    // One block of rows (an embedding's gradient: 8192 rows into [50000, 128]): the threads take
    // ranges of slots, each filling and combining whole rows of its own part of the result in
    // memory order; split by columns, every thread would write part of every row. The entries
    // of a slot combine in index order as below: the same result, bit for bit.
    parallel_for(0, slots, std::max<int64_t>(1, kElementwiseGrain / inner),
                 [&](int64_t first_slot, int64_t last_slot) {
                   for (int64_t slot = first_slot; slot < last_slot; ++slot) {
                     T* __restrict orow = o + slot * inner;
                     const int64_t first = begin[static_cast<size_t>(slot)], c = count(slot);
                     if (c == 0) {
                       if (fresh) std::fill(orow, orow + inner, start);
                       continue;
                     }
                     for (int64_t e = first; e < first + c; ++e) {
                       const T* __restrict srow = src.row(0, order[static_cast<size_t>(e)]);
                       if (restart && e == first)
                         for (int64_t j = 0; j < inner; ++j) orow[j] = op(start, srow[j]);
                       else
                         for (int64_t j = 0; j < inner; ++j) orow[j] = op(orow[j], srow[j]);
                     }
                     if (reduce == Reduce::Mean) {
                       const int64_t total = c + (include_self ? 1 : 0);
                       for (int64_t j = 0; j < inner; ++j) orow[j] = mean_divide(orow[j], total);
                     }
                   }
                 });
    return;
  }
  for_each_column_block(d.outer, inner, n, [&](int64_t b, int64_t j0, int64_t j1) {
    T* ob = o + b * slots * inner;
    auto combine = [&](T* __restrict orow, const T* __restrict srow, bool first_of_slot) {
      if (restart && first_of_slot)
        for (int64_t j = j0; j < j1; ++j) orow[j] = op(start, srow[j]);
      else
        for (int64_t j = j0; j < j1; ++j) orow[j] = op(orow[j], srow[j]);
    };
    if (fresh)  // slots no entry reaches
      for (int64_t slot = 0; slot < slots; ++slot)
        if (count(slot) == 0) std::fill(ob + slot * inner + j0, ob + slot * inner + j1, start);
    if (by_slot) {
      for (int64_t slot = 0; slot < slots; ++slot) {
        const int64_t first = begin[static_cast<size_t>(slot)];
        for (int64_t e = first; e < first + count(slot); ++e)
          combine(ob + slot * inner, src.row(b, order[static_cast<size_t>(e)]), e == first);
      }
    } else {
      constexpr int64_t kAhead = 4;
      for (int64_t k = 0; k < n; ++k) {
        if (k + kAhead < n)  // rows go to random slots
          prefetch_row<1>(ob + ix[static_cast<size_t>(k + kAhead)] * inner + j0, j1 - j0);
        const int64_t slot = ix[static_cast<size_t>(k)];
        const int64_t slot_first = order[static_cast<size_t>(begin[static_cast<size_t>(slot)])];
        combine(ob + slot * inner, src.row(b, k), slot_first == k);
      }
    }
    if (reduce != Reduce::Mean) return;
    for (int64_t slot = 0; slot < slots; ++slot) {
      if (count(slot) == 0) continue;
      const int64_t c = count(slot) + (include_self ? 1 : 0);
      T* orow = ob + slot * inner;
      for (int64_t j = j0; j < j1; ++j) orow[j] = mean_divide(orow[j], c);
    }
  });
}

// ---- gather -------------------------------------------------------------------------------------

// One row of a gather: out[j] = x[index[j] * x_dim + j * x_step]. By value, so the loop keeps
// everything in registers. An out-of-range value reads slot 0 instead (the caller raises and
// drops the result; slots > 0), so the loop has no branch. False if one was out of range.
template <typename T, typename I> bool gather_row(T* out, const T* x, int64_t x_dim, int64_t x_step,
                                                  const I* ix, int64_t ix_step, int64_t width,
                                                  int64_t slots) {
  if (x_dim == 0 && x_step == 0 && ix_step == 1) {
    // x repeats one value along the row (an expanded gradient, e.g. of a sum): a fill, with the
    // index values only range-checked
    std::fill_n(out, width, x[0]);
    return !any_out_of_range(ix, width, slots);
  }
  if (x_step == 0 && ix_step == 1) {  // gathering along the last dim: four entries per turn
    const auto bound = static_cast<uint64_t>(slots);
    // negative values wrap to huge unsigned ones: one compare checks both ends
    auto out_of_range = [&](I v) {
      return static_cast<uint64_t>(static_cast<int64_t>(v)) >= bound;
    };
    // an out-of-range value reads slot 0 (the caller raises)
    auto at = [&](I v) { return x[(out_of_range(v) ? 0 : static_cast<int64_t>(v)) * x_dim]; };
    bool bad = false;
    int64_t j = 0;
    for (; j + 4 <= width; j += 4) {
      const I a = ix[j], b = ix[j + 1], c = ix[j + 2], d = ix[j + 3];
      // Summed rather than or-ed: branch-free, and clang rejects `|` between bools.
      bad |= (out_of_range(a) + out_of_range(b) + out_of_range(c) + out_of_range(d)) != 0;
      out[j] = at(a);
      out[j + 1] = at(b);
      out[j + 2] = at(c);
      out[j + 3] = at(d);
    }
    for (; j < width; ++j) {
      bad |= out_of_range(ix[j]);
      out[j] = at(ix[j]);
    }
    return !bad;
  }
  bool ok = true;
  for (int64_t j = 0; j < width; ++j) {
    const int64_t v = ix[j * ix_step];
    const bool in = IndexGuard::in_range(v, slots);
    ok &= in;
    out[j] = x[(in ? v : 0) * x_dim + j * x_step];
  }
  return ok;
}

// Rows of the index (every dim but the last) in parallel; along each row a tight loop over the
// last dim. Row offsets skip self's stride at dim (self is read at the index value there).
template <typename T, typename I> void gather_typed(const Tensor& result, const Tensor& self,
                                                    int64_t dim, const Tensor& index,
                                                    IndexGuard& guard) {
  const Shape& shape = index.shape();
  const int64_t last = static_cast<int64_t>(shape.size()) - 1, width = shape[last];
  const int64_t rows = width == 0 ? 0 : shape.numel() / width;
  const int64_t self_dim = self.stride(dim), self_last = self.stride(last);
  const int64_t index_last = index.stride(last), slots = self.size(dim);
  T* res = result.data<T>();
  const I* ix = index.data<I>();
  const T* x = self.data<T>();
  if (slots == 0) {  // every index value is out of range
    guard.flag();
    return;
  }
  // self's offset for a row of the index (its coordinates but the last; the one at dim skipped)
  auto self_offset = [&](int64_t row) {
    int64_t so = 0;
    for (int64_t k = last - 1; k >= 0; --k) {
      if (k != dim) so += (row % shape[k]) * self.stride(k);
      row /= shape[k];
    }
    return so;
  };
  // One index row shared by every row (index_select along the last dim: the 1-d index expanded):
  // checked once, then kShared rows gathered together, each index value loaded once for all of
  // them (a load, a check and a select per value took 1.4x libtorch's time on [1024, 1024]).
  bool shared = dim == last && last > 0 && index_last == 1 && rows >= 4;
  for (int64_t k = 0; k < last && shared; ++k) shared = index.stride(k) == 0;
  if (shared) {
    if (any_out_of_range(ix, width, slots)) {
      guard.flag();  // the caller raises; the result is dropped
      return;
    }
    constexpr int64_t kShared = 4;
    const int64_t blocks = (rows + kShared - 1) / kShared;
    parallel_for(0, blocks, std::max<int64_t>(1, kElementwiseGrain / (kShared * width)),
                 [&](int64_t first, int64_t end) {
                   for (int64_t b = first; b < end; ++b) {
                     const int64_t r0 = b * kShared;
                     if (r0 + kShared > rows) {  // the last rows, one at a time
                       for (int64_t r = r0; r < rows; ++r) {
                         const T* xr = x + self_offset(r);
                         T* out = res + r * width;
                         for (int64_t j = 0; j < width; ++j) out[j] = xr[ix[j] * self_dim];
                       }
                       continue;
                     }
                     const T *x0 = x + self_offset(r0), *x1 = x + self_offset(r0 + 1),
                             *x2 = x + self_offset(r0 + 2), *x3 = x + self_offset(r0 + 3);
                     T* o0 = res + r0 * width;
                     for (int64_t j = 0; j < width; ++j) {
                       const int64_t v = static_cast<int64_t>(ix[j]) * self_dim;
                       o0[j] = x0[v];
                       o0[width + j] = x1[v];
                       o0[2 * width + j] = x2[v];
                       o0[3 * width + j] = x3[v];
                     }
                   }
                 });
    return;
  }
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1)),
               [&](int64_t first, int64_t end) {
                 bool bad = false;
                 for (int64_t row = first; row < end; ++row) {
                   int64_t io = 0, so = 0, rest = row;
                   for (int64_t k = last - 1; k >= 0; --k) {
                     const int64_t coord = rest % shape[k];
                     rest /= shape[k];
                     io += coord * index.stride(k);
                     if (k != dim) so += coord * self.stride(k);
                   }
                   T* out = res + row * width;
                   const I* irow = ix + io;
                   if (index_last == 0 && dim != last) {  // one index value per row (index_select)
                     const int64_t v = irow[0];
                     if (IndexGuard::in_range(v, slots))
                       copy_run(out, x + so + v * self_dim, width, self_last);
                     else
                       bad = true;
                     continue;
                   }
                   const int64_t step = dim == last ? 0 : self_last;
                   bad |= !gather_row(out, x + so, self_dim, step, irow, index_last, width, slots);
                 }
                 if (bad) guard.flag();
               });
}

}  // namespace

void scatter_into(const char* op, const Tensor& out, int64_t dim, const Tensor& index,
                  const Tensor& src, Reduce reduce, bool include_self) {
  IndexGuard guard;
  visit_dtype(op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(index, [&](auto itag) {
      using I = typename decltype(itag)::type;
      visit_reduce<T>(reduce, [&](auto combine) {
        scatter_walk<T, I>(out, dim, index, src, combine, reduce, include_self, guard);
      });
    });
  });
  guard.check(op, index, dim, out.size(dim));
}

void scatter_rows_into(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       Reduce reduce, bool include_self, const Scalar& alpha, bool fresh) {
  const std::vector<int64_t> ix = index_values(index);
  visit_dtype("scatter", out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Rows<T> dense = rows_of<T>(src, dim);
    if constexpr (!std::is_same_v<T, bool>) {
      const T a = alpha.to<T>();
      if (reduce == Reduce::Sum && a != T(1)) {
        scatter_rows_typed<T>(out, dim, ix, dense, ScaledSumOp<T>{a}, reduce, include_self, fresh);
        return;
      }
    }
    visit_reduce<T>(reduce, [&](auto op) {
      scatter_rows_typed<T>(out, dim, ix, dense, op, reduce, include_self, fresh);
    });
  });
}

Tensor gather_from(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor result = empty(index.shape(), self.dtype(), self.device());
  if (result.numel() == 0) return result;
  IndexGuard guard;
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(index, [&](auto itag) {
      gather_typed<T, typename decltype(itag)::type>(result, self, dim, index, guard);
    });
  });
  guard.check(op, index, dim, self.size(dim));
  return result;
}

}  // namespace tg::cpu::indexing
