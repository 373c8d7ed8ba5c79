// CPU kernels of the 2-d pooling ops: every input is made contiguous and seen as planes
// [N * C, H, W]; each task owns whole planes, so the backward ops scatter into their own plane
// without atomics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {

namespace {

int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(work_per_plane, 1));
}

// One avg_pool2d window clipped to the input, with the divisor PyTorch uses for it.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  double divisor;
};

AvgWindow avg_window(const PoolGeometry& g, int64_t oh, int64_t ow, bool count_include_pad,
                     std::optional<int64_t> divisor_override) {
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = std::min(h0 + g.kh, g.h + g.ph), w1 = std::min(w0 + g.kw, g.w + g.pw);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);  // the window within the padded input
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.h);
  w1 = std::min(w1, g.w);
  const int64_t divisor = divisor_override    ? *divisor_override
                          : count_include_pad ? padded_size
                                              : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, static_cast<double>(divisor)};
}

// Adaptive pooling's window along one dim: [floor(o * in / out), ceil((o + 1) * in / out)).
int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
int64_t adaptive_end(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

// Planes [lo, hi) of max_pool2d. g is a copy: its sizes stay in registers, which the stores
// into o and idx (possible aliases of a reference) would otherwise force to be reloaded.
template <typename T> void max_pool_planes(const T* in, T* o, int64_t* idx, const PoolGeometry g,
                                           int64_t lo, int64_t hi) {
  const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow;
  for (int64_t p = lo; p < hi; ++p) {
    const T* src = in + p * plane;
    T* op = o + p * out_plane;
    int64_t* ip = idx + p * out_plane;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      int64_t h0 = oh * g.sh - g.ph;
      const int64_t h1 = std::min(h0 + (g.kh - 1) * g.dh + 1, g.h);
      while (h0 < 0) h0 += g.dh;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        int64_t w0 = ow * g.sw - g.pw;
        const int64_t w1 = std::min(w0 + (g.kw - 1) * g.dw + 1, g.w);
        while (w0 < 0) w0 += g.dw;
        // As PyTorch: the first maximum in scan order wins, and a NaN wins over any number (the
        // last NaN seen).
        int64_t best = h0 * g.w + w0;
        T best_value = -std::numeric_limits<T>::infinity();
        for (int64_t ih = h0; ih < h1; ih += g.dh)
          for (int64_t iw = w0; iw < w1; iw += g.dw) {
            // Selects, not a branch: on real data which element wins is unpredictable.
            const T v = src[ih * g.w + iw];
            const bool take = v > best_value || v != v;  // v != v: NaN
            best_value = take ? v : best_value;
            best = take ? ih * g.w + iw : best;
          }
        op[oh * g.ow + ow] = best_value;
        ip[oh * g.ow + ow] = best;
      }
    }
  }
}

// One 2x2 window of max_pool_2x2_planes: output ow of the output row whose input rows start at
// r0 and r1.
template <typename T>
void max_pool_2x2_window(const T* src, int64_t r0, int64_t r1, int64_t ow, T* out, int64_t* index) {
  const int64_t c = 2 * ow;
  const int64_t at[4] = {r0 + c, r0 + c + 1, r1 + c, r1 + c + 1};
  T best_value = src[at[0]];
  int64_t best = at[0];
  for (int k = 1; k < 4; ++k) {
    const T v = src[at[k]];
    const bool take = v > best_value || v != v;
    best_value = take ? v : best_value;
    best = take ? at[k] : best;
  }
  *out = best_value;
  *index = best;
}

// The common 2x2 window, stride 2, no padding or dilation, every window inside the plane: the
// same scan order and rule as max_pool_planes (first maximum wins, the last NaN wins), with the
// four loads and selects unrolled (the general loop spends most of its time on window bounds).
template <typename T> void max_pool_2x2_planes(const T* in, T* o, int64_t* idx,
                                               const PoolGeometry g, int64_t lo, int64_t hi) {
  const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow;
  for (int64_t p = lo; p < hi; ++p) {
    const T* src = in + p * plane;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t r0 = 2 * oh * g.w, r1 = r0 + g.w, at = p * out_plane + oh * g.ow;
      for (int64_t ow = 0; ow < g.ow; ++ow)
        max_pool_2x2_window(src, r0, r1, ow, o + at + ow, idx + at + ow);
    }
  }
}

