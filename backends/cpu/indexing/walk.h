#pragma once
// The walk form of the indexing engine (gather, scatter*, their fused backwards): an index of any
// shape and strides and a dim d. Entry p of the index sends src[p] to out's slot p with
// p[d] = index[p] (or reads it, for gather). Entries are walked as [outer, length, inner] over the
// index's shape (dims before d, d, dims after d). Entries with the same outer and inner position
// go to the same line of out, so a task, one outer position and a block of inner positions, owns
// its slots: tasks run in parallel without races, and within a task entries come in index order
// along d (the last duplicate wins).
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/tensor.h>

#include "data_checks.h"

namespace tg::cpu::indexing {

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
// member initialisers: with them GCC keeps the copy a kernel loop makes in memory, not in
// registers; for_each_task zeroes the lines it hands out.
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
template <typename Fn> void for_each_task(const Walk& w, Fn&& task) {
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
template <typename Fn> inline void for_entries(const Span& s, Fn&& fn) {
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

}  // namespace tg::cpu::indexing
