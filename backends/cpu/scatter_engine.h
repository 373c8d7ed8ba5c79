#pragma once
// The CPU engine behind the index/scatter family: scatter.cpp (gather, scatter*), index.cpp
// (index_select, index_add, index_copy, index_reduce) and scatter_backward.cpp (their fused
// backward kernels). Two layouts:
//
// - Walk form (gather/scatter ops): an index of any shape and strides and a dim d. Entry p of the
//   index sends src[p] to out's slot p with p[d] = index[p] (or reads it, for gather). Entries are
//   walked as [outer, length, inner] over the index's shape (dims before d, d, dims after d).
//   Entries with the same outer and inner position go to the same line of out, so a task, one outer
//   position and a block of inner positions, owns its slots: tasks run in parallel without races,
//   and within a task entries come in index order along d (the last duplicate wins).
// - Row form (index ops): contiguous tensors seen as [outer, slots, inner] and a 1-d index of n
//   entries; entry k combines a whole row of `inner` values, in loops the compiler vectorises.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <tapegrad/core/parallel.h>
#include <tapegrad/core/scalar.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu::scatter_engine {

enum class Reduce { Assign, Sum, Prod, Mean, Amax, Amin };

// "sum" | "prod" | "mean" | "amax" | "amin" (the spec's `allowed` key has already checked it).
Reduce parse_reduce(const std::string& name);

// IndexError unless every value of index lies in [0, size); names the first bad value.
void check_index_range(const char* op, const Tensor& index, int64_t dim, int64_t size);

// The checks of the index ops (index.cpp): dim in range, index 0-d or 1-d with values in range;
// returns the wrapped dim. self is the 0-d-as-[1] form.
int64_t check_index_op(const char* op, const Tensor& self, int64_t dim, const Tensor& index);
// source has self's dtype, and self's shape with index.numel() at dim d.
void check_source(const char* op, const Tensor& self, int64_t d, const Tensor& index,
                  const Tensor& source);
// The checks of gather/scatter* (scatter.cpp): index and src have self's rank, src has self's
// dtype, index fits in src (every dim) and in self (every dim but `dim`). Returns the wrapped dim.
// Tensors are the 0-d-as-[1] forms; src may be null (gather). The index values are checked by the
// walk-form kernels as they go (IndexGuard), which saves a pass over a large index.
int64_t check_scatter(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor* src);

// Out-of-range index values met by a walk-form kernel: the kernel skips them (nothing out of
// bounds is read or written), and check() afterwards raises check_index_range's IndexError. The
// kernels write only fresh results, so a rejected call still leaves every input unchanged.
class IndexGuard {
 public:
  static bool in_range(int64_t value, int64_t size) {
    return static_cast<uint64_t>(value) < static_cast<uint64_t>(size);
  }
  // A task met a bad value. Tasks keep a local flag in their loops and call this once at the
  // end: an atomic store inside a hot loop would stop the compiler hoisting loads out of it.
  void flag() { bad_.store(true, std::memory_order_relaxed); }
  void check(const char* op, const Tensor& index, int64_t dim, int64_t size) const {
    if (bad_.load()) check_index_range(op, index, dim, size);
  }

 private:
  std::atomic<bool> bad_{false};
};

// Whether any of n contiguous index values lies outside [0, slots) (slots > 0), without a compare
// per value (SSE2 has no 64-bit one): v is out of range iff v < 0 or slots - 1 - v < 0, the sign
// bit of v | (slots - 1 - v), ORed over the values in a loop the compiler vectorises.
template <typename I>
bool any_out_of_range(const I* ix, int64_t n, int64_t slots) {
  const auto last = static_cast<uint64_t>(slots - 1);
  uint64_t signs = 0;
  for (int64_t j = 0; j < n; ++j) {
    const auto v = static_cast<uint64_t>(static_cast<int64_t>(ix[j]));
    signs |= v | (last - v);
  }
  return (signs >> 63) != 0;
}

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

// index (0-d or 1-d, n entries) viewed with `shape` (n at dim): entry k at position k of dim.
Tensor expand_index(const Tensor& index, const Shape& shape, int64_t dim);

// A fresh contiguous copy of t (the result the scatter ops write into), row by row: an expanded
// or transposed t copies at memory speed.
Tensor fresh_copy(const Tensor& t);
// t itself when contiguous, else fresh_copy(t).
Tensor dense(const Tensor& t);

// A 0-d tensor seen as [1] (so dim 0 / -1 work on 0-d tensors, as in PyTorch); others unchanged.
Tensor as_1d(const Tensor& t);