// max_pool_2x2_planes for float32, four outputs at a time in SSE2 vectors (the baseline ISA):
// the scalar loop's selects compile to branches that mispredict on real data. Each lane makes
// the same comparisons in the same order as the scalar rule, so values and indices are the same;
// outputs past the last multiple of 4 in a row take the scalar loop.
using F4 = float __attribute__((vector_size(16)));
using I4 = int32_t __attribute__((vector_size(16)));
void max_pool_2x2_planes(const float* in, float* o, int64_t* idx, const PoolGeometry g, int64_t lo,
                         int64_t hi) {
  const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow, vec_ow = g.ow / 4 * 4;
  for (int64_t p = lo; p < hi; ++p) {
    const float* src = in + p * plane;
    float* op = o + p * out_plane;
    int64_t* ip = idx + p * out_plane;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t r0 = 2 * oh * g.w, r1 = r0 + g.w;
      for (int64_t ow = 0; ow < vec_ow; ow += 4) {
        const int64_t c = 2 * ow;
        F4 a0, a1, b0, b1;
        __builtin_memcpy(&a0, src + r0 + c, 16);
        __builtin_memcpy(&a1, src + r0 + c + 4, 16);
        __builtin_memcpy(&b0, src + r1 + c, 16);
        __builtin_memcpy(&b1, src + r1 + c + 4, 16);
        // The window's values in scan order: top left, top right, bottom left, bottom right.
        const F4 v[4] = {__builtin_shufflevector(a0, a1, 0, 2, 4, 6),
                         __builtin_shufflevector(a0, a1, 1, 3, 5, 7),
                         __builtin_shufflevector(b0, b1, 0, 2, 4, 6),
                         __builtin_shufflevector(b0, b1, 1, 3, 5, 7)};
        F4 best = v[0];
        I4 which = {0, 0, 0, 0};
        for (int k = 1; k < 4; ++k) {
          const I4 take = (v[k] > best) | (v[k] != v[k]);
          best = take ? v[k] : best;
          which = take ? I4{k, k, k, k} : which;
        }
        __builtin_memcpy(op + oh * g.ow + ow, &best, 16);
        // which: 0 to 3 in scan order, so its high bit picks the row and its low bit the column.
        for (int l = 0; l < 4; ++l)
          ip[oh * g.ow + ow + l] = r0 + (which[l] >> 1) * g.w + c + 2 * l + (which[l] & 1);
      }
      for (int64_t ow = vec_ow; ow < g.ow; ++ow)
        max_pool_2x2_window(src, r0, r1, ow, op + oh * g.ow + ow, ip + oh * g.ow + ow);
    }
  }
}

bool is_plain_2x2(const PoolGeometry& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 &&
         g.dw == 1 && 2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

}  // namespace

// ---- max_pool2d --------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> max_pool2d(const Tensor& self, IntArrayRef kernel_size,
                                      IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                      bool ceil_mode) {
  const PoolGeometry g =
      pool_geometry(self.shape(), kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = empty(g.output_shape(), self.dtype(), self.device());
  Tensor indices = empty(g.output_shape(), kInt64, self.device());
  if (out.numel() == 0) return {out, indices};
  const Tensor x = self.contiguous();
  visit_floating("max_pool2d", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    int64_t* idx = indices.data<int64_t>();
    parallel_for(0, g.planes(), plane_grain(g.oh * g.ow * g.kh * g.kw),
                 [&](int64_t lo, int64_t hi) {
                   if (is_plain_2x2(g))
                     max_pool_2x2_planes(in, o, idx, g, lo, hi);
                   else
                     max_pool_planes(in, o, idx, g, lo, hi);
                 });
  });
  return {out, indices};
}

