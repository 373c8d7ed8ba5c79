// CPU kernels of the fused backward ops of the index/scatter family:
//   gather_backward, index_select_backward: grad added into a fresh zero tensor of self's shape;
//   scatter_reduce_backward (walk form), index_reduce_backward (row form): the gradients of self
//   and/or of src/source, from one set of per-slot statistics (src's written in the same walk).
// The rules are those of the composed formulas in autograd/formulas/scatter.cpp (used for double
// backward), with the same arithmetic, so both paths give the same values:
//   sum   self: grad                      src: grad at the slot
//   mean  self: grad / n                  src: grad / n at the slot   (n: count, +1 with self)
//   amax  self: grad / ties * [self ties]  src: grad / ties * [src == result]   (amin alike)
//   prod  x != 0: grad * result / x;  x == 0: grad * (p if the slot has 1 zero, (s - x) * p if
//         2, else 0), with p the product of the slot's nonzero contributors, s the sum of zeros.
// With include_self false, self's gradient is 0 at every slot that received an entry, and self
// does not count among the ties. Zero statistics are gathered only at slots whose result is 0 or
// NaN (the only slots that can hold a zero), inside the kernel: nothing is decided on the host.
#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include <tapegrad/core/copy.h>
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
  f.keep = all_zero ? t : dense(t);
  f.step = all_zero ? 0 : 1;
  f.data = f.keep.template data<T>();
  return f;
}

// 1 if c else 0, without a branch (GCC turns `c ? T(1) : T(0)` into a jump even when the
// value is then multiplied; a mispredicted jump per entry costs more than the whole entry).
template <typename T>
T one_if(bool c) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  return std::bit_cast<T>(static_cast<U>(std::bit_cast<U>(T(1)) & (U(0) - U(c))));
}

// A slot whose prod result may hide a zero contributor (0 * finite = 0; 0 * inf = NaN).
template <typename T>
bool may_hold_zero(T result) {
  return result == T(0) || result != result;
}

// The prod gradient factor of a zero contributor x of a slot with `zeros` zeros, nonzero product p
// and zero sum s (prod_contributor in autograd/formulas/scatter.cpp).
template <typename T>
T prod_at_zero(int32_t zeros, T p, T s, T x) {
  return zeros == 1 ? p : (zeros == 2 ? static_cast<T>((s - x) * p) : T(0));
}

// Statistics of the slots, in buffers of self's shape (dense): entries per slot, and per reduce
// the ties (amax/amin) or the zero count, nonzero product and zero sum (prod). Every slot starts
// from self's share (start(), before any entry), then each entry adds its own (add()). SlotStats
// owns the buffers; loops get a Stats<T> (raw pointers, by value, so they stay in registers).
template <typename T>
struct Stats {
  // counts are int32 (exact, and an int `+= (a == b)` compiles without a branch)
  int32_t *count = nullptr, *ties = nullptr, *zeros = nullptr;
  T *prod = nullptr, *zsum = nullptr;