// Calls fn(TypeTag<I>{}) with I the index's C++ type (int32 or int64, as the specs allow).
template <typename Fn>
decltype(auto) visit_index(const Tensor& index, Fn&& fn) {
  if (index.dtype() == kInt32) return fn(TypeTag<int32_t>{});
  return fn(TypeTag<int64_t>{});
}

// ---- the walk form ------------------------------------------------------------------------------

// The entries of a walk-form op and the strides of the tensors it touches. "Slot" tensors (out,
// self, result, grad, per-slot buffers) are addressed at an index value along dim; "entry" tensors
// (index, src, src's gradient) at the entry's own position.
class Walk {
 public:
  static constexpr int kMaxTensors = 8;
  // shape: the index's.
  Walk(const Shape& shape, int64_t dim);
  // Registers a tensor (its strides over the index's dims); returns its number.
  int add(const Tensor& t);
  // Registers a contiguous buffer of `shape` (a per-slot statistics array).
  int add_dense(const Shape& shape);

  const Shape& shape() const { return shape_; }
  int64_t dim() const { return dim_; }
  int64_t outer() const { return outer_; }
  int64_t length() const { return length_; }
  int64_t inner() const { return inner_; }
  int64_t along(int t) const { return along_[t]; }
  int count() const { return count_; }  // tensors registered
  // Offset of tensor t at outer position o (dims before dim) / inner position i (dims after).
  int64_t outer_offset(int t, int64_t o) const;
  int64_t inner_offset(int t, int64_t i) const;
  // Whether the dims after dim collapse into one stride per tensor (inner_step), for all tensors.
  bool inner_collapses() const { return collapses_; }
  int64_t inner_step(int t) const { return inner_step_[t]; }

 private:
  int add_strides(const Shape& strides);
  Shape shape_;
  int64_t dim_, outer_ = 1, length_, inner_ = 1;
  std::vector<int64_t> long_inner_;  // the dims after dim with more than one position
  bool collapses_ = true;
  int count_ = 0;
  Shape strides_[kMaxTensors];
  int64_t along_[kMaxTensors] = {}, inner_step_[kMaxTensors] = {};
};

// One line of entries (one inner position of a task): entry k of tensor t sits at
// at(t, k) = off[t] + k * step[t]; for a slot tensor, k is the slot (an index value). No default
// member initialisers: with them GCC keeps the copy a kernel loop makes in memory, not registers
// (mean's scatter ran at half speed); for_each_task zeroes the lines it hands out.
struct Line {
  int64_t off[Walk::kMaxTensors];
  int64_t step[Walk::kMaxTensors];
  int64_t at(int t, int64_t k) const { return off[t] + k * step[t]; }
};

// The entries of one task: an outer position and `width` consecutive inner positions. Inner
// position r of tensor t sits at first.off[t] + r * inner_step[t] when the dims after dim collapse
// into one stride for every tensor (2-d tensors, contiguous ones); otherwise at lines[r].
// Kernels number their tensors with constants (enum { OUT, INDEX, ... }), so after inlining a
// line's offsets and steps live in registers.
struct Span {
  int64_t length = 0;  // entries per line (the index's size at dim)
  int64_t width = 0;   // inner positions
  bool collapsed = false;
  Line first;                                  // the line of inner position 0
  int64_t inner_step[Walk::kMaxTensors] = {};  // collapsed: offset step per inner position
  std::vector<Line> lines;                     // not collapsed: one line per inner position
};

// Runs task(span) over every (outer position, block of inner positions), in parallel when large.
// A block is a whole row of inner positions (the index and src are then read in order), split
// evenly between the threads when there are fewer outer positions than threads.
template <typename Fn>
void for_each_task(const Walk& w, Fn&& task) {
  if (w.shape().numel() == 0) return;
  const int64_t threads = get_num_threads();
  int64_t block = w.inner();
  if (w.outer() < threads && w.inner() >= 64 * threads) block = (w.inner() + threads - 1) / threads;
  const int64_t blocks = (w.inner() + block - 1) / block;
  const int64_t per_task = w.length() * block;
  const bool collapsed = w.inner_collapses();
  parallel_for(0, w.outer() * blocks, std::max<int64_t>(1, kElementwiseGrain / per_task),
               [&](int64_t first, int64_t last) {
                 Span s;
                 s.first = Line{};  // zeroed: the offsets of unused tensors stay 0
                 s.length = w.length();
                 s.collapsed = collapsed;
                 for (int64_t t = first; t < last; ++t) {
                   const int64_t o = t / blocks, i0 = (t % blocks) * block;
                   s.width = std::min(block, w.inner() - i0);
                   if (!collapsed) s.lines.assign(static_cast<size_t>(s.width), Line{});
                   for (int x = 0; x < w.count(); ++x) {
                     const int64_t base = w.outer_offset(x, o);
                     s.first.off[x] = base + w.inner_offset(x, i0);
                     s.first.step[x] = w.along(x);
                     s.inner_step[x] = w.inner_step(x);
                     for (int64_t r = 0; !collapsed && r < s.width; ++r) {
                       s.lines[static_cast<size_t>(r)].off[x] = base + w.inner_offset(x, i0 + r);
                       s.lines[static_cast<size_t>(r)].step[x] = w.along(x);
                     }
                   }
                   task(static_cast<const Span&>(s));
                 }
               });
}

