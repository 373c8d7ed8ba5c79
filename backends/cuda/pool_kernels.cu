// The 2-d pools on contiguous planes [planes, h, w]. Forward: one thread per output element, the
// CPU's loops (backends/cpu/pool.cpp) for its window. Backward: one thread per input element,
// gathering the shares of the windows that hold it in the order the CPU adds them (windows in
// row-major order), so no two threads write the same element and no atomics are needed.
#include "conv_kernels.h"
#include "launch.cuh"
#include "math.cuh"

namespace tg::cuda::detail {
namespace {

// One avg_pool2d window clipped to the input, and the divisor PyTorch uses for it.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

__host__ __device__ inline AvgWindow avg_window(const PoolDims& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = h0 + g.kh < g.h + g.ph ? h0 + g.kh : g.h + g.ph;
  int64_t w1 = w0 + g.kw < g.w + g.pw ? w0 + g.kw : g.w + g.pw;
  const int64_t padded_size = (h1 - h0) * (w1 - w0);  // the window within the padded input
  h0 = h0 > 0 ? h0 : 0;
  w0 = w0 > 0 ? w0 : 0;
  h1 = h1 < g.h ? h1 : g.h;
  w1 = w1 < g.w ? w1 : g.w;
  const int64_t divisor = g.divisor_override    ? g.divisor_override
                          : g.count_include_pad ? padded_size
                                                : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

// The outputs o in [lo, hi) whose window (start o * s - p, k elements) holds input position i.
__host__ __device__ inline void windows_holding(int64_t i, int64_t k, int64_t s, int64_t p,
                                                int64_t out, int64_t& lo, int64_t& hi) {
  const int64_t last = i + p, first = i + p - k + 1;  // o * s must lie in [first, last]
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  hi = last < 0 ? 0 : last / s + 1;
  hi = hi < out ? hi : out;
  lo = lo < hi ? lo : hi;
}

// Adaptive pooling's window along one dim: [floor(o * in / out), ceil((o + 1) * in / out)).
__host__ __device__ inline int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return (o * in) / out;
}
__host__ __device__ inline int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

// The outputs [lo, hi) whose adaptive window holds input position i (in > 0, out > 0): output
// i * out / in always does, and the windows are ordered, so the others are its neighbours.
__host__ __device__ inline void adaptive_holding(int64_t i, int64_t out, int64_t in, int64_t& lo,
                                                 int64_t& hi) {
  lo = (i * out) / in;
  hi = lo + 1;
  while (lo > 0 && adaptive_end(lo - 1, out, in) > i) --lo;
  while (hi < out && adaptive_start(hi, out, in) <= i) ++hi;
}

template <typename T> struct MaxPoolBody {
  const T* x;
  T* out;
  int64_t* indices;
  PoolDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t ow = e % g.ow, oh = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
    const T* src = x + p * g.h * g.w;
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    const int64_t h_end = h0 + (g.kh - 1) * g.dh + 1, w_end = w0 + (g.kw - 1) * g.dw + 1;
    const int64_t h1 = h_end < g.h ? h_end : g.h, w1 = w_end < g.w ? w_end : g.w;
    while (h0 < 0) h0 += g.dh;
    while (w0 < 0) w0 += g.dw;
    // As PyTorch: the first maximum in scan order wins, and a NaN wins over any number (the last
    // NaN seen).
    int64_t best = h0 * g.w + w0;
    T best_value = lowest_value<T>();
    for (int64_t ih = h0; ih < h1; ih += g.dh)
      for (int64_t iw = w0; iw < w1; iw += g.dw) {
        const T v = src[ih * g.w + iw];
        if (v > best_value || is_nan(v)) {
          best_value = v;
          best = ih * g.w + iw;
        }
      }
    out[e] = best_value;
    indices[e] = best;
  }
};

template <typename T> struct AvgPoolBody {
  const T* x;
  T* out;
  PoolDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t ow = e % g.ow, oh = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
    const T* src = x + p * g.h * g.w;
    const AvgWindow win = avg_window(g, oh, ow);
    T sum = 0;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += src[ih * g.w + iw];
    out[e] = sum / static_cast<T>(win.divisor);
  }
};