  // Slot b before any entry: self's share (self value x, result r).
  template <Reduce kR>
  void start(int64_t b, T x, T r, bool include_self) const {
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
  template <Reduce kR>
  void add(int64_t b, T v, T r) const {
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
template <typename T>
struct SlotStats {
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
template <Reduce kR, typename T>
T src_grad_at(const Stats<T>& st, int64_t b, T g, T r, T v, T n) {
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
template <typename T, typename I>
struct LineView {
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
#define TG_LINE_STEPS(v, kUnit)                                                 \
  const int64_t is = (kUnit) ? 1 : (v).is, ss = (kUnit) ? 1 : (v).ss,           \
                rs = (kUnit) ? 1 : (v).rs, ts = (kUnit) ? 1 : (v).ts,           \
                os = (kUnit) ? 1 : (v).os;                                      \
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

// 16-byte vectors of T (GCC's vector extension: 4 floats or 2 doubles), the mask type their
// comparisons give (all bits set where true), and T(1)'s bits in each lane.
template <typename T>
struct Lanes {
  using U = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef T Vec __attribute__((vector_size(16)));
  typedef U Mask __attribute__((vector_size(16)));
  static constexpr int64_t kWidth = 16 / sizeof(T);
  static Vec load(const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, Vec v) { std::memcpy(p, &v, sizeof v); }
  static Vec broadcast(T a) { return Vec{} + a; }
  static Vec ones_where(Mask m) {  // 1 where m is set, else 0
    return reinterpret_cast<Vec>(m & (Mask{} + std::bit_cast<U>(T(1))));
  }
};

// Winners of a run, w[j] = [v[j] == r[j]], counted; with dst, dst[j] = g[j * g_step] * w[j]
// (grad / ties with ties 1), g_step 1, or 0 for one grad for the whole run. Vectorised (Lanes),
// the same arithmetic as the per-element formulas.
template <typename T>
int64_t winners_of_row(const T* __restrict v, const T* __restrict r, const T* __restrict g,
                       int64_t g_step, T* __restrict dst, int64_t n) {
  using L = Lanes<T>;
  typename L::Mask wins{};
  // n == 0 (rows of a 0-size inner dim): g may point at an empty buffer, so g[0] is not read.
  const typename L::Vec g0 = dst && n > 0 ? L::broadcast(g[0]) : typename L::Vec{};
  int64_t j = 0, winners = 0;
  for (; j + L::kWidth <= n; j += L::kWidth) {
    const typename L::Mask won = L::load(v + j) == L::load(r + j);
    wins -= won;  // -(-1) per winner
    if (dst) L::store(dst + j, (g_step == 0 ? g0 : L::load(g + j)) * L::ones_where(won));
  }
  for (int64_t lane = 0; lane < L::kWidth; ++lane) winners += wins[lane];
  for (; j < n; ++j) {
    const bool won = v[j] == r[j];
    winners += won;
    if (dst) dst[j] = static_cast<T>(g[j * g_step] * one_if<T>(won));
  }
  return winners;
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
      const bool in = IndexGuard::in_range(a, slots) & IndexGuard::in_range(b, slots) &
                      IndexGuard::in_range(c, slots) & IndexGuard::in_range(d, slots);
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
template <typename Fn>
decltype(auto) visit_flags(bool a, bool b, Fn&& fn) {
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
        }
        else if constexpr (kR == Reduce::Mean)
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

// ---- index_reduce: the row form -----------------------------------------------------------------

// index_reduce amax/amin with self included, in one pass over the source: every slot has at least
// one winner (self or a source entry equal to the result) unless its result is NaN, so when the
// winners of a row of slots add up to its length every slot in it has exactly one, and the
// gradients there are grad * [winner] (grad / ties with ties 1, bit for bit). The rows of slots
// where they do not (ties, NaN) are then redone with tie counts. Writes source's gradient into
// source_out and self's into self_out (each if defined). False, with nothing usable written, when
// more than an eighth of the rows need redoing (data full of ties): the caller's general path is
// faster then.
template <typename T>
bool index_reduce_single_winner(const Rows<T>& g, const T* r, const T* x, const T* s,
                                const std::vector<int64_t>& ix, const Dims3& d,
                                const Tensor& source_out, const Tensor& self_out) {
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
      winners[static_cast<size_t>(row)].fetch_add(
          winners_of_row(s + entry * inner, r + row * inner, g.row(outer, slot), 1,
                         so ? so + entry * inner : nullptr, inner),
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
                                            bool include_self, const Tensor& result,
                                            bool want_self, bool want_source) {
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
  if (shared)
    parallel_for(0, d.outer * slots, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t first, int64_t last) {
                   for (int64_t row = first; row < last; ++row) {
                     const T* __restrict gr = g.row(row / slots, row % slots);
                     T* __restrict sh = share + row * inner;
                     if constexpr (kR == Reduce::Mean) {
                       const int64_t c = count[static_cast<size_t>(row % slots)] + extra;
                       const T n = static_cast<T>(c == 0 ? 1 : c);
                       for (int64_t j = 0; j < inner; ++j) sh[j] = static_cast<T>(gr[j] / n);
                     } else {
                       const int32_t* __restrict t = st.ties + row * inner;
                       for (int64_t j = 0; j < inner; ++j)
                         sh[j] = static_cast<T>(gr[j] / static_cast<T>(t[j]));
                     }
                   }
                 });
  Tensor self_out, source_out;
  if (want_self) {
    self_out = empty(self.shape(), self.dtype(), self.device());
    T* o = self_out.data<T>();
    parallel_for(0, d.outer * slots, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t first, int64_t last) {
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
                         dst[j] = kR == Reduce::Mean
                                      ? sh[j]
                                      : static_cast<T>(sh[j] * one_if<T>(xr[j] == rr[j]));
                     } else if (kTies) {  // no entries, self alone: ties = [self == result]
                       for (int64_t j = 0; j < inner; ++j) {
                         const T is = one_if<T>(xr[j] == rr[j]);
                         dst[j] = static_cast<T>(static_cast<T>(gr[j] / is) * is);
                       }
                     } else if (kR == Reduce::Prod && include_self &&
                                !suspect[static_cast<size_t>(row)]) {
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
  parallel_for(0, d.outer * n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t first, int64_t last) {
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
                   } else if (kR == Reduce::Prod &&
                              !suspect[static_cast<size_t>(outer * slots + slot)]) {
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

// like_input for both gradients; an undefined one (not asked for) stays undefined.
std::tuple<Tensor, Tensor> like_inputs(const std::pair<Tensor, Tensor>& g, const Tensor& self,
                                       const Tensor& src) {
  return {g.first.defined() ? like_input(g.first, self) : g.first,
          g.second.defined() ? like_input(g.second, src) : g.second};
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
  const int64_t d = check_scatter(op, self1, dim, index1, &src1);
  check_grad_like(op, "grad_output", grad1, self1);
  check_grad_like(op, "result", result1, self1);
  const bool want_self = input != "src", want_src = input != "self";
  const Reduce r = parse_reduce(reduce);
  if (index1.numel() == 0 || (!want_src && r == Reduce::Sum && include_self)) {
    // self's gradient is grad (nothing scattered, or a plain sum), src's is 0
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
        return scatter_reduce_grad<decltype(kind)::value, T, I>(
            grad1, self1, d, index1, src1, include_self, result1, want_self, want_src, guard);
      });
    });
  });
  guard.check(op, index1, d, self1.size(d));
  return like_inputs(g, self, src);
}

std::tuple<Tensor, Tensor> index_reduce_backward(const Tensor& grad_output, const Tensor& self,
                                                 int64_t dim, const Tensor& index,
                                                 const Tensor& source, const std::string& reduce,
                                                 bool include_self, const Tensor& result,
                                                 const std::string& input) {
  constexpr const char* op = "index_reduce_backward";
  const Tensor self1 = as_1d(self), source1 = as_1d(source);
  const Tensor grad1 = as_1d(grad_output), result1 = as_1d(result);
  const int64_t d = check_index_op(op, self1, dim, index);
  check_source(op, self1, d, index, source1);
  check_grad_like(op, "grad_output", grad1, self1);
  check_grad_like(op, "result", result1, self1);
  const bool want_self = input != "source", want_source = input != "self";
  const std::vector<int64_t> ix = index_values(index);
  const auto g = visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return visit_grad_reduce(parse_reduce(reduce), [&](auto kind) {
      return index_reduce_grad<decltype(kind)::value, T>(grad1, self1, d, ix, source1,
                                                         include_self, result1, want_self,
                                                         want_source);
    });
  });
  return like_inputs(g, self, source);
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
  const Tensor out = empty(shape.empty() ? Shape{1} : shape, grad_output.dtype(),
                           grad_output.device());
  const int64_t d = check_index_op(op, out, dim, index);
  const Tensor grad1 = as_1d(grad_output);
  Shape expected = out.shape();
  expected[d] = index.numel();
  TG_CHECK(grad1.shape() == expected, ValueError, op, "grad_output has shape ", grad_output.shape(),
           ", expected ", expected, " (self's shape with index's ", index.numel(),
           " entries at dim ", d, ")");
  if (index.numel() > 0)  // zeros where no entry goes, 0 + the sum of the entries elsewhere
    scatter_rows_into(out, d, index, grad1, Reduce::Sum, false, 1, /*fresh=*/true);
  else
    fill_data(out, 0);
  return shape.empty() ? out.reshape({}) : out;
}

}  // namespace tg::cpu