// Calls fn(line, k) for every entry of a span, in index order along dim within each line (lines
// never share a slot).
template <typename Fn>
inline void for_entries(const Span& s, Fn&& fn) {
  const Line first = s.first;  // a local copy: its fields stay in registers
  if (s.width == 1) {
    for (int64_t k = 0; k < s.length; ++k) fn(static_cast<const Line&>(first), k);
  } else if (s.collapsed) {
    int64_t step[Walk::kMaxTensors];
    for (int t = 0; t < Walk::kMaxTensors; ++t) step[t] = s.inner_step[t];
    for (int64_t k = 0; k < s.length; ++k) {
      Line line = first;
      for (int64_t r = 0; r < s.width; ++r) {
        fn(static_cast<const Line&>(line), k);
        for (int t = 0; t < Walk::kMaxTensors; ++t) line.off[t] += step[t];
      }
    }
  } else {
    for (int64_t k = 0; k < s.length; ++k)
      for (const Line& line : s.lines) fn(line, k);
  }
}

// for_entries over the entries whose index value (walk tensor kIndex) lies in [0, slots):
// fn(line, k, slot). Others are skipped; returns false if there were any (the caller raises once
// every thread is done).
template <int kIndex, typename I, typename Fn>
inline bool for_valid_entries(const Span& s, const I* ix, int64_t slots, Fn&& fn) {
  bool ok = true;
  for_entries(s, [&](const Line& l, int64_t k) {
    const int64_t slot = ix[l.at(kIndex, k)];
    if (!IndexGuard::in_range(slot, slots)) {
      ok = false;
      return;
    }
    fn(l, k, slot);
  });
  return ok;
}

// ---- the row form -------------------------------------------------------------------------------

// A tensor seen as [outer, mid, inner] around dim: rows of `inner` contiguous values, row (o, m)
// at data + o * outer_stride + m * mid_stride. A contiguous tensor is read in place; a tensor with
// every stride 0 (an expanded scalar, e.g. the gradient of a sum) as one row repeated; anything
// else is made contiguous first.
template <typename T>
struct Rows {
  const T* data = nullptr;
  int64_t outer_stride = 0, mid_stride = 0;
  Tensor keep;  // keeps a copy or the repeated row alive
  const T* row(int64_t o, int64_t m) const { return data + o * outer_stride + m * mid_stride; }
};

// [outer, mid, inner] sizes of `shape` around dim.
struct Dims3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
Dims3 dims3(const Shape& shape, int64_t dim);

template <typename T>
Rows<T> rows_of(const Tensor& t, int64_t dim) {
  const Dims3 d = dims3(t.shape(), dim);
  Rows<T> rows;
  bool all_zero = true;
  for (int64_t s : t.strides()) all_zero = all_zero && s == 0;
  if (all_zero && t.numel() > 0) {
    rows.keep = empty({d.inner}, t.dtype(), t.device());
    std::fill_n(rows.keep.template data<T>(), d.inner, *t.template data<T>());
  } else {
    rows.keep = dense(t);
    rows.outer_stride = d.mid * d.inner;
    rows.mid_stride = d.inner;
  }
  rows.data = rows.keep.template data<T>();
  return rows;
}

// Runs task(o, j0, j1) over outer positions and column blocks [j0, j1) of [0, inner), in parallel:
// tasks own disjoint columns, so they may write any row of those columns. `work` is the number of
// values one task touches per column.
template <typename Fn>
void for_each_column_block(int64_t outer, int64_t inner, int64_t work, Fn&& task) {
  if (outer == 0 || inner == 0) return;
  const int64_t threads = get_num_threads();
  int64_t block = inner;
  if (outer < threads && inner * work > kElementwiseGrain) {  // split columns to feed the threads
    block = (inner + threads - 1) / threads;
    block = std::min(inner, std::max<int64_t>(64, (block + 15) / 16 * 16));
  }
  const int64_t blocks = (inner + block - 1) / block;
  parallel_for(0, outer * blocks, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(block * work, 1)),
               [&](int64_t first, int64_t last) {
                 for (int64_t t = first; t < last; ++t) {
                   const int64_t j0 = (t % blocks) * block;
                   task(t / blocks, j0, std::min(inner, j0 + block));
                 }
               });
}

