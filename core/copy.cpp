#include <tapegrad/core/copy.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <tapegrad/core/checked.h>
#include <tapegrad/core/parallel.h>

namespace tg {

namespace {

CopyKernel g_copy[2] = {nullptr, nullptr};
FillKernel g_fill[2] = {nullptr, nullptr};

// Visits elements begin..end of `shape` in row-major order as runs along the innermost dim:
// fn(offset_a, offset_b, length), where a run steps by a.back() and b.back(). Kernels then write
// tight inner loops (vectorised when the inner strides are 1 or 0).
template <typename Fn> void for_each_run(const Shape& shape, const Shape& a, const Shape& b,
                                         int64_t begin, int64_t end, Fn&& fn) {
  const size_t nd = shape.size();
  if (nd == 0) {
    if (begin < end) fn(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  const size_t last = nd - 1;
  Shape idx(nd);
  int64_t rem = begin, oa = 0, ob = 0;
  for (size_t i = nd; i-- > 0;) {
    idx[i] = rem % shape[i];
    rem /= shape[i];
    oa += idx[i] * a[i];
    ob += idx[i] * b[i];
  }
  for (int64_t n = begin; n < end;) {
    const int64_t len = std::min(shape[last] - idx[last], end - n);
    fn(oa, ob, len);
    n += len;
    if (n >= end) break;
    // The run ended at the end of the inner dim: back to its start, then carry outwards.
    oa -= idx[last] * a[last];
    ob -= idx[last] * b[last];
    idx[last] = 0;
    for (size_t i = last; i-- > 0;) {
      oa += a[i];
      ob += b[i];
      if (++idx[i] < shape[i]) break;
      oa -= a[i] * shape[i];
      ob -= b[i] * shape[i];
      idx[i] = 0;
    }
  }
}

// NaN, inf, out of range to an integer: To's lowest value, as PyTorch on x86 (core/checked.h).
template <typename To, typename From> inline To convert(From v) { return convert_value<To>(v); }

// dst [rows, cols] contiguous = src read with steps (1, ld) (a transposed matrix), in square
// tiles: each tile's reads and writes stay in L1, so both sides use whole cache lines instead of
// one element per line on the strided side. T is moved as raw bytes of its size.
template <typename T>
void transpose_copy(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kTile = 32;
  const int64_t tile_rows = (rows + kTile - 1) / kTile;
  parallel_for(0, tile_rows, std::max<int64_t>(1, kElementwiseGrain / (kTile * cols)),
               [&](int64_t tb, int64_t te) {
                 for (int64_t i0 = tb * kTile; i0 < std::min(rows, te * kTile); i0 += kTile) {
                   const int64_t i1 = std::min(rows, i0 + kTile);
                   for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
                     const int64_t j1 = std::min(cols, j0 + kTile);
                     for (int64_t i = i0; i < i1; ++i)
                       for (int64_t j = j0; j < j1; ++j) dst[i * cols + j] = src[i + j * ld];
                   }
                 }
               });
}

void cpu_copy(const TensorBase& dst, const TensorBase& src) {
  Shape src_strides = broadcast_strides("copy", src, dst.shape());
  const int64_t n = dst.numel();
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      src.shape() == dst.shape()) {
    std::memcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(n) * itemsize(dst.dtype()));
    return;
  }
  if (dst.dtype() == src.dtype() && dst.dim() == 2 && dst.is_contiguous() && src_strides[0] == 1 &&
      src_strides[1] >= dst.size(0) && dst.size(1) > 1 && n >= 4096) {
    const int64_t rows = dst.size(0), cols = dst.size(1), ld = src_strides[1];
    switch (itemsize(dst.dtype())) {
      case 4:
        return transpose_copy(static_cast<uint32_t*>(dst.data_ptr()),
                              static_cast<const uint32_t*>(src.data_ptr()), rows, cols, ld);
      case 8:
        return transpose_copy(static_cast<uint64_t*>(dst.data_ptr()),
                              static_cast<const uint64_t*>(src.data_ptr()), rows, cols, ld);
      default: break;
    }
  }
  visit_dtype("copy", dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype("copy", src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      D* d = dst.data<D>();
      const S* s = src.data<S>();
      const int64_t ds = dst.dim() ? dst.strides().back() : 0;
      const int64_t ss = dst.dim() ? src_strides.back() : 0;
      parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
        for_each_run(dst.shape(), dst.strides(), src_strides, b, e,
                     [&](int64_t od, int64_t os, int64_t len) {
                       D* out = d + od;
                       const S* in = s + os;
                       if (ds == 1 && ss == 1) {
                         for (int64_t i = 0; i < len; ++i) out[i] = convert<D>(in[i]);
                       } else if (ds == 1 && ss == 0) {  // a broadcast value along the row
                         std::fill(out, out + len, convert<D>(*in));
                       } else {
                         for (int64_t i = 0; i < len; ++i) out[i * ds] = convert<D>(in[i * ss]);
                       }
                     });
      });
    });
  });
}

