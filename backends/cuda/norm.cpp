// CUDA layer_norm, group_norm, batch_norm and their backward ops (norm_kernels.cu): inputs made
// contiguous, per-row / per-channel statistics in float64 on the device, nothing read back. The
// running statistics of batch_norm are updated on the device, in place and without a version
// bump, as on the CPU.
#include <tuple>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "norm_kernels.h"

namespace tg::cuda {
namespace {

// t as a contiguous tensor of dtype (t itself when it already is one).
Tensor dense_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  copy_data(out, t);
  return out;
}

// An optional per-channel tensor as float64 (undefined stays undefined).
Tensor channel_values(const Tensor& t) { return t.defined() ? dense_as(t, kFloat64) : Tensor(); }

const double* f64(const Tensor& t) { return t.defined() ? t.data<double>() : nullptr; }
const void* ptr(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace

Tensor layer_norm(const Tensor& self, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  const int64_t n = Shape(normalized_shape).numel();
  if (out.numel() == 0) return out;
  const int64_t rows = self.numel() / n;
  const Tensor x = dense_as(self, self.dtype());
  const Tensor w = weight.defined() ? dense_as(weight, self.dtype()) : Tensor();
  const Tensor b = bias.defined() ? dense_as(bias, self.dtype()) : Tensor();
  Tensor mean = empty({rows}, kFloat64, self.device()),
         rstd = empty({rows}, kFloat64, self.device());
  detail::launch_row_stats(self.dtype(), x.data_ptr(), rows, n, eps, mean.data<double>(),
                           rstd.data<double>());
  detail::launch_layer_norm(self.dtype(), x.data_ptr(), mean.data<double>(), rstd.data<double>(),
                            ptr(w), ptr(b), rows, n, out.data_ptr());
  return out;
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_output,
                                                       const Tensor& self,
                                                       IntArrayRef normalized_shape,
                                                       const Tensor& weight, double eps) {
  const int64_t n = Shape(normalized_shape).numel();
  Tensor grad_input = empty(self.shape(), self.dtype(), self.device());
  Tensor grad_weight = zeros(Shape(normalized_shape), self.dtype(), self.device());
  Tensor grad_bias = zeros(Shape(normalized_shape), self.dtype(), self.device());
  if (self.numel() == 0) return {grad_input, grad_weight, grad_bias};
  const int64_t rows = self.numel() / n;
  const Tensor x = dense_as(self, self.dtype()), dy = dense_as(grad_output, self.dtype());
  const Tensor w = weight.defined() ? dense_as(weight, self.dtype()) : Tensor();
  Tensor means = empty({rows}, self.dtype(), self.device());
  Tensor rstds = empty({rows}, self.dtype(), self.device());
  detail::launch_layer_norm_backward(self.dtype(), dy.data_ptr(), x.data_ptr(), ptr(w), rows, n,
                                     eps, means.data_ptr(), rstds.data_ptr(), grad_input.data_ptr(),
                                     grad_weight.data_ptr(), grad_bias.data_ptr());
  return {grad_input, grad_weight, grad_bias};
}

Tensor group_norm(const Tensor& self, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (self.numel() == 0) return out;
  detail::AffineNorm a;
  a.n = self.size(0);
  a.channels = self.size(1);
  a.inner = self.numel() / (a.n * a.channels);
  a.groups = num_groups;
  a.eps = eps;
  const int64_t rows = a.n * num_groups, group_size = self.numel() / rows;
  const Tensor x = dense_as(self, self.dtype());
  const Tensor w = channel_values(weight), b = channel_values(bias);
  Tensor mean = empty({rows}, kFloat64, self.device()),
         rstd = empty({rows}, kFloat64, self.device());
  detail::launch_row_stats(self.dtype(), x.data_ptr(), rows, group_size, eps, mean.data<double>(),
                           rstd.data<double>());
  a.mean = mean.data<double>();
  a.spread = rstd.data<double>();
  a.w = f64(w);
  a.b = f64(b);
  detail::launch_affine_norm(self.dtype(), x.data_ptr(), a, out.data_ptr());
  return out;
}

Tensor batch_norm(const Tensor& self, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  Tensor out = empty(self.shape(), self.dtype(), self.device());
  if (self.numel() == 0) return out;  // no statistics: the running ones stay (as PyTorch)
  detail::AffineNorm a;
  a.n = self.size(0);
  a.channels = self.size(1);
  a.inner = self.numel() / (a.n * a.channels);
  a.eps = eps;
  const Tensor x = dense_as(self, self.dtype());
  Tensor mean, var;
  if (training) {
    mean = empty({a.channels}, kFloat64, self.device());
    var = empty({a.channels}, kFloat64, self.device());
    detail::launch_channel_stats(self.dtype(), x.data_ptr(), a.n, a.channels, a.inner,
                                 mean.data<double>(), var.data<double>());
  } else {
    mean = channel_values(running_mean);
    var = channel_values(running_var);
  }
  const Tensor w = channel_values(weight), b = channel_values(bias);
  a.mean = mean.data<double>();
  a.spread = var.data<double>();
  a.w = f64(w);
  a.b = f64(b);
  detail::launch_affine_norm(self.dtype(), x.data_ptr(), a, out.data_ptr());
  if (training && running_mean.defined()) {
    // running = (1 - momentum) * running + momentum * batch statistic, with the unbiased variance.
    // Written in place and, as in PyTorch, without a version bump: a graph recorded in training
    // mode never reads the running statistics.
    Tensor rm = empty({a.channels}, kFloat64, self.device());
    Tensor rv = empty({a.channels}, kFloat64, self.device());
    copy_data(rm, running_mean);
    copy_data(rv, running_var);
    const double count = static_cast<double>(a.n * a.inner);
    detail::launch_running_stats(a.channels, momentum, count / (count - 1), mean.data<double>(),
                                 var.data<double>(), rm.data<double>(), rv.data<double>());
    copy_data(running_mean, rm);
    copy_data(running_var, rv);
  }
  return out;
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad_output, const Tensor& self, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& weight, bool training, double eps) {
  const int64_t channels = self.size(1);
  Tensor grad_input = empty(self.shape(), self.dtype(), self.device());
  Tensor grad_weight = zeros({channels}, self.dtype(), self.device());
  Tensor grad_bias = zeros({channels}, self.dtype(), self.device());
  if (self.numel() == 0) return {grad_input, grad_weight, grad_bias};
  detail::BatchNormGrad a;
  a.n = self.size(0);
  a.channels = channels;
  a.inner = self.numel() / (a.n * channels);
  a.training = training;
  a.eps = eps;
  const Tensor x = dense_as(self, self.dtype()), dy = dense_as(grad_output, self.dtype());
  const Tensor rm = training ? Tensor() : channel_values(running_mean);
  const Tensor rv = training ? Tensor() : channel_values(running_var);
  const Tensor w = channel_values(weight);
  a.mean = f64(rm);
  a.var = f64(rv);
  a.w = f64(w);
  detail::launch_batch_norm_backward(self.dtype(), dy.data_ptr(), x.data_ptr(), a,
                                     grad_input.data_ptr(), grad_weight.data_ptr(),
                                     grad_bias.data_ptr());
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace tg::cuda