template <typename T> struct AvgPoolBackwardBody {
  const T* gy;
  T* gx;
  PoolDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t iw = e % g.w, ih = (e / g.w) % g.h, p = e / (g.w * g.h);
    int64_t oh0, oh1, ow0, ow1;
    windows_holding(ih, g.kh, g.sh, g.ph, g.oh, oh0, oh1);
    windows_holding(iw, g.kw, g.sw, g.pw, g.ow, ow0, ow1);
    T acc = T(0);
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const AvgWindow win = avg_window(g, oh, ow);
        if (ih < win.h0 || ih >= win.h1 || iw < win.w0 || iw >= win.w1) continue;
        acc += gy[(p * g.oh + oh) * g.ow + ow] / static_cast<T>(win.divisor);
      }
    gx[e] = acc;
  }
};

template <typename T> struct AdaptiveBody {
  const T* src;
  T* dst;
  PoolDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t j = e % g.ow, i = (e / g.ow) % g.oh, p = e / (g.ow * g.oh);
    const int64_t h0 = adaptive_start(i, g.oh, g.h), h1 = adaptive_end(i, g.oh, g.h);
    const int64_t w0 = adaptive_start(j, g.ow, g.w), w1 = adaptive_end(j, g.ow, g.w);
    const T* plane = src + p * g.h * g.w;
    T sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * g.w + iw];
    dst[e] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
  }
};

template <typename T> struct AdaptiveBackwardBody {
  const T* gy;
  T* gx;
  PoolDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t iw = e % g.w, ih = (e / g.w) % g.h, p = e / (g.w * g.h);
    int64_t i0, i1, j0, j1;
    adaptive_holding(ih, g.oh, g.h, i0, i1);
    adaptive_holding(iw, g.ow, g.w, j0, j1);
    T acc = T(0);
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t rows = adaptive_end(i, g.oh, g.h) - adaptive_start(i, g.oh, g.h);
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t count = rows * (adaptive_end(j, g.ow, g.w) - adaptive_start(j, g.ow, g.w));
        acc += gy[(p * g.oh + i) * g.ow + j] / static_cast<T>(count);
      }
    }
    gx[e] = acc;
  }
};

}  // namespace

void launch_max_pool2d(DType dtype, const void* x, const PoolDims& g, void* out, int64_t* indices) {
  visit_floating("max_pool2d", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("max_pool2d", g.planes * g.oh * g.ow,
             MaxPoolBody<T>{static_cast<const T*>(x), static_cast<T*>(out), indices, g});
  });
}

void launch_avg_pool2d(DType dtype, const void* x, const PoolDims& g, void* out) {
  visit_floating("avg_pool2d", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("avg_pool2d", g.planes * g.oh * g.ow,
             AvgPoolBody<T>{static_cast<const T*>(x), static_cast<T*>(out), g});
  });
}

void launch_avg_pool2d_backward(DType dtype, const void* gy, const PoolDims& g, void* gx) {
  visit_floating("avg_pool2d_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("avg_pool2d_backward", g.planes * g.h * g.w,
             AvgPoolBackwardBody<T>{static_cast<const T*>(gy), static_cast<T*>(gx), g});
  });
}

void launch_adaptive_avg_pool2d(bool backward, DType dtype, const void* x, const PoolDims& g,
                                void* out) {
  const char* op = backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d";
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (backward) {
      launch_n(op, g.planes * g.h * g.w,
               AdaptiveBackwardBody<T>{static_cast<const T*>(x), static_cast<T*>(out), g});
    } else {
      launch_n(op, g.planes * g.oh * g.ow,
               AdaptiveBody<T>{static_cast<const T*>(x), static_cast<T*>(out), g});
    }
  });
}

}  // namespace tg::cuda::detail
