// CPU scatter_reduce_backward: the gradients of self and/or of src of scatter_reduce, from one
// set of per-slot statistics gathered in one walk of the index (walk.h), src's gradient written
// in the same walk. The rules are in slot_grads.h. Its arguments were checked before dispatch
// (ops/checks/scatter.cpp); index values out of range are flagged as the walk meets them.
#include <algorithm>
#include <type_traits>

#include <tapegrad/backends/cpu/one_value.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "data_checks.h"
#include "index_values.h"
#include "layout.h"
#include "select.h"
#include "simd.h"
#include "slot_grads.h"
#include "walk.h"

namespace tg::cpu {
namespace {
using namespace indexing;

// A tensor read element by element in row-major order: data[e * step], with step 1 (contiguous)
// or 0 (every stride 0: an expanded scalar such as the gradient of a sum).
template <typename T> struct Flat {
  const T* data = nullptr;
  int64_t step = 1;
  Tensor keep;
  T operator[](int64_t e) const { return data[e * step]; }
};

template <typename T> Flat<T> flat_of(const Tensor& t) {
  Flat<T> f;
  const bool one = holds_one_value(t);
  f.keep = one ? t : dense(t);
  f.step = one ? 0 : 1;
  f.data = f.keep.template data<T>();
  return f;
}

// ---- scatter_reduce: the walk form --------------------------------------------------------------

enum { INDEX, SRC, GRAD, RESULT, SELF, STATS, GRAD_SRC };  // the walk's tensors, in add order

// The entries of one task added to the statistics of the slots it owns: counts (kCount) and the
// reduce's own (kStats), in index order as the forward. Everything comes in by value, so the loop
// keeps it in registers. False if an index value was out of range.
template <Reduce kR, bool kCount, bool kStats, typename T, typename I>
bool stats_task(const Span& sp, const I* ix, const T* s, const T* r, Stats<T> st, int64_t slots) {
  return for_valid_entries<INDEX>(sp, ix, slots, [&](const Line& l, int64_t k, int64_t slot) {
    const int64_t b = l.at(STATS, slot);
    if constexpr (kCount) ++st.count[b];
    if constexpr (kStats) st.template add<kR>(b, s[l.at(SRC, k)], r[l.at(RESULT, slot)]);
  });
}

// src's gradient along one line (one inner position, g_src stepping by 1), in chunks: the slot
// values the entries read are gathered first (loads at random slots), then the gradients are
// computed in a loop the compiler vectorises (four divisions per instruction instead of one).
// Not for prod with zero statistics (the per-entry path below handles those). mean, amax/amin:
// when the line has at least as many entries as slots, each slot's share of its grad (grad / n,
// grad / ties: the composed formula's self-shaped `g`) is computed once, into `share`, and the
// entries read it (no division per entry).
template <Reduce kR, typename T, typename I>
bool src_grad_line(const Line& l, int64_t length, const I* ix, const T* s, const T* g, const T* r,
                   Stats<T> st, T* share, T* out, int64_t slots, int extra) {
  constexpr int64_t kChunk = 256;
  constexpr bool kShared = kR == Reduce::Mean || kR == Reduce::Amax || kR == Reduce::Amin;
  T gv[kChunk], rv[kChunk], sv[kChunk], dv[kChunk];  // grad, result, src; divisor, ties or share
  bool ok = true;
  T* o = out + l.off[GRAD_SRC];
  const bool shared = kShared && share && length >= slots;
  if (shared) {
    for (int64_t slot = 0; slot < slots; ++slot) {
      const int64_t b = l.at(STATS, slot);
      int64_t d = 1;
      if constexpr (kR == Reduce::Mean) d = std::max<int64_t>(1, st.count[b] + extra);
      if constexpr (kR == Reduce::Amax || kR == Reduce::Amin) d = st.ties[b];
      share[b] = static_cast<T>(g[l.at(GRAD, slot)] / static_cast<T>(d));
    }
  }
  for (int64_t k0 = 0; k0 < length; k0 += kChunk) {
    const int64_t m = std::min(kChunk, length - k0);
    for (int64_t i = 0; i < m; ++i) {
      int64_t slot = ix[l.at(INDEX, k0 + i)];
      if (!IndexGuard::in_range(slot, slots)) {  // reported by the caller; read slot 0 instead
        ok = false;
        slot = 0;
      }
      if (kR != Reduce::Mean) {  // mean's gradient reads neither
        rv[i] = r[l.at(RESULT, slot)];
        sv[i] = s[l.at(SRC, k0 + i)];
      }
      if (shared) {
        dv[i] = share[l.at(STATS, slot)];
        continue;
      }
      gv[i] = g[l.at(GRAD, slot)];
      if constexpr (kR == Reduce::Mean) dv[i] = static_cast<T>(st.count[l.at(STATS, slot)] + extra);
      if constexpr (kR == Reduce::Amax || kR == Reduce::Amin)
        dv[i] = static_cast<T>(st.ties[l.at(STATS, slot)]);
    }
    T* __restrict dst = o + k0;
    if (shared) {
      for (int64_t i = 0; i < m; ++i)
        dst[i] = kR == Reduce::Mean ? dv[i] : static_cast<T>(dv[i] * one_if<T>(sv[i] == rv[i]));
      continue;
    }
    for (int64_t i = 0; i < m; ++i) {
      if constexpr (kR == Reduce::Mean)
        dst[i] = static_cast<T>(gv[i] / dv[i]);
      else if constexpr (kR == Reduce::Amax || kR == Reduce::Amin)
        dst[i] = static_cast<T>(static_cast<T>(gv[i] / dv[i]) * one_if<T>(sv[i] == rv[i]));
      else if constexpr (kR == Reduce::Prod)
        dst[i] = static_cast<T>(gv[i] * static_cast<T>(rv[i] / sv[i]));
      else
        dst[i] = gv[i];
    }
  }
  return ok;
}

// src's gradient for the entries of one task (after stats_task on the same task).
template <Reduce kR, typename T, typename I>
bool src_grad_task(const Span& sp, const I* ix, const T* s, const T* g, const T* r, Stats<T> st,
                   T* share, T* out, int64_t slots, bool include_self) {
  const int extra = include_self ? 1 : 0;
  if (slots == 0) return sp.length == 0;  // every entry out of range
  if (sp.width == 1 && sp.first.step[GRAD_SRC] == 1 && (kR != Reduce::Prod || !st.zeros))
    return src_grad_line<kR>(sp.first, sp.length, ix, s, g, r, st, share, out, slots, extra);
  return for_valid_entries<INDEX>(sp, ix, slots, [&](const Line& l, int64_t k, int64_t slot) {
    const int64_t b = l.at(STATS, slot);
    const T n = kR == Reduce::Mean ? static_cast<T>(st.count[b] + extra) : T(1);
    out[l.at(GRAD_SRC, k)] =
        src_grad_at<kR>(st, b, g[l.at(GRAD, slot)], r[l.at(RESULT, slot)], s[l.at(SRC, k)], n);
  });
}

// One line of entries (sp.width == 1: dim is the last dim, or nothing follows it) as plain base
// pointers and steps. The line kernels take it by value: read through a reference, every field
// is reloaded after each store (a store through one of the pointers might change it).
template <typename T, typename I> struct LineView {
  const I* ix;
  const T *s, *g, *r, *x;
  int32_t *ties, *count;
  T *share, *out;
  int64_t is, ss, gs, rs, xs, ts, os;
  LineView(const Line& l, const I* ix0, const T* s0, const T* g0, const T* r0, const T* x0,
           Stats<T> st, T* share0, T* out0)
      : ix(ix0 + l.off[INDEX]), s(s0 + l.off[SRC]), g(g0 + l.off[GRAD]), r(r0 + l.off[RESULT]),
        x(x0 + l.off[SELF]), ties(st.ties ? st.ties + l.off[STATS] : nullptr),
        count(st.count ? st.count + l.off[STATS] : nullptr),
        share(share0 ? share0 + l.off[STATS] : nullptr),
        out(out0 ? out0 + l.off[GRAD_SRC] : nullptr), is(l.step[INDEX]), ss(l.step[SRC]),
        gs(l.step[GRAD]), rs(l.step[RESULT]), xs(l.step[SELF]), ts(l.step[STATS]),
        os(l.step[GRAD_SRC]) {}
  // every step but grad's and self's is 1 (contiguous index, src, result: dim last)
  bool unit() const { return is == 1 && ss == 1 && rs == 1 && ts == 1 && os == 1; }
};

// The steps of a line as locals; with kUnit (every step but grad's is 1: contiguous tensors, dim
// last) they are the constant 1, so the loops index plainly and keep everything in registers
// (grad's step is often 0, the expanded gradient of a sum, so it stays a variable).
#define TG_LINE_STEPS(v, kUnit)                                                                  \
  const int64_t is = (kUnit) ? 1 : (v).is, ss = (kUnit) ? 1 : (v).ss, rs = (kUnit) ? 1 : (v).rs, \
                ts = (kUnit) ? 1 : (v).ts, os = (kUnit) ? 1 : (v).os;                            \
  (void)ss, (void)rs

// amax/amin along one line in ONE walk: ties counted and src's gradient written as if every
// slot had a single winner (grad * [v == result], which is grad / ties * [v == result] when
// ties is 1, bit for bit). A slot with more ties, or a NaN result (no entry equals it: ties 0),
// is rare with real-valued data; the line is then walked again with the full formula.
template <Reduce kR, bool kCount, bool kUnit, typename T, typename I>
bool ties_and_src_grad_line(const LineView<T, I> v, int64_t length, int64_t slots) {
  TG_LINE_STEPS(v, kUnit);
  bool ok = true;
  for (int64_t k = 0; k < length; ++k) {
    const int64_t slot = v.ix[k * is];
    if (!IndexGuard::in_range(slot, slots)) {  // reported by the caller
      ok = false;
      v.out[k * os] = T(0);
      continue;
    }
    const bool won = v.s[k * ss] == v.r[slot * rs];
    v.ties[slot * ts] += won;
    if constexpr (kCount) ++v.count[slot * ts];
    v.out[k * os] = static_cast<T>(v.g[slot * v.gs] * one_if<T>(won));
  }
  bool single = true;
  for (int64_t slot = 0; slot < slots; ++slot) {
    const T rv = v.r[slot * rs];
    single &= (v.ties[slot * ts] <= 1) & (rv == rv);
  }
  if (single) return ok;
  for (int64_t k = 0; k < length; ++k) {
    const int64_t slot = v.ix[k * is];
    if (!IndexGuard::in_range(slot, slots)) continue;
    const T ties = static_cast<T>(v.ties[slot * ts]);
    const T won = one_if<T>(v.s[k * ss] == v.r[slot * rs]);
    v.out[k * os] = static_cast<T>(static_cast<T>(v.g[slot * v.gs] / ties) * won);
  }
  return ok;
}

// amax/amin along one contiguous line with self included (the default), vectorised: the result
// and grad at each entry's slot are gathered a chunk at a time, then src's gradient
// grad * [v == result] is written four (float) or two (double) entries per instruction while
// the winners are counted. Every slot has at least one winner (self or an entry, unless its
// result is NaN), so when the winners add up to the number of slots, every slot has exactly one
// and the gradient is exact (grad / 1). Otherwise, false: the caller walks the line with the
// tie-counting loop. `ok` turns false if an index value was out of range.
template <typename T, typename I>
bool single_winner_line(const LineView<T, I> v, int64_t length, int64_t slots, bool& ok) {
  constexpr int64_t kChunk = 256;
  alignas(16) T rv[kChunk], gv[kChunk];
  int64_t winners = 0;
  bool all_in = true;
  const bool one_grad = v.gs == 0;  // one grad for the whole line (the expanded gradient of a sum)
  for (int64_t k0 = 0; k0 < length; k0 += kChunk) {
    const int64_t m = std::min(kChunk, length - k0);
    all_in &= !any_out_of_range(v.ix + k0, m, slots);
    // an out-of-range value reads the last slot instead (the caller raises)
    const auto last = static_cast<uint64_t>(slots - 1);
    auto slot_at = [&](int64_t i) {
      return static_cast<int64_t>(
          std::min(static_cast<uint64_t>(static_cast<int64_t>(v.ix[k0 + i])), last));
    };
    if (one_grad) {
      for (int64_t i = 0; i < m; ++i) rv[i] = v.r[slot_at(i)];
    } else {
      const int64_t gs = v.gs;
      for (int64_t i = 0; i < m; ++i) {
        const int64_t at = slot_at(i);
        rv[i] = v.r[at];
        gv[i] = v.g[at * gs];
      }
    }
    winners += one_grad ? winners_of_row(v.s + k0, rv, v.g, 0, v.out + k0, m)
                        : winners_of_row(v.s + k0, rv, gv, 1, v.out + k0, m);
  }
  ok = ok && all_in;
  // self's wins, and NaN results (r != r), over the line's slots
  bool nan = false;
  for (int64_t slot = 0; slot < slots; ++slot) nan |= v.r[slot] != v.r[slot];
  if (v.xs == 1) {
    winners += winners_of_row<T>(v.x, v.r, nullptr, 0, nullptr, slots);
  } else {
    for (int64_t slot = 0; slot < slots; ++slot) winners += v.x[slot * v.xs] == v.r[slot];
  }
  if (nan || winners != slots) return false;
  std::fill_n(v.ties, slots, 1);  // for self's gradient
  return true;
}

// mean along one line: entries counted per slot, then each entry's gradient is its slot's share
// grad / n (n: the count, +1 with self), computed once per slot into `share` (indexed like the
// statistics) when the line has at least as many entries as slots, else per entry. The same
// arithmetic as src_grad_line; two tight loops instead of one walk through chunk buffers.
template <bool kUnit, typename T, typename I>
bool mean_src_grad_line(const LineView<T, I> v, int64_t length, int64_t slots, int extra) {
  TG_LINE_STEPS(v, kUnit);
  bool ok = true;
  constexpr int64_t kSmall = 1024;  // slots counted in four stack tables
  if (kUnit && slots <= kSmall) {
    // four tables, entry k counted in table k % 4: consecutive increments rarely touch the same
    // counter, so they do not wait on each other's stores
    alignas(64) int32_t table[4][kSmall];
    for (auto& t : table) std::fill_n(t, slots, 0);
    int64_t k = 0;
    for (; k + 4 <= length; k += 4) {
      const int64_t a = v.ix[k], b = v.ix[k + 1], c = v.ix[k + 2], d = v.ix[k + 3];
      // Summed rather than and-ed: branch-free, and clang rejects `&` between bools.
      const bool in = IndexGuard::in_range(a, slots) + IndexGuard::in_range(b, slots) +
                          IndexGuard::in_range(c, slots) + IndexGuard::in_range(d, slots) ==
                      4;
      if (!in) {  // reported by the caller; the others of the four are still counted
        ok = false;
        for (int64_t j = k; j < k + 4; ++j)
          if (IndexGuard::in_range(v.ix[j], slots)) ++table[0][v.ix[j]];
        continue;
      }
      ++table[0][a], ++table[1][b], ++table[2][c], ++table[3][d];
    }
    for (; k < length; ++k) {
      const int64_t slot = v.ix[k];
      if (IndexGuard::in_range(slot, slots))
        ++table[0][slot];
      else
        ok = false;
    }
    for (int64_t slot = 0; slot < slots; ++slot)
      v.count[slot] = table[0][slot] + table[1][slot] + table[2][slot] + table[3][slot];
  } else {
    for (int64_t k = 0; k < length; ++k) {
      const int64_t slot = v.ix[k * is];
      if (!IndexGuard::in_range(slot, slots)) {
        ok = false;
        continue;
      }
      ++v.count[slot * ts];
    }
  }
  auto divisor = [&](int64_t slot) {
    return static_cast<T>(std::max<int64_t>(1, v.count[slot * ts] + extra));
  };
  if (length < slots) {
    for (int64_t k = 0; k < length; ++k) {
      const int64_t slot = v.ix[k * is];
      v.out[k * os] = IndexGuard::in_range(slot, slots)
                          ? static_cast<T>(v.g[slot * v.gs] / divisor(slot))
                          : T(0);
    }
    return ok;
  }
  for (int64_t slot = 0; slot < slots; ++slot)
    v.share[slot * ts] = static_cast<T>(v.g[slot * v.gs] / divisor(slot));
  for (int64_t k = 0; k < length; ++k) {
    const int64_t slot = v.ix[k * is];
    v.out[k * os] = v.share[(IndexGuard::in_range(slot, slots) ? slot : 0) * ts];
  }
  return ok;
}

// Calls fn(std::bool_constant<a>, std::bool_constant<b>).
template <typename Fn> decltype(auto) visit_flags(bool a, bool b, Fn&& fn) {
  if (a && b) return fn(std::true_type{}, std::true_type{});
  if (a) return fn(std::true_type{}, std::false_type{});
  if (b) return fn(std::false_type{}, std::true_type{});
  return fn(std::false_type{}, std::false_type{});
}

// Self's gradient over [first, last) with self included, for mean and amax/amin, in loops the
// compiler vectorises (self_grad_at per element does not): grad / n, or grad / ties * [x == r],
// the same arithmetic. grad is read with step 1 or 0 (the expanded gradient of a sum). False
// (nothing written) for the other reduces.
template <Reduce kR, typename T>
bool self_grad_rows(const Stats<T>& st, const Flat<T>& g, const Flat<T>& r, const Flat<T>& x,
                    T* __restrict out, int64_t first, int64_t last) {
  constexpr bool kTies = kR == Reduce::Amax || kR == Reduce::Amin;
  if constexpr (kR == Reduce::Mean || kTies) {
    if (kTies && (r.step != 1 || x.step != 1)) return false;
    auto rows = [&](auto grad_at) {
      for (int64_t e = first; e < last; ++e) {
        if constexpr (kR == Reduce::Mean) {
          out[e] = static_cast<T>(grad_at(e) / static_cast<T>(st.count[e] + 1));
        } else {
          const T is = one_if<T>(x.data[e] == r.data[e]);
          out[e] = static_cast<T>(static_cast<T>(grad_at(e) / static_cast<T>(st.ties[e])) * is);
        }
      }
    };
    if (g.step == 0) {
      const T g0 = g.data[0];
      rows([g0](int64_t) { return g0; });
    } else {
      const T* __restrict gd = g.data;
      rows([gd](int64_t e) { return gd[e]; });
    }
    return true;
  } else {
    (void)st, (void)g, (void)r, (void)x, (void)out, (void)first, (void)last;
    return false;
  }
}

// {self's gradient, src's gradient}, each only when asked for (want_self, want_src); both come
// from one walk that gathers the per-slot statistics and writes src's gradient as it goes.
template <Reduce kR, typename T, typename I>
std::pair<Tensor, Tensor> scatter_reduce_grad(const Tensor& grad, const Tensor& self, int64_t dim,
                                              const Tensor& index, const Tensor& src,
                                              bool include_self, const Tensor& result,
                                              bool want_self, bool want_src, IndexGuard& guard) {
  constexpr bool kTies = kR == Reduce::Amax || kR == Reduce::Amin;
  const Flat<T> gf = flat_of<T>(grad), rf = flat_of<T>(result), xf = flat_of<T>(self);
  const int64_t numel = self.numel();
  // prod: zero statistics only where a result may hide a zero (usually nowhere)
  bool suspect = false;
  if constexpr (kR == Reduce::Prod)
    for (int64_t e = 0; e < numel && !suspect; ++e) suspect = may_hold_zero(rf[e]);
  const bool count = kR == Reduce::Mean || (want_self && !include_self);
  const bool stats = (kTies && (include_self || want_src)) || suspect;
  SlotStats<T> slot_stats(stats ? numel : 0, kR);
  if (count) slot_stats.count = tg::zeros({numel}, kInt32);
  const Stats<T> st = slot_stats.view();
  if (stats)
    parallel_for(0, numel, kElementwiseGrain, [&](int64_t first, int64_t last) {
      for (int64_t e = first; e < last; ++e) st.template start<kR>(e, xf[e], rf[e], include_self);
    });
  // src's gradient: entries outside index's extent (src larger than index) get 0
  Tensor g_src;
  if (want_src)
    g_src = index.shape() == src.shape() ? empty(src.shape(), src.dtype(), src.device())
                                         : zeros(src.shape(), src.dtype(), src.device());
  Walk w(index.shape(), dim);
  for (const Tensor* t : {&index, &src, &grad, &result, &self}) w.add(*t);
  w.add_dense(self.shape());
  if (want_src) w.add(g_src);
  const I* ix = index.data<I>();
  const T *s = src.data<T>(), *g = grad.data<T>(), *r = result.data<T>(), *x = self.data<T>();
  const int64_t slots = self.size(dim);
  T* o = want_src ? g_src.data<T>() : nullptr;
  // mean, amax/amin: room for each slot's share of its grad (see src_grad_line)
  const bool shares = want_src && (kR == Reduce::Mean || kTies);
  const Tensor share_buffer = shares ? empty({numel}, dtype_of<T>()) : Tensor();
  T* share = share_buffer.defined() ? share_buffer.data<T>() : nullptr;
  // mean, amax/amin with src's gradient asked for: lines of one inner position (dim last, the
  // common case) run the dedicated line loops above
  const bool line_kernels = want_src && slots > 0 && (kR == Reduce::Mean || (kTies && stats));
  visit_flags(count, stats, [&](auto kCount, auto kStats) {
    for_each_task(w, [&](const Span& sp) {
      bool ok = true;
      if (line_kernels && sp.width == 1) {  // one line: the dedicated loops
        const LineView<T, I> v(sp.first, ix, s, g, r, x, st, share, o);
        const bool unit = v.unit();
        if constexpr (kTies) {
          if (unit && include_self && single_winner_line(v, sp.length, slots, ok)) {
            if (!ok) guard.flag();
            return;
          }
          ok = unit ? ties_and_src_grad_line<kR, kCount, true>(v, sp.length, slots)
                    : ties_and_src_grad_line<kR, kCount, false>(v, sp.length, slots);
        } else if constexpr (kR == Reduce::Mean)
          ok = unit ? mean_src_grad_line<true>(v, sp.length, slots, include_self ? 1 : 0)
                    : mean_src_grad_line<false>(v, sp.length, slots, include_self ? 1 : 0);
        if (!ok) guard.flag();
        return;
      }
      if (kCount || kStats) ok = stats_task<kR, kCount, kStats>(sp, ix, s, r, st, slots);
      if (want_src)
        ok = src_grad_task<kR>(sp, ix, s, g, r, st, share, o, slots, include_self) && ok;
      if (!ok) guard.flag();
    });
  });
  if (!want_self) return {Tensor(), g_src};
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  T* so = out.data<T>();
  const int32_t* c = st.count;
  parallel_for(0, numel, kElementwiseGrain, [&](int64_t first, int64_t last) {
    if (include_self && self_grad_rows<kR>(st, gf, rf, xf, so, first, last)) return;
    for (int64_t e = first; e < last; ++e)
      so[e] = self_grad_at<kR>(st, e, gf[e], rf[e], xf[e], c ? c[e] : 0, include_self);
  });
  return {out, g_src};
}

}  // namespace

std::tuple<Tensor, Tensor> scatter_reduce_backward(const Tensor& grad_output, const Tensor& self,
                                                   int64_t dim, const Tensor& index,
                                                   const Tensor& src, const std::string& reduce,
                                                   bool include_self, const Tensor& result,
                                                   const std::string& input) {
  constexpr const char* op = "scatter_reduce_backward";
  const Tensor self1 = as_1d(self), index1 = as_1d(index), src1 = as_1d(src);
  const Tensor grad1 = as_1d(grad_output), result1 = as_1d(result);
  const int64_t d = wrap_dim(op, dim, self1.dim());
  const bool want_self = input != "src", want_src = input != "self";
  const Reduce r = parse_reduce(reduce);
  const bool plain = r == Reduce::Sum || r == Reduce::Mean;  // grad / 1 is grad
  if ((index1.numel() == 0 && plain) || (!want_src && r == Reduce::Sum && include_self)) {
    // self's gradient is grad (nothing scattered, or a plain sum), src's is 0. Not for amax, amin
    // and prod: with no entries their rule still gives NaN where self is NaN (and inf, for prod)
    check_index_range(op, index1, d, self1.size(d));
    return like_inputs({want_self ? fresh_copy(grad1) : Tensor(),
                        want_src ? zeros(src1.shape(), src.dtype()) : Tensor()},
                       self, src);
  }
  IndexGuard guard;
  const auto g = visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_index(index1, [&](auto itag) {
      using I = typename decltype(itag)::type;
      return visit_grad_reduce(r, [&](auto kind) {
        return scatter_reduce_grad<decltype(kind)::value, T, I>(grad1, self1, d, index1, src1,
                                                                include_self, result1, want_self,
                                                                want_src, guard);
      });
    });
  });
  guard.check(op, index1, d, self1.size(d));
  return like_inputs(g, self, src);
}

}  // namespace tg::cpu