// ---- avg_pool2d --------------------------------------------------------------------------------

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const PoolGeometry g = pool_geometry(self.shape(), kernel_size, stride, padding, {1}, ceil_mode);
  Tensor out = empty(g.output_shape(), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Tensor x = self.contiguous();
  visit_floating("avg_pool2d", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* o = out.data<T>();
    const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow;
    parallel_for(0, g.planes(), plane_grain(out_plane * g.kh * g.kw), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const T* src = in + p * plane;
        for (int64_t oh = 0; oh < g.oh; ++oh)
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const AvgWindow win = avg_window(g, oh, ow, count_include_pad, divisor_override);
            T sum = 0;
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += src[ih * g.w + iw];
            o[p * out_plane + oh * g.ow + ow] = sum / static_cast<T>(win.divisor);
          }
      }
    });
  });
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  const PoolGeometry g = pool_geometry(input_size, kernel_size, stride, padding, {1}, ceil_mode);
  Tensor gx = zeros(input_size, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  const Tensor gy = grad_output.contiguous();
  visit_floating("avg_pool2d_backward", gx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = gy.data<T>();
    T* dst = gx.data<T>();
    const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow;
    parallel_for(0, g.planes(), plane_grain(out_plane * g.kh * g.kw), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        T* plane_dst = dst + p * plane;
        for (int64_t oh = 0; oh < g.oh; ++oh)
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const AvgWindow win = avg_window(g, oh, ow, count_include_pad, divisor_override);
            const T share = go[p * out_plane + oh * g.ow + ow] / static_cast<T>(win.divisor);
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw) plane_dst[ih * g.w + iw] += share;
          }
      }
    });
  });
  return gx;
}

// ---- adaptive_avg_pool2d -----------------------------------------------------------------------

namespace {

// input [planes, h, w] <-> output [planes, oh, ow]; forward averages each window, backward
// spreads each output gradient evenly over its window.
template <typename T, bool kBackward> void adaptive_avg(const T* src, T* dst, int64_t planes,
                                                        int64_t h, int64_t w, int64_t oh,
                                                        int64_t ow) {
  parallel_for(0, planes, plane_grain(h * w), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p)
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t h0 = adaptive_start(i, oh, h), h1 = adaptive_end(i, oh, h);
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t w0 = adaptive_start(j, ow, w), w1 = adaptive_end(j, ow, w);
          const T count = static_cast<T>((h1 - h0) * (w1 - w0));
          if constexpr (kBackward) {
            const T share = src[(p * oh + i) * ow + j] / count;
            T* plane = dst + p * h * w;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) plane[ih * w + iw] += share;
          } else {
            const T* plane = src + p * h * w;
            T sum = 0;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * w + iw];
            dst[(p * oh + i) * ow + j] = sum / count;
          }
        }
      }
  });
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  Shape shape = self.shape();
  const size_t d = shape.size();
  const int64_t h = shape[d - 2], w = shape[d - 1];
  shape[d - 2] = output_size[0];
  shape[d - 1] = output_size.size() == 1 ? output_size[0] : output_size[1];
  // A 1x1 output (a CNN's global average pool) is each plane's mean: the reduction's row kernel
  // sums it in vector lanes of double, where the window loop below is one serial chain of adds.
  const int64_t rows_dim = static_cast<int64_t>(d) - 2;
  if (shape[d - 2] == 1 && shape[d - 1] == 1 && h * w > 0)
    return mean(self, {rows_dim, rows_dim + 1}, /*keepdim=*/true);
  Tensor out = empty(shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Tensor x = self.contiguous();
  visit_floating("adaptive_avg_pool2d", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg<T, false>(x.data<T>(), out.data<T>(), x.numel() / (h * w), h, w, shape[d - 2],
                           shape[d - 1]);
  });
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size) {
  Tensor gx = zeros(input_size, grad_output.dtype(), grad_output.device());
  const size_t d = input_size.size();
  const int64_t h = input_size[d - 2], w = input_size[d - 1];
  const int64_t oh = grad_output.size(-2), ow = grad_output.size(-1);
  if (grad_output.numel() == 0) return gx;
  const Tensor gy = grad_output.contiguous();
  visit_floating("adaptive_avg_pool2d_backward", gx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg<T, true>(gy.data<T>(), gx.data<T>(), gx.numel() / (h * w), h, w, oh, ow);
  });
  return gx;
}

}  // namespace tg::cpu
