// CPU mask ops: masked_fill, masked_select and masked_scatter.
//
// masked_fill is elementwise (the engine in loops.h). masked_select and masked_scatter pair the
// k-th true of the mask (row-major over the broadcast shape) with the k-th element of their
// output / source. They run in two parallel passes over fixed chunks of the broadcast shape:
// count the trues of each chunk (so each chunk knows its first k, and the total is checked
// against the source before anything is written: data_checks.h), then move the data, one pass
// over it. The other arguments were checked before dispatch (ops/checks/masked.cpp).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/one_value.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>

#include "data_checks.h"
#include "layout.h"

namespace tg::cpu {
namespace {

// The mask broadcast to `shape`, read through a contiguous bool array: element i of the
// broadcast shape reads data[i % period]. A contiguous mask whose shape is a suffix of `shape`
// (after leading 1s), such as a [1024] mask over [4096, 1024], is read in place; any other mask
// is materialised at the full shape. A short period is tiled out, so runs stay long.
struct MaskView {
  const bool* data = nullptr;
  int64_t period = 1;
  Tensor storage;  // keeps a materialised or tiled mask alive
};

bool is_suffix_broadcast(const Tensor& mask, const Shape& shape) {
  if (!mask.is_contiguous()) return false;
  size_t first = 0;  // skip the mask's leading 1s
  while (first < mask.shape().size() && mask.shape()[first] == 1) ++first;
  const size_t kept = mask.shape().size() - first;
  if (kept > shape.size()) return false;
  for (size_t d = 0; d < kept; ++d)
    if (mask.shape()[first + d] != shape[shape.size() - kept + d]) return false;
  return true;
}

MaskView view_mask(const Tensor& mask, const Shape& shape) {
  MaskView m;
  const int64_t n = shape.numel();
  if (is_suffix_broadcast(mask, shape)) {
    m.storage = mask;
    m.period = std::max<int64_t>(mask.numel(), 1);
  } else {
    m.storage = empty(shape, kBool, mask.device());
    copy_data(m.storage, mask);
    m.period = std::max<int64_t>(n, 1);
  }
  constexpr int64_t kMinRun = 4096;  // tile short periods (a 0-d mask has period 1)
  if (m.period < kMinRun && m.period < n) {
    const int64_t copies = (kMinRun + m.period - 1) / m.period;
    Tensor tiled = empty({copies * m.period}, kBool, mask.device());
    for (int64_t c = 0; c < copies; ++c)
      std::memcpy(tiled.data<bool>() + c * m.period, m.storage.data<bool>(), m.period);
    m.storage = tiled;
    m.period *= copies;
  }
  m.data = m.storage.data<bool>();
  return m;
}

// Calls fn(i, mask, len) for the runs of [begin, end) over which the mask is one contiguous
// array: element i + t of the broadcast shape reads mask[t].
template <typename Fn>
void for_each_run(const MaskView& m, int64_t begin, int64_t end, const Fn& fn) {
  for (int64_t i = begin; i < end;) {
    const int64_t j = i % m.period, len = std::min(end - i, m.period - j);
    fn(i, m.data + j, len);
    i += len;
  }
}

// [0, n) cut into chunks of kElementwiseGrain; first[c] is the number of trues before chunk c,
// first.back() the total.
struct MaskCount {
  int64_t n = 0, chunk = kElementwiseGrain;
  std::vector<int64_t> first;
  int64_t chunks() const { return static_cast<int64_t>(first.size()) - 1; }
  int64_t total() const { return first.back(); }
};

// The mask's bools (bytes 0 or 1) eight at a time, as one 64-bit word.
inline uint64_t eight(const bool* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The number of trues in p[0, len): eight bytes summed by one multiply (the top byte of
// w * 0x0101...01 is the sum of w's bytes).
inline int64_t count_trues(const bool* p, int64_t len) {
  int64_t count = 0, t = 0;
  for (; t + 8 <= len; t += 8)
    count += static_cast<int64_t>((eight(p + t) * 0x0101010101010101ULL) >> 56);
  for (; t < len; ++t) count += p[t];
  return count;
}

// kTrueOffsets[bits]: the positions of the set bits of an 8-bit pattern, lowest first.
constexpr auto kTrueOffsets = [] {
  std::array<std::array<uint8_t, 8>, 256> table{};
  for (int bits = 0; bits < 256; ++bits) {
    int k = 0;
    for (int b = 0; b < 8; ++b)
      if (bits >> b & 1) table[bits][k++] = static_cast<uint8_t>(b);
  }
  return table;
}();

// Calls fn(t0, at, k) for blocks of a run of the mask p[0, len): at[0, k) are the offsets (from
// t0) of the block's trues, in order. Eight bools at a time and without a branch: their 8-bit
// pattern (the low bit of each byte, gathered by one multiply) picks the offsets from a table,
// all eight are written and the cursor moves past the trues only (a branch per element would be
// mispredicted half the time on a random mask).
template <typename Fn> void for_true_blocks(const bool* p, int64_t len, const Fn& fn) {
  constexpr int64_t kBlock = 512;
  int32_t at[kBlock + 8];
  for (int64_t t0 = 0; t0 < len; t0 += kBlock) {
    const int64_t n = std::min(kBlock, len - t0);
    const bool* q = p + t0;
    int64_t k = 0, t = 0;
    for (; t + 8 <= n; t += 8) {
      const auto bits = static_cast<unsigned>((eight(q + t) * 0x0102040810204080ULL) >> 56);
      const std::array<uint8_t, 8>& offsets = kTrueOffsets[bits];
      for (int b = 0; b < 8; ++b) at[k + b] = static_cast<int32_t>(t + offsets[b]);
      k += std::popcount(bits);
    }
    for (; t < n; ++t) {
      at[k] = static_cast<int32_t>(t);
      k += q[t];
    }
    fn(t0, static_cast<const int32_t*>(at), k);
  }
}

// The number of trues in [0, n) without walking it: a periodic mask's count is the count of one
// period times the whole periods, plus the partial one. So the count of a 0-d mask broadcast to
// 2^62 elements (a stride-0 view, no memory behind it) is cheap, and the caller can check it
// against the source before anything the size of the broadcast shape is allocated or walked.
int64_t count_total(const MaskView& m, int64_t n) {
  if (n <= m.period) return count_trues(m.data, n);
  const int64_t per_period = count_trues(m.data, m.period);
  return per_period * (n / m.period) + count_trues(m.data, n % m.period);
}

// The per-chunk counts for a walk over [0, n). Callers walk only over memory they hold at the
// broadcast shape (an output or a dense input), so n, and the table of n / chunk, is bounded.
MaskCount count_mask(const MaskView& m, int64_t n) {
  MaskCount c;
  c.n = n;
  const int64_t chunks = (n + c.chunk - 1) / c.chunk;
  c.first.assign(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t count = 0;
      for_each_run(m, k * c.chunk, std::min(n, (k + 1) * c.chunk),
                   [&](int64_t, const bool* p, int64_t len) { count += count_trues(p, len); });
      c.first[static_cast<size_t>(k) + 1] = count;
    }
  });
  for (size_t k = 1; k < c.first.size(); ++k) c.first[k] += c.first[k - 1];
  return c;
}

// Calls fn(i, mask, len, rank) for every run of every chunk, chunks in parallel; rank is the
// number of trues before element i, and fn advances it past the run's trues.
template <typename Fn> void for_each_chunk(const MaskView& m, const MaskCount& c, const Fn& fn) {
  parallel_for(0, c.chunks(), 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t rank = c.first[static_cast<size_t>(k)];
      for_each_run(m, k * c.chunk, std::min(c.n, (k + 1) * c.chunk),
                   [&](int64_t i, const bool* p, int64_t len) { fn(i, p, len, rank); });
    }
  });
}

