// CUDA conv1d / conv2d and their two backward ops, as on the CPU (backends/cpu/conv.cpp): im2col
// on the device (conv_kernels.cu), then one batched GEMM over the groups through tg::cuda::matmul
// (cuBLAS on the GPU). The column matrix of a group is [K, N * L] (K = in_channels / groups * kH *
// kW, L = OH * OW), so the whole batch is one product. conv1d is a conv2d of height 1.
#include <tapegrad/core/conv_geometry.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "conv_kernels.h"
#include "layout.h"

namespace tg::cuda {
namespace {

detail::ConvDims dims_of(const ConvGeometry& g) {
  return {g.n, g.c, g.h, g.w, g.oc, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.oh, g.ow};
}

// The column matrix of input, shaped [groups, K, N * L].
Tensor columns(const Tensor& input, const ConvGeometry& g) {
  const Tensor x = dense(input);
  Tensor cols = empty({g.groups, g.cols_rows(), g.n * g.oh * g.ow}, x.dtype(), x.device());
  if (cols.numel() > 0) detail::launch_im2col(x.dtype(), x.data_ptr(), dims_of(g), cols.data_ptr());
  return cols;
}

// grad_output as [groups, OC / groups, N * L].
Tensor channel_major(const Tensor& grad_output, const ConvGeometry& g) {
  const Tensor gy = dense(grad_output);
  Tensor out = empty({g.groups, g.oc / g.groups, g.n * g.oh * g.ow}, gy.dtype(), gy.device());
  if (out.numel() > 0)
    detail::launch_to_channel_major(gy.dtype(), gy.data_ptr(), dims_of(g), out.data_ptr());
  return out;
}

// weight [OC, Cg, kH, kW] as [groups, OC / groups, K] (a view of its contiguous form).
Tensor weight_matrices(const Tensor& weight, const ConvGeometry& g) {
  const Tensor w = dense(weight);
  const int64_t K = g.cols_rows(), ocg = g.oc / g.groups;
  return make_view(w, {g.groups, ocg, K}, {ocg * K, K, 1}, w.storage_offset());
}

// m [B, R, C] transposed to [B, C, R], as a view (matmul makes it dense on the device).
Tensor transposed(const Tensor& m) {
  return make_view(m, {m.size(0), m.size(2), m.size(1)},
                   {m.strides()[0], m.strides()[2], m.strides()[1]}, m.storage_offset());
}

Tensor conv_forward(const Tensor& self, const Tensor& weight, const Tensor& bias,
                    const ConvGeometry& g) {
  Tensor y = empty(g.output_shape(), self.dtype(), self.device());
  if (y.numel() == 0) return y;
  // [groups, OCg, K] @ [groups, K, N * L] = [OC, N * L]; with K = 0 the product is zeros.
  const Tensor out = cuda::matmul(weight_matrices(weight, g), columns(self, g));
  const Tensor b = bias.defined() ? dense(bias) : Tensor();
  detail::launch_from_channel_major(self.dtype(), out.data_ptr(),
                                    b.defined() ? b.data_ptr() : nullptr, dims_of(g), y.data_ptr());
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
      cuda::matmul(transposed(weight_matrices(weight, g)), channel_major(grad_output, g));
  detail::launch_col2im(gx.dtype(), gcols.data_ptr(), dims_of(g), gx.data_ptr());
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
  const Tensor m = cuda::matmul(channel_major(grad_output, g), transposed(columns(input, g)));
  copy_data(gw, make_view(m, gw.shape(), gw.strides(), m.storage_offset()));
  return gw;
}

}  // namespace tg::cuda
