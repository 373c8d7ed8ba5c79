#pragma once
// The plain-data interface of conv_kernels.cu (im2col / col2im and the channel-major moves of the
// convolutions) and pool_kernels.cu (the 2-d pools). Sizes come from core/conv_geometry.h on the
// host; every pointer is a contiguous device buffer of the floating `dtype`.
#include "cuda_utils.h"

namespace tg::cuda::detail {

// One convolution in 2-d form (conv1d: h = kh = 1), as tg::ConvGeometry.
struct ConvDims {
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, oh = 0, ow = 0;
};

// cols [c * kh * kw, n * oh * ow] = the input patches of x [n, c, h, w] (0 in the padding).
void launch_im2col(DType dtype, const void* x, const ConvDims& g, void* cols);
// gx [n, c, h, w] = the sum of the column entries taken from each element (im2col's adjoint).
void launch_col2im(DType dtype, const void* cols, const ConvDims& g, void* gx);
// [n, oc, oh * ow] -> [oc, n * oh * ow].
void launch_to_channel_major(DType dtype, const void* y, const ConvDims& g, void* out);
// [oc, n * oh * ow] -> [n, oc, oh * ow], plus bias[o] when bias is not null.
void launch_from_channel_major(DType dtype, const void* in, const void* bias, const ConvDims& g,
                               void* y);

// One 2-d pooling over `planes` planes [h, w] -> [oh, ow], as tg::PoolGeometry.
struct PoolDims {
  int64_t planes = 0, h = 0, w = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1,
          oh = 0, ow = 0;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// out, indices [planes, oh, ow]: each window's maximum and its flat (h * w + w) position.
void launch_max_pool2d(DType dtype, const void* x, const PoolDims& g, void* out, int64_t* indices);
// out [planes, oh, ow] = each window's average.
void launch_avg_pool2d(DType dtype, const void* x, const PoolDims& g, void* out);
// gx [planes, h, w] = the sum of the shares of the windows holding each element.
void launch_avg_pool2d_backward(DType dtype, const void* gy, const PoolDims& g, void* gx);
// adaptive_avg_pool2d (backward false: x [planes, h, w] -> out [planes, oh, ow]) or its
// backward (x = grad_output [planes, oh, ow] -> out = grad_input [planes, h, w]).
void launch_adaptive_avg_pool2d(bool backward, DType dtype, const void* x, const PoolDims& g,
                                void* out);

}  // namespace tg::cuda::detail