// self as a contiguous tensor of `shape` (self itself when it already is one), copied row by row
// (self broadcast to shape by a stride-0 view).
Tensor dense_as(const Tensor& self, const Shape& shape) {
  if (self.shape() == shape && self.is_contiguous()) return self;
  if (self.shape() == shape) return indexing::fresh_copy(self);
  return indexing::fresh_copy(
      make_view(self, shape, broadcast_strides("masked", self, shape), self.storage_offset()));
}

template <typename T>
Tensor masked_fill_with(const char* op, const Tensor& self, const Tensor& mask, T value) {
  Tensor out = empty(broadcast_pair(op, self, mask), self.dtype(), self.device());
  map_into<T, bool, T>(
      out, [value](bool m, T x) { return select_bits(m, value, x); }, mask, self);
  return out;
}

}  // namespace

Tensor masked_fill_scalar(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return visit_dtype("masked_fill_scalar", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return masked_fill_with<T>("masked_fill_scalar", self, mask, value.to<T>());
  });
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return visit_dtype("masked_fill", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return masked_fill_with<T>("masked_fill", self, mask, load_one<T>(value));
  });
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  const Shape shape = broadcast_pair("masked_select", self, mask);
  const MaskView m = view_mask(mask, shape);
  // self at the broadcast shape first: a broadcast too large to hold fails here with a typed
  // error, before the count walks (and sizes a table for) every element of it.
  const Tensor src = dense_as(self, shape);
  const MaskCount count = count_mask(m, shape.numel());
  Tensor out = empty({count.total()}, self.dtype(), self.device());
  if (count.total() == 0) return out;
  visit_dtype("masked_select", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    T* o = out.data<T>();
    for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t& rank) {
      for_true_blocks(p, len, [&](int64_t t0, const int32_t* at, int64_t k) {
        for (int64_t j = 0; j < k; ++j) o[rank + j] = s[i + t0 + at[j]];
        rank += k;
      });
    });
  });
  return out;
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  constexpr const char* op = "masked_scatter";
  const Shape shape = broadcast_pair(op, self, mask);
  const MaskView m = view_mask(mask, shape);
  Tensor out = empty(shape, self.dtype(), self.device());  // first, as in masked_select
  const MaskCount count = count_mask(m, shape.numel());
  indexing::check_source_count(op, count.total(), source.numel());
  if (shape.numel() == 0) return out;
  // Fused (one pass writing out) when self is already dense at the result's shape; otherwise
  // copy self (broadcast or strided) first and then write only the masked elements.
  const bool fused = self.shape() == shape && self.is_contiguous();
  if (!fused) copy_data(out, self);
  if (count.total() == 0) {
    if (fused) copy_data(out, self);
    return out;
  }
  const Tensor src = indexing::dense(source);
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    const T* x = self.data<T>();
    T* o = out.data<T>();
    // self's values first (fused: a copy of the run), then source's at the trues, in order
    for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t& rank) {
      if (fused) std::memcpy(o + i, x + i, static_cast<size_t>(len) * sizeof(T));
      for_true_blocks(p, len, [&](int64_t t0, const int32_t* at, int64_t k) {
        for (int64_t j = 0; j < k; ++j) o[i + t0 + at[j]] = s[rank + j];
        rank += k;
      });
    });
  });
  return out;
}

}  // namespace tg::cpu

