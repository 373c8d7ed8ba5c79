// CPU mask ops: masked_fill, masked_select and masked_scatter.
//
// masked_fill is elementwise (the engine in loops.h). masked_select and masked_scatter pair the
// k-th true of the mask (row-major over the broadcast shape) with the k-th element of their
// output / source. They run in two parallel passes over fixed chunks of the broadcast shape:
// count the trues of each chunk (so each chunk knows its first k, and the total is checked
// before anything is written), then move the data, one pass over it.
#include <algorithm>
#include <cstring>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/generated/kernels.h>

#include "scatter_engine.h"

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
template <typename Fn> void for_each_run(const MaskView& m, int64_t begin, int64_t end, const Fn& fn) {
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

MaskCount count_mask(const MaskView& m, int64_t n) {
  MaskCount c;
  c.n = n;
  const int64_t chunks = (n + c.chunk - 1) / c.chunk;
  c.first.assign(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t count = 0;
      for_each_run(m, k * c.chunk, std::min(n, (k + 1) * c.chunk), [&](int64_t, const bool* p, int64_t len) {
        for (int64_t t = 0; t < len; ++t) count += p[t];
      });
      c.first[static_cast<size_t>(k) + 1] = count;
    }
  });
  for (size_t k = 1; k < c.first.size(); ++k) c.first[k] += c.first[k - 1];
  return c;
}

// Calls fn(i, mask, len, rank) for every run of every chunk, chunks in parallel; rank is the
// number of trues before element i.
template <typename Fn> void for_each_chunk(const MaskView& m, const MaskCount& c, const Fn& fn) {
  parallel_for(0, c.chunks(), 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t rank = c.first[static_cast<size_t>(k)];
      for_each_run(m, k * c.chunk, std::min(c.n, (k + 1) * c.chunk), [&](int64_t i, const bool* p, int64_t len) {
        fn(i, p, len, rank);
        for (int64_t t = 0; t < len; ++t) rank += p[t];
      });
    }
  });
}

// self as a contiguous tensor of `shape` (self itself when it already is one), copied row by row.
Tensor dense_as(const Tensor& self, const Shape& shape) {
  if (self.shape() == shape && self.is_contiguous()) return self;
  return scatter_engine::fresh_copy(self.shape() == shape ? self : self.expand(shape));
}

template <typename T> Tensor masked_fill_with(const char* op, const Tensor& self, const Tensor& mask, T value) {
  Tensor out = empty(broadcast_pair(op, self, mask), self.dtype(), self.device());
  map_into<T, bool, T>(out, [value](bool m, T x) { return m ? value : x; }, mask, self);
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
  TG_CHECK(value.dim() == 0, ValueError, "masked_fill", "value must be a 0-d tensor, got shape ",
           value.shape(), " (use a Scalar or value.reshape({}) for one element)");
  return visit_dtype("masked_fill", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return masked_fill_with<T>("masked_fill", self, mask, load_one<T>(value));
  });
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  const Shape shape = broadcast_pair("masked_select", self, mask);
  const MaskView m = view_mask(mask, shape);
  const MaskCount count = count_mask(m, shape.numel());
  Tensor out = empty({count.total()}, self.dtype(), self.device());
  if (count.total() == 0) return out;
  const Tensor src = dense_as(self, shape);
  visit_dtype("masked_select", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    T* o = out.data<T>();
    for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t rank) {
      for (int64_t t = 0; t < len; ++t)
        if (p[t]) o[rank++] = s[i + t];
    });
  });
  return out;
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  constexpr const char* op = "masked_scatter";
  TG_CHECK(source.dtype() == self.dtype(), TypeError, op, "source has dtype ", dtype_name(source.dtype()),
           " but self has dtype ", dtype_name(self.dtype()), "; expected the same dtype");
  const Shape shape = broadcast_pair(op, self, mask);
  const MaskView m = view_mask(mask, shape);
  const MaskCount count = count_mask(m, shape.numel());
  TG_CHECK(count.total() <= source.numel(), ValueError, op, "the mask selects ", count.total(),
           " elements but source has only ", source.numel(), " (source needs at least ",
           count.total(), " elements)");
  Tensor out = empty(shape, self.dtype(), self.device());
  if (shape.numel() == 0) return out;
  // Fused (one pass writing out) when self is already dense at the result's shape; otherwise
  // copy self (broadcast or strided) first and then write only the masked elements.
  const bool fused = self.shape() == shape && self.is_contiguous();
  if (!fused) copy_data(out, self);
  if (count.total() == 0) {
    if (fused) copy_data(out, self);
    return out;
  }
  const Tensor src = scatter_engine::dense(source);
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = src.data<T>();
    const T* x = fused ? self.data<T>() : out.data<T>();
    T* o = out.data<T>();
    const int64_t last = count.total() - 1;
    // Branch-free: both candidates are loaded (source's index clamped so it stays in bounds) and
    // one is picked, so a random mask costs no mispredicted branches.
    for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t rank) {
      for (int64_t t = 0; t < len; ++t) {
        const T from_source = s[std::min(rank, last)];
        o[i + t] = p[t] ? from_source : x[i + t];
        rank += p[t];
      }
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
  TG_CHECK(shape == grad_output.shape(), ValueError, op, "mask of shape ", mask.shape(),
           " cannot change grad_output's shape ", grad_output.shape());
  const Shape out_shape(source_shape.begin(), source_shape.end());
  const MaskView m = view_mask(mask, shape);
  const MaskCount count = count_mask(m, shape.numel());
  TG_CHECK(count.total() <= out_shape.numel(), ValueError, op, "the mask selects ", count.total(),
           " elements but source_shape has only ", out_shape.numel(), " elements");
  Tensor out = empty(out_shape, grad_output.dtype(), grad_output.device());
  bool repeated = true;  // every stride 0: one value (the gradient of a sum)
  for (int64_t stride : grad_output.strides()) repeated = repeated && stride == 0;
  const Tensor g = repeated ? grad_output : dense_as(grad_output, shape);
  visit_dtype(op, grad_output.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T* x = g.data<T>();
    const int64_t total = count.total();
    if (repeated && total > 0) {
      std::fill_n(o, total, x[0]);
    } else if (total > 0) {
      for_each_chunk(m, count, [&](int64_t i, const bool* p, int64_t len, int64_t rank) {
        for (int64_t t = 0; t < len; ++t)
          if (p[t]) o[rank++] = x[i + t];
      });
    }
    std::fill(o + total, o + out.numel(), T(0));
  });
  return out;
}

}  // namespace tg::cpu
