// im2col, col2im and the channel-major moves of the convolutions (conv.cpp runs the GEMMs). Each
// functor computes one element of its output, so no two threads write the same place: col2im
// is written as a gather (each input element sums the column entries taken from it, in the
// CPU's (i, j) order) instead of the CPU's scatter into planes.
#include "conv_kernels.h"
#include "launch.cuh"

namespace tg::cuda::detail {
namespace {

template <typename T> struct Im2colBody {
  const T* x;
  T* cols;
  ConvDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t L = g.oh * g.ow, NL = g.n * L;
    const int64_t r = e / NL, col = e % NL;
    const int64_t c = r / (g.kh * g.kw), i = (r / g.kw) % g.kh, j = r % g.kw;
    const int64_t n = col / L, oh = (col % L) / g.ow, ow = col % g.ow;
    const int64_t ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
    const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
    cols[e] = inside ? x[((n * g.c + c) * g.h + ih) * g.w + iw] : T(0);
  }
};

template <typename T> struct Col2imBody {
  const T* cols;
  T* gx;
  ConvDims g;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t L = g.oh * g.ow, NL = g.n * L;
    const int64_t iw = e % g.w, ih = (e / g.w) % g.h, c = (e / (g.w * g.h)) % g.c,
                  n = e / (g.w * g.h * g.c);
    T acc = T(0);
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t th = ih + g.ph - i * g.dh;  // = oh * sh for the output row using this tap
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.oh) continue;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t tw = iw + g.pw - j * g.dw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.ow) continue;
        acc += cols[((c * g.kh + i) * g.kw + j) * NL + n * L + (th / g.sh) * g.ow + tw / g.sw];
      }
    }
    gx[e] = acc;
  }
};

template <typename T> struct ToChannelMajorBody {
  const T* y;
  T* out;
  int64_t oc, L, NL;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t o = e / NL, n = (e % NL) / L, l = e % L;
    out[e] = y[(n * oc + o) * L + l];
  }
};

template <typename T> struct FromChannelMajorBody {
  const T* in;
  const T* bias;  // null: none
  T* y;
  int64_t oc, L, NL;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t n = e / (oc * L), o = (e / L) % oc, l = e % L;
    y[e] = in[o * NL + n * L + l] + (bias ? bias[o] : T(0));
  }
};

}  // namespace

void launch_im2col(DType dtype, const void* x, const ConvDims& g, void* cols) {
  visit_floating("conv", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("conv", g.c * g.kh * g.kw * g.n * g.oh * g.ow,
             Im2colBody<T>{static_cast<const T*>(x), static_cast<T*>(cols), g});
  });
}

void launch_col2im(DType dtype, const void* cols, const ConvDims& g, void* gx) {
  visit_floating("conv_backward_input", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("conv_backward_input", g.n * g.c * g.h * g.w,
             Col2imBody<T>{static_cast<const T*>(cols), static_cast<T*>(gx), g});
  });
}

void launch_to_channel_major(DType dtype, const void* y, const ConvDims& g, void* out) {
  visit_floating("conv", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t L = g.oh * g.ow;
    launch_n("conv", g.oc * g.n * L,
             ToChannelMajorBody<T>{static_cast<const T*>(y), static_cast<T*>(out), g.oc, L,
                                   g.n * L});
  });
}

void launch_from_channel_major(DType dtype, const void* in, const void* bias, const ConvDims& g,
                               void* y) {
  visit_floating("conv", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t L = g.oh * g.ow;
    launch_n("conv", g.oc * g.n * L,
             FromChannelMajorBody<T>{static_cast<const T*>(in), static_cast<const T*>(bias),
                                     static_cast<T*>(y), g.oc, L, g.n * L});
  });
}

}  // namespace tg::cuda::detail