namespace tg::cpu {

Tensor masked_scatter_backward(const Tensor& grad_output, const Tensor& mask,
                               IntArrayRef source_shape) {
  constexpr const char* op = "masked_scatter_backward";
  const Shape shape = broadcast_pair(op, grad_output, mask);
  TG_ASSERT(shape == grad_output.shape());  // checks::masked_scatter_backward
  const Shape out_shape(source_shape.begin(), source_shape.end());
  const MaskView m = view_mask(mask, shape);
  const int64_t total = count_total(m, shape.numel());
  indexing::check_source_shape_count(op, total, out_shape.numel());
  Tensor out = empty(out_shape, grad_output.dtype(), grad_output.device());
  // A gradient that holds one value (e.g. the gradient of a sum, often a stride-0 view of a
  // huge shape) fills the selected slots without a walk; any other is made dense at the
  // broadcast shape first, which bounds the walk by memory this call holds.
  const bool repeated = holds_one_value(grad_output);
  const Tensor g = repeated || total == 0 ? grad_output : dense_as(grad_output, shape);
  visit_dtype(op, grad_output.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T* x = g.data<T>();
    if (repeated && total > 0) {
      std::fill_n(o, total, x[0]);
    } else if (total > 0) {
      const MaskCount count = count_mask(m, shape.numel());
      for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t& rank) {
        for_true_blocks(p, len, [&](int64_t t0, const int32_t* at, int64_t k) {
          for (int64_t j = 0; j < k; ++j) o[rank + j] = x[i + t0 + at[j]];
          rank += k;
        });
      });
    }
    std::fill(o + total, o + out.numel(), T(0));
  });
  return out;
}

}  // namespace tg::cpu
