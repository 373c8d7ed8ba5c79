// CUDA layer_norm, group_norm, batch_norm and their backward ops (norm_kernels.cu): inputs made
// contiguous, per-row / per-channel statistics in float64 on the device, nothing read back. The
// running statistics of batch_norm are updated on the device, in place and without a version
// bump, as on the CPU.
#include <tuple>

#include <tapegrad/backends/shared/norm_grads.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"
#include "norm_kernels.h"

namespace tg::cuda {
namespace {

// An optional per-channel tensor as float64 (undefined stays undefined).
Tensor channel_values(const Tensor& t) { return t.defined() ? dense_as(t, kFloat64) : Tensor(); }

const double* f64(const Tensor& t) { return t.defined() ? t.data<double>() : nullptr; }
const void* ptr(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& self, IntArrayRef normalized_shape,
                                              const Tensor& weight, const Tensor& bias,
                                              double eps) {
  const shared::NormOutputs outs = shared::layer_norm_outputs(self, normalized_shape.size());
  const int64_t n = Shape(normalized_shape).numel();
  if (self.numel() == 0) return outs.all();
  const int64_t rows = self.numel() / n;
  const Tensor x = dense_as(self, self.dtype());
  const Tensor w = weight.defined() ? dense_as(weight, self.dtype()) : Tensor();
  const Tensor b = bias.defined() ? dense_as(bias, self.dtype()) : Tensor();
  Tensor mean = empty({rows}, kFloat64, self.device()),
         rstd = empty({rows}, kFloat64, self.device());
  detail::launch_row_stats(self.dtype(), x.data_ptr(), rows, n, eps, mean.data<double>(),
                           rstd.data<double>());
  detail::launch_layer_norm(self.dtype(), x.data_ptr(), mean.data<double>(), rstd.data<double>(),
                            ptr(w), ptr(b), rows, n, outs.out.data_ptr());
  // Saved for the backward in self's dtype, as the CPU saves them.
  copy_data(outs.mean.view({rows}), mean);
  copy_data(outs.rstd.view({rows}), rstd);
  return outs.all();
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_output,
                                                       const Tensor& self,
                                                       IntArrayRef normalized_shape,
                                                       const Tensor& weight, double eps,
                                                       const Tensor& mean, const Tensor& rstd) {
  const int64_t n = Shape(normalized_shape).numel();
  const shared::NormGrads grads = shared::norm_grads(self, Shape(normalized_shape));
  if (self.numel() == 0) return grads.all();
  const int64_t rows = self.numel() / n;
  const Tensor x = dense_as(self, self.dtype()), dy = dense_as(grad_output, self.dtype());
  const Tensor w = weight.defined() ? dense_as(weight, self.dtype()) : Tensor();
  // The saved statistics, or room for the row pass to recompute them.
  const bool saved = mean.defined();
  Tensor means = saved ? dense_as(mean, self.dtype()) : empty({rows}, self.dtype(), self.device());
  Tensor rstds = saved ? dense_as(rstd, self.dtype()) : empty({rows}, self.dtype(), self.device());
  detail::launch_layer_norm_backward(self.dtype(), dy.data_ptr(), x.data_ptr(), ptr(w), rows, n,
                                     eps, saved, means.data_ptr(), rstds.data_ptr(),
                                     grads.input.data_ptr(), grads.weight.data_ptr(),
                                     grads.bias.data_ptr());
  return grads.all();
}

std::tuple<Tensor, Tensor, Tensor> group_norm(const Tensor& self, int64_t num_groups,
                                              const Tensor& weight, const Tensor& bias,
                                              double eps) {
  const shared::NormOutputs outs = shared::group_norm_outputs(self, num_groups);
  if (self.numel() == 0) return outs.all();
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
  detail::launch_affine_norm(self.dtype(), x.data_ptr(), a, outs.out.data_ptr());
  copy_data(outs.mean.view({rows}), mean);
  copy_data(outs.rstd.view({rows}), rstd);
  return outs.all();
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
  const shared::NormGrads grads = shared::norm_grads(self, {channels});
  if (self.numel() == 0) return grads.all();
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
                                     grads.input.data_ptr(), grads.weight.data_ptr(),
                                     grads.bias.data_ptr());
  return grads.all();
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad_output,
                                                       const Tensor& self, int64_t num_groups,
                                                       const Tensor& weight, double eps,
                                                       const Tensor& mean, const Tensor& rstd) {
  const int64_t channels = self.size(1);
  const shared::NormGrads grads = shared::norm_grads(self, {channels});
  if (self.numel() == 0) return grads.all();
  const int64_t n = self.size(0), inner = self.numel() / (n * channels);
  const Tensor x = dense_as(self, self.dtype()), dy = dense_as(grad_output, self.dtype());
  const Tensor w = channel_values(weight);
  // The saved statistics as the kernels' float64, or none (recomputed there).
  const Tensor means = channel_values(mean), rstds = channel_values(rstd);
  detail::launch_group_norm_backward(self.dtype(), dy.data_ptr(), x.data_ptr(), f64(w), n, channels,
                                     inner, num_groups, eps, f64(means), f64(rstds),
                                     grads.input.data_ptr(), grads.weight.data_ptr(),
                                     grads.bias.data_ptr());
  return grads.all();
}

}  // namespace tg::cuda