// Starts fetching the first lines (up to 512 bytes) of row[0, n): loops over rows picked at random
// call it a few rows ahead, so the row is on its way when they reach it. kWrite: 1 for a row the
// loop will write.
template <int kWrite, typename T>
inline void prefetch_row(const T* row, int64_t n) {
  constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(T));
  for (int64_t j = 0; j < std::min<int64_t>(n, 8 * kLine); j += kLine)
    __builtin_prefetch(row + j, kWrite);
}

// The index values of a 0-d or 1-d index as int64 (index ops: a few thousand entries at most).
std::vector<int64_t> index_values(const Tensor& index);

// The entries of a 1-d index grouped by slot, in index order within each slot (a stable counting
// sort): slot b's entries are order[begin[b]] to order[begin[b + 1] - 1].
struct EntriesBySlot {
  std::vector<int64_t> begin, order;
  int64_t count(int64_t slot) const {
    return begin[static_cast<size_t>(slot) + 1] - begin[static_cast<size_t>(slot)];
  }
};
EntriesBySlot group_by_slot(const std::vector<int64_t>& ix, int64_t slots);

// ---- the reductions -----------------------------------------------------------------------------

// The value a slot starts from when include_self is false.
template <typename T>
T identity(Reduce reduce) {
  switch (reduce) {
    case Reduce::Prod:
      return T(1);
    case Reduce::Amax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case Reduce::Amin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    default:
      return T(0);
  }
}

// One slot combined with one value. NaN wins amax/amin, as in PyTorch. amax/amin take the larger
// value with a select (maxss), not `v > s || v != v`: that compiles to a branch on a random
// comparison, mispredicted half the time.
template <typename T>
struct AssignOp {
  T operator()(T, T v) const { return v; }
};
template <typename T>
struct SumOp {
  T operator()(T s, T v) const { return static_cast<T>(s + v); }
};
template <typename T>
struct ScaledSumOp {
  T alpha;
  T operator()(T s, T v) const { return static_cast<T>(s + static_cast<T>(v * alpha)); }
};
template <typename T>
struct ProdOp {
  T operator()(T s, T v) const { return static_cast<T>(s * v); }
};
template <typename T>
struct AmaxOp {
  T operator()(T s, T v) const {
    // A NaN value wins: a branch that is (almost) never taken, kept a branch (GCC otherwise
    // turns it into a select through integer registers, which lengthens each slot's
    // read-modify-write chain: scatter_reduce amax forward 1.32 -> 0.95 ms). Then maxss, which
    // keeps a NaN slot.
    if (__builtin_expect(v != v, 0)) return v;
    return v > s ? v : s;
  }
};
template <typename T>
struct AminOp {
  T operator()(T s, T v) const {
    if (__builtin_expect(v != v, 0)) return v;
    return v < s ? v : s;
  }
};

// Calls fn(op) with the combine functor of `reduce` (Mean combines as Sum). bool has Assign only.
template <typename T, typename Fn>
void visit_reduce(Reduce reduce, Fn&& fn) {
  if constexpr (std::is_same_v<T, bool>) {
    fn(AssignOp<T>{});
  } else {
    switch (reduce) {
      case Reduce::Assign:
        return fn(AssignOp<T>{});
      case Reduce::Sum:
      case Reduce::Mean:
        return fn(SumOp<T>{});
      case Reduce::Prod:
        return fn(ProdOp<T>{});
      case Reduce::Amax:
        return fn(AmaxOp<T>{});
      case Reduce::Amin:
        return fn(AminOp<T>{});
    }
  }
}

// c ? a : b without a branch (GCC compiles a float `?:` into a jump, which a random condition
// mispredicts half the time).
template <typename T>
inline T pick(bool c, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const U mask = U(0) - U(c);
    return std::bit_cast<T>(
        static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
  } else {
    return c ? a : b;
  }
}

// Mean of a slot holding `total` over `count` contributions; integral values round down.
template <typename T>
T divide(T total, int64_t count) {
  if constexpr (std::is_same_v<T, bool>) {  // never called: bool runs Assign only
    return total;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(total / static_cast<T>(count));
  } else {
    const T c = static_cast<T>(count);
    T q = static_cast<T>(total / c);
    if ((total % c != 0) && ((total < 0) != (c < 0))) --q;
    return q;
  }
}

}  // namespace tg::cpu::scatter_engine
