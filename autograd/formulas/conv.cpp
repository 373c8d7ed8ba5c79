// Backward helpers of the conv, pooling and normalisation ops, written with public ops (see
// conv.h for the math).
#include <tapegrad/autograd/formulas/conv.h>

#include <utility>
#include <vector>

#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

Tensor conv_nd(const Tensor& input, const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, int64_t groups) {
  if (weight.dim() == 3) return conv1d(input, weight, Tensor(), stride, padding, dilation, groups);
  return conv2d(input, weight, Tensor(), stride, padding, dilation, groups);
}

namespace {

// Every dim of a tensor with ndim dims but `keep`.
std::vector<int64_t> dims_except(int64_t ndim, int64_t keep) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (d != keep) dims.push_back(d);
  return dims;
}

// [1, C, 1, ...] with ndim entries: a per-channel vector's shape to broadcast against [N, C, ...].
Shape channel_shape(int64_t ndim, int64_t channels) {
  Shape s(static_cast<size_t>(ndim), 1);
  s[1] = channels;
  return s;
}

}  // namespace

Tensor conv_bias_backward(const Tensor& grad, int64_t weight_dim) {
  const int64_t channel_dim = grad.dim() - (weight_dim - 2) - 1;  // 1 batched, 0 unbatched
  // The spatial dims first (rows read in order), then the batch: one sum over (0, 2, 3) would
  // first copy grad into a channel-major layout.
  std::vector<int64_t> spatial;
  for (int64_t d = channel_dim + 1; d < grad.dim(); ++d) spatial.push_back(d);
  const Tensor per_channel = sum(grad, spatial);
  return channel_dim == 0 ? per_channel : sum(per_channel, {0});
}

Tensor max_pool2d_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices) {
  const int64_t plane = self_shape[self_shape.size() - 2] * self_shape.back();
  const int64_t planes = self_shape.size() == 4 ? self_shape[0] * self_shape[1] : self_shape[0];
  const int64_t out_plane = grad.size(-2) * grad.size(-1);
  const Tensor flat = zeros({planes, plane}, grad.dtype(), grad.device());
  return scatter_add(flat, 1, indices.reshape({planes, out_plane}),
                     grad.reshape({planes, out_plane}))
      .reshape(self_shape);
}

Tensor adaptive_avg_pool2d_double_backward(const Tensor& grad, const Shape& grad_output_shape) {
  const size_t d = grad_output_shape.size();
  return adaptive_avg_pool2d(grad, {grad_output_shape[d - 2], grad_output_shape[d - 1]});
}

Tensor sum_except_channels(const Tensor& grad) { return sum(grad, dims_except(grad.dim(), 1)); }

