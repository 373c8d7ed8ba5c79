// CPU kernels of conv1d / conv2d and their two backward ops, by im2col and one GEMM per group
// through cpu::matmul (OpenBLAS when built in). The column matrix of a group is [K, N * L]
// (K = in_channels / groups * kH * kW, L = OH * OW): the whole batch in one GEMM, so the small
// images of a CNN still make one large product. conv1d runs as a conv2d of height 1 (the same
// memory: every tensor below is contiguous).
#include <algorithm>
#include <cstring>

#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

namespace tg::cpu {

namespace {

// floor(a / b) for b > 0 and any sign of a.
int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The output columns [lo, hi) whose input column ow * s - p + off lies inside [0, size).
void valid_range(int64_t size, int64_t out, int64_t s, int64_t p, int64_t off, int64_t& lo,
                 int64_t& hi) {
  lo = std::clamp<int64_t>(div_floor(p - off + s - 1, s), 0, out);
  hi = std::clamp<int64_t>(div_floor(size - 1 + p - off, s) + 1, lo, out);
}

// Rows of work per task so that a task touches about kElementwiseGrain elements.
int64_t grain_for(int64_t row) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(row, 1));
}

// cols[(c, i, j)][n * L + oh * OW + ow] = x[n, c, oh * sh - ph + i * dh, ow * sw - pw + j * dw],
// 0 in the padding. Row (c, i, j) of the whole matrix is row (c % Cg, i, j) of group c / Cg's.
template <typename T> void im2col(const T* x, const ConvGeometry& g, T* cols) {
  const int64_t L = g.oh * g.ow, NL = g.n * L, taps = g.kh * g.kw;
  // One task per row (c, i, j) of the matrix, all images inside it: the index arithmetic
  // (divisions) runs once per row, not once per image.
  parallel_for(0, g.c * taps, grain_for(NL), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t c = r / taps, i = (r / g.kw) % g.kh, j = r % g.kw;
      int64_t ow_lo, ow_hi;
      valid_range(g.w, g.ow, g.sw, g.pw, j * g.dw, ow_lo, ow_hi);
      for (int64_t n = 0; n < g.n; ++n) {
        const T* plane = x + (n * g.c + c) * g.h * g.w;
        T* dst = cols + r * NL + n * L;
        // Rows are short in a small CNN (8 columns for the digits): plain loops, not a fill
        // and a memcpy call per row segment.
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          T* drow = dst + oh * g.ow;
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= g.h) {
            for (int64_t ow = 0; ow < g.ow; ++ow) drow[ow] = T(0);
            continue;
          }
          const int64_t base = ih * g.w - g.pw + j * g.dw;  // + ow * sw: column ow's element
          for (int64_t ow = 0; ow < ow_lo; ++ow) drow[ow] = T(0);
          if (g.sw == 1) {
            const T* src = plane + base + ow_lo;  // base + ow_lo >= 0: the first column inside
            for (int64_t k = 0; k < ow_hi - ow_lo; ++k) drow[ow_lo + k] = src[k];
          } else {
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) drow[ow] = plane[base + ow * g.sw];
          }
          for (int64_t ow = ow_hi; ow < g.ow; ++ow) drow[ow] = T(0);
        }
      }
    }
  });
}

// The adjoint of im2col: gx[n, c] = the sum of every column entry taken from it. One task per
// (n, c) plane, so no two tasks write the same element.
template <typename T> void col2im(const T* cols, const ConvGeometry& g, T* gx) {
  const int64_t L = g.oh * g.ow, NL = g.n * L, taps = g.kh * g.kw, plane_size = g.h * g.w;
  parallel_for(0, g.n * g.c, grain_for(taps * L), [&](int64_t lo_task, int64_t hi_task) {
    for (int64_t t = lo_task; t < hi_task; ++t) {
      const int64_t n = t / g.c, c = t % g.c;
      T* plane = gx + t * plane_size;
      std::fill(plane, plane + plane_size, T(0));
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const T* src = cols + ((c * g.kh + i) * g.kw + j) * NL + n * L;
          int64_t ow_lo, ow_hi;
          valid_range(g.w, g.ow, g.sw, g.pw, j * g.dw, ow_lo, ow_hi);
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            const int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            const int64_t base = ih * g.w - g.pw + j * g.dw;
            const T* srow = src + oh * g.ow;
            if (g.sw == 1) {  // contiguous on both sides: a loop the compiler vectorises
              T* prow = plane + base + ow_lo;  // base + ow_lo >= 0: the first column inside
              const T* from = srow + ow_lo;
              for (int64_t k = 0; k < ow_hi - ow_lo; ++k) prow[k] += from[k];
            } else {
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) plane[base + ow * g.sw] += srow[ow];
            }
          }
        }
    }
  });
}

// [N, OC, L] -> [OC, N * L]: the layout the GEMMs read the output gradient in.
template <typename T> void to_channel_major(const T* y, const ConvGeometry& g, T* out) {
  const int64_t L = g.oh * g.ow, NL = g.n * L;
  parallel_for(0, g.n * g.oc, grain_for(L), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc;
      std::memcpy(out + o * NL + n * L, y + t * L, static_cast<size_t>(L) * sizeof(T));
    }
  });
}