void cpu_fill(const TensorBase& dst, const Scalar& value) {
  visit_dtype("fill", dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = value.is_floating() ? convert<T>(value.to_double()) : convert<T>(value.to_int());
    T* d = dst.data<T>();
    if (dst.is_contiguous()) {
      std::fill(d, d + dst.numel(), v);
      return;
    }
    const int64_t ds = dst.strides().back();
    for_each_run(dst.shape(), dst.strides(), dst.strides(), 0, dst.numel(),
                 [&](int64_t o, int64_t, int64_t len) {
                   for (int64_t i = 0; i < len; ++i) d[o + i * ds] = v;
                 });
  });
}

}  // namespace

Shape broadcast_strides(const char* op, const TensorBase& src, const Shape& shape) {
  const Shape& s = src.shape();
  TG_CHECK(s.size() <= shape.size(), ValueError, op, "source of shape ", s, " cannot broadcast to ",
           shape);
  Shape strides(shape.size(), 0);
  size_t lead = shape.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    TG_CHECK(s[i] == shape[lead + i] || s[i] == 1, ValueError, op, "source of shape ", s,
             " cannot broadcast to ", shape);
    strides[lead + i] = s[i] == 1 ? 0 : src.strides()[i];
  }
  return strides;
}

void set_copy_kernel(DeviceType type, CopyKernel fn) { g_copy[static_cast<int>(type)] = fn; }
void set_fill_kernel(DeviceType type, FillKernel fn) { g_fill[static_cast<int>(type)] = fn; }

void copy_data(const TensorBase& dst, const TensorBase& src) {
  if (dst.numel() == 0) return;
  Device dd = dst.device(), sd = src.device();
  if (dd == sd) {
    CopyKernel k = dd.is_cpu() ? &cpu_copy : g_copy[static_cast<int>(dd.type)];
    TG_CHECK(k != nullptr, Error, "copy", "no copy kernel for ", dd);
    return k(dst, src);
  }
  // Across devices: move bytes of a contiguous, same-dtype, same-shape source. A host source is
  // first converted and broadcast to that on the host.
  TensorBase s = src;
  const bool ready =
      src.dtype() == dst.dtype() && src.shape() == dst.shape() && src.is_contiguous();
  if (sd.is_cpu() && !ready) {
    s = empty_strided(dst.shape(), contiguous_strides(dst.shape()), dst.dtype(), sd);
    cpu_copy(s, src);
  }
  if (dst.is_contiguous() && s.is_contiguous() && s.dtype() == dst.dtype() &&
      s.shape() == dst.shape()) {
    memcpy_between(dst.data_ptr(), dd, s.data_ptr(), s.device(),
                   static_cast<size_t>(dst.numel()) * itemsize(dst.dtype()));
    return;
  }
  // General case: stage through a contiguous tensor on dst's device.
  TensorBase staged = empty_strided(s.shape(), contiguous_strides(s.shape()), s.dtype(), dd);
  TensorBase sc = s;
  if (!s.is_contiguous()) {  // made contiguous on its own device first
    sc = empty_strided(s.shape(), contiguous_strides(s.shape()), s.dtype(), s.device());
    copy_data(sc, s);
  }
  memcpy_between(staged.data_ptr(), dd, sc.data_ptr(), sc.device(),
                 static_cast<size_t>(sc.numel()) * itemsize(sc.dtype()));
  copy_data(dst, staged);
}

void fill_data(const TensorBase& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  Device d = dst.device();
  FillKernel k = d.is_cpu() ? &cpu_fill : g_fill[static_cast<int>(d.type)];
  TG_CHECK(k != nullptr, Error, "fill", "no fill kernel for ", d);
  k(dst, value);
}

}  // namespace tg