namespace {

// x^ and rstd of batch_norm: batch statistics over every dim but 1 when training, the running
// ones otherwise.
std::pair<Tensor, Tensor> batch_norm_normalize(const Tensor& self, const Tensor& running_mean,
                                               const Tensor& running_var, bool training,
                                               double eps) {
  if (training) {
    const std::vector<int64_t> dims = dims_except(self.dim(), 1);
    const Tensor centered = self - mean(self, dims, true);
    const Tensor rstd = pow_scalar(mean(centered * centered, dims, true) + eps, -0.5);
    return {centered * rstd, rstd};
  }
  const Shape shape = channel_shape(self.dim(), self.size(1));
  const Tensor rstd = pow_scalar(running_var.reshape(shape) + eps, -0.5);
  return {(self - running_mean.reshape(shape)) * rstd, rstd};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> batch_norm_grads(const Tensor& grad, const Tensor& self,
                                                    const Tensor& running_mean,
                                                    const Tensor& running_var, const Tensor& weight,
                                                    bool training, double eps,
                                                    const std::array<bool, 3>& grad_input_mask) {
  auto [gi, gw, gb] =
      batch_norm_backward(grad, self, running_mean, running_var, weight, training, eps);
  const auto [want_self, want_weight, want_bias] = grad_input_mask;
  return {want_self ? gi : Tensor(), want_weight ? gw : Tensor(), want_bias ? gb : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& weight, bool training, double eps,
    const std::array<bool, 3>& grad_input_mask) {
  const auto [want_dy, want_self, want_weight] = grad_input_mask;
  const std::vector<int64_t> dims = dims_except(self.dim(), 1);
  const Shape cshape = channel_shape(self.dim(), self.size(1));
  const auto [xhat, s] = batch_norm_normalize(self, running_mean, running_var, training, eps);
  const Tensor& G = grad_input_grad;
  const Tensor Gw = grad_weight_grad.reshape(cshape), Gb = grad_bias_grad.reshape(cshape);
  const Tensor& dy = grad_output;
  auto times_w = [&](const Tensor& t) { return weight.defined() ? t * weight.reshape(cshape) : t; };
  Tensor g_dy, g_self, g_weight;
  if (!training) {
    if (want_dy) g_dy = times_w(s * G) + Gw * xhat + Gb;
    if (want_self) g_self = Gw * s * dy;
    if (want_weight) g_weight = sum(G * s * dy, dims);
    return {g_dy, g_self, g_weight};
  }
  const Tensor a = mean(dy, dims, true), b = mean(dy * xhat, dims, true);
  const Tensor dyc = dy - a;
  const Tensor G_mean = mean(G, dims, true), G_xhat = mean(G * xhat, dims, true);
  if (want_dy) g_dy = times_w(s * (G - G_mean - xhat * G_xhat)) + Gw * xhat + Gb;
  if (want_self) {
    const Tensor inner =
        xhat * (b * G_xhat * 3.0 - mean(G * dyc, dims, true)) - dyc * G_xhat - b * (G - G_mean);
    g_self = times_w(s * s * inner) + Gw * s * (dyc - b * xhat);
  }
  if (want_weight) g_weight = sum(G * s * (dyc - xhat * b), dims);
  return {g_dy, g_self, g_weight};
}

namespace {

// self as [N, groups, C / groups * spatial].
Tensor grouped(const Tensor& t, const Shape& self_shape, int64_t num_groups) {
  int64_t per_sample = 1;
  for (size_t d = 1; d < self_shape.size(); ++d) per_sample *= self_shape[d];
  return t.reshape({self_shape[0], num_groups, per_sample / num_groups});
}

std::pair<Tensor, Tensor> group_norm_normalize(const Tensor& self, int64_t num_groups, double eps) {
  const Tensor x = grouped(self, self.shape(), num_groups);
  const Tensor centered = x - mean(x, {2}, true);
  const Tensor rstd = pow_scalar(mean(centered * centered, {2}, true) + eps, -0.5);
  return {centered * rstd, rstd};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> group_norm_grads(const Tensor& grad, const Tensor& self,
                                                    int64_t num_groups, const Tensor& weight,
                                                    double eps, const Tensor& mean,
                                                    const Tensor& rstd,
                                                    const std::array<bool, 3>& grad_input_mask) {
  auto [gi, gw, gb] = group_norm_backward(grad, self, num_groups, weight, eps, mean, rstd);
  const auto [want_self, want_weight, want_bias] = grad_input_mask;
  return {want_self ? gi : Tensor(), want_weight ? gw : Tensor(), want_bias ? gb : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> group_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, int64_t num_groups, const Tensor& weight,
    double eps, const std::array<bool, 3>& grad_input_mask) {
  const auto [want_dy, want_self, want_weight] = grad_input_mask;
  const Shape& shape = self.shape();
  const Shape cshape = channel_shape(self.dim(), self.size(1));
  // Grouped tensors are [N, groups, -1]; per-channel ones broadcast against self's shape.
  auto group = [&](const Tensor& t) { return grouped(t, shape, num_groups); };
  auto ungroup = [&](const Tensor& t) { return t.reshape(shape); };
  auto times_w = [&](const Tensor& t) { return weight.defined() ? t * weight.reshape(cshape) : t; };
  auto group_mean = [](const Tensor& t) { return mean(t, {2}, true); };
  // Named members, not a structured binding: clang 14 (the fuzz build) cannot capture those.
  const std::pair<Tensor, Tensor> normalized = group_norm_normalize(self, num_groups, eps);
  const Tensor& xhat = normalized.first;
  const Tensor& s = normalized.second;
  const Tensor dy = group(grad_output);
  const Tensor g = group(times_w(grad_output));
  // How a gradient h of x^ reaches self: rstd (h - <h> - x^ <h x^>).
  auto through_xhat = [&](const Tensor& h) {
    return s * (h - group_mean(h) - xhat * group_mean(h * xhat));
  };
  Tensor g_dy, g_self, g_weight;
  if (grad_input_grad.defined()) {
    const Tensor G = group(grad_input_grad);
    const Tensor Pg = through_xhat(G);  // d<G, grad_input>/dg
    if (want_dy) g_dy = times_w(ungroup(Pg));
    if (want_weight && weight.defined()) g_weight = sum_except_channels(ungroup(Pg * dy));
    if (want_self) {
      const Tensor a = group_mean(g), b = group_mean(g * xhat);
      const Tensor gc = g - a;
      const Tensor G_mean = group_mean(G), G_xhat = group_mean(G * xhat);
      const Tensor inner =
          xhat * (b * G_xhat * 3.0 - group_mean(G * gc)) - gc * G_xhat - b * (G - G_mean);
      g_self = ungroup(s * s * inner);
    }
  }
  auto add = [](Tensor& acc, const Tensor& t) { acc = acc.defined() ? acc + t : t; };
  if (grad_weight_grad.defined()) {  // grad_weight = sum(dy x^) per channel
    const Tensor Gw = grad_weight_grad.reshape(cshape);
    if (want_dy) add(g_dy, Gw * ungroup(xhat));
    if (want_self) add(g_self, ungroup(through_xhat(group(Gw * grad_output))));
  }
  if (grad_bias_grad.defined() && want_dy)  // grad_bias = sum(dy) per channel
    add(g_dy, grad_bias_grad.reshape(cshape).expand(shape));
  return {g_dy, g_self, g_weight};
}

}  // namespace tg::formulas