// [OC, N * L] -> [N, OC, L], adding bias[o] (when given) on the way.
template <typename T>
void from_channel_major(const T* in, const T* bias, const ConvGeometry& g, T* y) {
  const int64_t L = g.oh * g.ow, NL = g.n * L;
  parallel_for(0, g.n * g.oc, grain_for(L), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t n = t / g.oc, o = t % g.oc;
      const T* src = in + o * NL + n * L;
      T* dst = y + t * L;
      const T b = bias ? bias[o] : T(0);
      for (int64_t l = 0; l < L; ++l) dst[l] = src[l] + b;
    }
  });
}

// The column matrix of x, shaped [groups, K, N * L].
Tensor columns(const Tensor& input, const ConvGeometry& g) {
  const Tensor x = input.contiguous();
  Tensor cols = empty({g.groups, g.cols_rows(), g.n * g.oh * g.ow}, x.dtype(), x.device());
  visit_floating("conv", x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    im2col(x.data<T>(), g, cols.data<T>());
  });
  return cols;
}

// grad_output as [groups, OC / groups, N * L].
Tensor channel_major(const Tensor& grad_output, const ConvGeometry& g) {
  const Tensor gy = grad_output.contiguous();
  Tensor out = empty({g.groups, g.oc / g.groups, g.n * g.oh * g.ow}, gy.dtype(), gy.device());
  visit_floating("conv", gy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    to_channel_major(gy.data<T>(), g, out.data<T>());
  });
  return out;
}

// weight [OC, Cg, kH, kW] as [groups, OC / groups, K] (a view of its contiguous form).
Tensor weight_matrices(const Tensor& weight, const ConvGeometry& g) {
  const Tensor w = weight.contiguous();
  const int64_t K = g.cols_rows(), ocg = g.oc / g.groups;
  return make_view(w, {g.groups, ocg, K}, {ocg * K, K, 1}, w.storage_offset());
}

// m [B, R, C] transposed to [B, C, R], as a view (BLAS reads it in place).
Tensor transposed(const Tensor& m) {
  return make_view(m, {m.size(0), m.size(2), m.size(1)},
                   {m.strides()[0], m.strides()[2], m.strides()[1]}, m.storage_offset());
}

Tensor conv_forward(const Tensor& self, const Tensor& weight, const Tensor& bias,
                    const ConvGeometry& g) {
  Tensor y = empty(g.output_shape(), self.dtype(), self.device());
  if (y.numel() == 0) return y;
  // [groups, OCg, K] @ [groups, K, N * L] = [OC, N * L]; with K = 0 the product is zeros.
  const Tensor out = cpu::matmul(weight_matrices(weight, g), columns(self, g));
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  visit_floating("conv", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    from_channel_major(out.data<T>(), b.defined() ? b.data<T>() : nullptr, g, y.data<T>());
  });
  return y;
}

}  // namespace

Tensor conv1d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(self, weight, bias,
                      conv_geometry(1, self.shape(), weight.shape(), stride, padding, dilation,
                                    groups));
}

Tensor conv2d(const Tensor& self, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(self, weight, bias,
                      conv_geometry(2, self.shape(), weight.shape(), stride, padding, dilation,
                                    groups));
}

Tensor conv_backward_input(const Tensor& grad_output, const Tensor& weight, IntArrayRef input_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups) {
  const ConvGeometry g = conv_geometry(static_cast<int>(weight.dim()) - 2, input_size,
                                       weight.shape(), stride, padding, dilation, groups);
  Tensor gx = empty(input_size, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  if (grad_output.numel() == 0) {  // no output channels: the input had no influence
    fill_data(gx, 0);
    return gx;
  }
  // [groups, K, OCg] @ [groups, OCg, N * L] = the column matrix of the input's gradient.
  const Tensor gcols =
      cpu::matmul(transposed(weight_matrices(weight, g)), channel_major(grad_output, g));
  visit_floating("conv_backward_input", gx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    col2im(gcols.data<T>(), g, gx.data<T>());
  });
  return gx;
}

Tensor conv_backward_weight(const Tensor& grad_output, const Tensor& input, IntArrayRef weight_size,
                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                            int64_t groups) {
  const ConvGeometry g = conv_geometry(static_cast<int>(weight_size.size()) - 2, input.shape(),
                                       weight_size, stride, padding, dilation, groups);
  Tensor gw = empty(weight_size, grad_output.dtype(), grad_output.device());
  if (gw.numel() == 0) return gw;
  if (grad_output.numel() == 0) {  // an empty batch: no contribution
    fill_data(gw, 0);
    return gw;
  }
  // [groups, OCg, N * L] @ [groups, N * L, K] = [groups, OCg, K] = the weight's layout.
  const Tensor m = cpu::matmul(channel_major(grad_output, g), transposed(columns(input, g)));
  copy_data(gw, make_view(m, gw.shape(), gw.strides(), m.storage_offset()));
  return gw;
}

}  // namespace tg::cpu
