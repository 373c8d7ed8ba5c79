// CUDA max_pool2d, avg_pool2d, adaptive_avg_pool2d and the backward ops of the average pools
// (pool_kernels.cu). Inputs are made contiguous and seen as planes [N * C, H, W]; shapes come
// from core/conv_geometry.h, as on the CPU. max_pool2d's backward is a formula (scatter_add).
#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "conv_kernels.h"

namespace tg::cuda {
namespace {

Tensor dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

detail::PoolDims dims_of(const PoolGeometry& g) {
  detail::PoolDims d;
  d.planes = g.planes();
  d.h = g.h;
  d.w = g.w;
  d.kh = g.kh;
  d.kw = g.kw;
  d.sh = g.sh;
  d.sw = g.sw;
  d.ph = g.ph;
  d.pw = g.pw;
  d.dh = g.dh;
  d.dw = g.dw;
  d.oh = g.oh;
  d.ow = g.ow;
  return d;
}

// The planes of an adaptive pool: input [..., h, w] <-> output [..., oh, ow].
detail::PoolDims adaptive_dims(const Shape& input, int64_t oh, int64_t ow) {
  detail::PoolDims d;
  const size_t n = input.size();
  d.h = input[n - 2];
  d.w = input[n - 1];
  d.planes = 1;
  for (size_t k = 0; k + 2 < n; ++k) d.planes *= input[k];
  d.oh = oh;
  d.ow = ow;
  return d;
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d(const Tensor& self, IntArrayRef kernel_size,
                                      IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                      bool ceil_mode) {
  const PoolGeometry g =
      pool_geometry(self.shape(), kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = empty(g.output_shape(), self.dtype(), self.device());
  Tensor indices = empty(g.output_shape(), kInt64, self.device());
  if (out.numel() == 0) return {out, indices};
  const Tensor x = dense(self);
  detail::launch_max_pool2d(self.dtype(), x.data_ptr(), dims_of(g), out.data_ptr(),
                            indices.data<int64_t>());
  return {out, indices};
}

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const PoolGeometry g = pool_geometry(self.shape(), kernel_size, stride, padding, {1}, ceil_mode);
  Tensor out = empty(g.output_shape(), self.dtype(), self.device());
  if (out.numel() == 0) return out;
  detail::PoolDims d = dims_of(g);
  d.count_include_pad = count_include_pad;
  d.divisor_override = divisor_override.value_or(0);
  const Tensor x = dense(self);
  detail::launch_avg_pool2d(self.dtype(), x.data_ptr(), d, out.data_ptr());
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  const PoolGeometry g = pool_geometry(input_size, kernel_size, stride, padding, {1}, ceil_mode);
  Tensor gx = empty(input_size, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  detail::PoolDims d = dims_of(g);
  d.count_include_pad = count_include_pad;
  d.divisor_override = divisor_override.value_or(0);
  const Tensor gy = dense(grad_output);
  detail::launch_avg_pool2d_backward(gx.dtype(), gy.data_ptr(), d, gx.data_ptr());
  return gx;
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  Shape shape = self.shape();
  const size_t d = shape.size();
  shape[d - 2] = output_size[0];
  shape[d - 1] = output_size.size() == 1 ? output_size[0] : output_size[1];
  Tensor out = empty(shape, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  const Tensor x = dense(self);
  detail::launch_adaptive_avg_pool2d(false, self.dtype(), x.data_ptr(),
                                     adaptive_dims(self.shape(), shape[d - 2], shape[d - 1]),
                                     out.data_ptr());
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, IntArrayRef input_size) {
  Tensor gx = empty(input_size, grad_output.dtype(), grad_output.device());
  if (gx.numel() == 0) return gx;
  if (grad_output.numel() == 0) {  // an empty output window grid: nothing flows back
    fill_data(gx, 0);
    return gx;
  }
  const Tensor gy = dense(grad_output);
  detail::launch_adaptive_avg_pool2d(true, gx.dtype(), gy.data_ptr(),
                                     adaptive_dims(Shape(input_size), grad_output.size(-2),
                                                   grad_output.size(-1)),
                                     gx.data_ptr());
  return gx;
}

}  // namespace tg::cuda
