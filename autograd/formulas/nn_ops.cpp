// Backward helpers of the nn ops, written with public ops (see nn_ops.h for the math).
#include <tapegrad/autograd/formulas/nn_ops.h>

#include <tapegrad/autograd/formulas/elementwise.h>

#include <cmath>
#include <utility>
#include <vector>

#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::formulas {

namespace {

// grad * d, with grad divided by the loss's element count n when the loss was a mean.
Tensor loss_grad(const Tensor& d, const Tensor& grad, const std::string& reduction, int64_t n) {
  if (reduction == "mean") return d * (grad / static_cast<double>(n));
  return d * grad;
}

// d * weight, or d when there is no weight.
Tensor weighted(const Tensor& d, const Tensor& weight) { return weight.defined() ? d * weight : d; }

}  // namespace

Tensor gelu_second_derivative(const Tensor& self, const std::string& approximate) {
  const Tensor x2 = self * self;
  if (approximate == "tanh") {
    // gelu = x/2 * (1 + tanh(u)), u = b * (x + k x^3):
    // gelu'' = (1 - t^2) * (u' - x t u'^2 + 3 b k x^2), t = tanh(u), u' = b * (1 + 3 k x^2).
    const double b = std::sqrt(2.0 / M_PI), k = 0.044715;
    const Tensor t = tanh((self + x2 * self * k) * b);
    const Tensor du = (x2 * (3 * k) + 1.0) * b;
    return (1.0 - t * t) * (du - self * t * du * du + x2 * (3 * b * k));
  }
  // gelu = x * Phi(x): gelu'' = 2 phi(x) + x phi'(x) = phi(x) * (2 - x^2).
  const Tensor phi = exp(x2 * -0.5) * (1.0 / std::sqrt(2.0 * M_PI));
  return phi * (2.0 - x2);
}

Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p, bool train) {
  if (!train || p == 0) return grad;
  if (p == 1) return zeros_like(grad);
  return keep_where(mask, grad) * (1.0 / (1.0 - p));
}

Tensor embedding_backward(const Tensor& grad, const Shape& weight_shape, const Tensor& indices,
                          std::optional<int64_t> padding_idx) {
  const int64_t n = indices.numel();
  const Tensor rows = reshape(grad, {n, weight_shape[1]});
  // One pass (zeros where no index points): index_add into zeros cloned the zeros first.
  const Tensor out = index_select_backward(rows, weight_shape, 0, reshape(indices, {n}));
  if (!padding_idx) return out;
  const int64_t pad = *padding_idx < 0 ? *padding_idx + weight_shape[0] : *padding_idx;
  return index_fill_scalar(out, 0, scalar_tensor(pad, kInt64, grad.device()), 0);
}

namespace {

// The trailing normalized_shape.size() dims of a tensor with ndim dims, as negative dims.
std::vector<int64_t> trailing_dims(size_t count) {
  std::vector<int64_t> dims;
  for (int64_t d = -static_cast<int64_t>(count); d < 0; ++d) dims.push_back(d);
  return dims;
}

// x^ = (self - mean) * rstd over the normalized dims, and rstd = 1 / sqrt(var + eps).
std::pair<Tensor, Tensor> normalize(const Tensor& self, const std::vector<int64_t>& dims,
                                    double eps) {
  const Tensor centered = self - mean(self, dims, true);
  const Tensor rstd = pow_scalar(mean(centered * centered, dims, true) + eps, -0.5);
  return {centered * rstd, rstd};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> layer_norm_grads(const Tensor& grad, const Tensor& self,
                                                    IntArrayRef normalized_shape,
                                                    const Tensor& weight, double eps,
                                                    const Tensor& mean, const Tensor& rstd,
                                                    const std::array<bool, 3>& grad_input_mask) {
  auto [gi, gw, gb] = layer_norm_backward(grad, self, normalized_shape, weight, eps, mean, rstd);
  const auto [want_self, want_weight, want_bias] = grad_input_mask;
  return {want_self ? gi : Tensor(), want_weight ? gw : Tensor(), want_bias ? gb : Tensor()};
}

// The derivatives of layer_norm_backward's outputs (grad_input = rstd (g - mean(g) - x^ mean(g
// x^)) with g = dy * w, grad_weight = sum(dy x^), grad_bias = sum(dy), sums over the leading
// dims) with respect to dy, self and weight, given the gradients G, Gw, Gb of those outputs.
std::tuple<Tensor, Tensor, Tensor> layer_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, IntArrayRef normalized_shape,
    const Tensor& weight, double eps, const std::array<bool, 3>& grad_input_mask) {
  const auto [want_dy, want_self, want_weight] = grad_input_mask;
  const std::vector<int64_t> dims = trailing_dims(normalized_shape.size());
  std::vector<int64_t> leading;
  for (int64_t d = 0; d < self.dim() - static_cast<int64_t>(normalized_shape.size()); ++d)
    leading.push_back(d);
  auto sum_leading = [&](const Tensor& t) { return leading.empty() ? t : sum(t, leading); };
  // Named members, not a structured binding: clang 14 (the fuzz build) cannot capture those.
  const std::pair<Tensor, Tensor> normalized = normalize(self, dims, eps);
  const Tensor& xhat = normalized.first;
  const Tensor& s = normalized.second;
  const Tensor& dy = grad_output;
  const Tensor& G = grad_input_grad;
  const Tensor g = weighted(dy, weight);
  // How a gradient h of x^ reaches self: rstd (h - mean(h) - x^ mean(h x^)).
  auto through_xhat = [&](const Tensor& h) {
    return s * (h - mean(h, dims, true) - xhat * mean(h * xhat, dims, true));
  };
  Tensor g_dy, g_self, g_weight;
  if (G.defined()) {
    const Tensor Pg = through_xhat(G);  // d<G, grad_input>/dg
    if (want_dy) g_dy = weighted(Pg, weight);
    if (want_weight && weight.defined()) g_weight = sum_leading(Pg * dy);
    if (want_self) {
      const Tensor a = mean(g, dims, true), b = mean(g * xhat, dims, true);
      const Tensor gc = g - a;
      const Tensor G_mean = mean(G, dims, true), G_xhat = mean(G * xhat, dims, true);
      const Tensor inner =
          xhat * (b * G_xhat * 3.0 - mean(G * gc, dims, true)) - gc * G_xhat - b * (G - G_mean);
      g_self = s * s * inner;
    }
  }
  auto add = [](Tensor& acc, const Tensor& t) { acc = acc.defined() ? acc + t : t; };
  if (grad_weight_grad.defined()) {  // grad_weight = sum(dy x^)
    if (want_dy) add(g_dy, grad_weight_grad * xhat);
    if (want_self) add(g_self, through_xhat(grad_weight_grad * dy));
  }
  if (grad_bias_grad.defined() && want_dy)  // grad_bias = sum(dy)
    add(g_dy, grad_bias_grad * ones_like(dy));
  if (want_dy && !g_dy.defined()) g_dy = zeros_like(dy);
  if (want_self && !g_self.defined()) g_self = zeros_like(self);
  if (want_weight && weight.defined() && !g_weight.defined()) g_weight = zeros_like(weight);
  return {g_dy, g_self, g_weight};
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::string& reduction) {
  const Tensor d = (self - target) * 2.0;
  return loss_grad(d, grad, reduction, d.numel());
}

namespace {

constexpr const char* kBce = "binary_cross_entropy_with_logits";

// Shape of the unreduced loss: self's shape broadcast with weight's and pos_weight's.
Shape bce_shape(const Tensor& self, const Tensor& weight, const Tensor& pos_weight) {
  Shape shape = self.shape();
  if (weight.defined()) shape = broadcast_shapes(kBce, shape, weight.shape());
  if (pos_weight.defined()) shape = broadcast_shapes(kBce, shape, pos_weight.shape());
  return shape;
}

// loss_grad over the whole loss: d is broadcast to the loss's shape when it covers only part of it
// (weight's gradient without weight's extra dims), so that the engine can sum it down to the input.
Tensor bce_grad(const Tensor& d, const Tensor& grad, const std::string& reduction,
                const Tensor& self, const Tensor& weight, const Tensor& pos_weight) {
  const Shape shape = bce_shape(self, weight, pos_weight);
  const Tensor g = loss_grad(d, grad, reduction, shape.numel());
  return g.shape() == shape ? g : broadcast_to(g, shape);
}

}  // namespace

Tensor bce_with_logits_backward_self(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const Tensor& weight, const Tensor& pos_weight,
                                     const std::string& reduction) {
  // sigmoid(x) - t without pos_weight; never 1 - sigmoid(-x), which loses sigmoid(x) when tiny.
  const Tensor d = pos_weight.defined()
                       ? ((pos_weight - 1.0) * target + 1.0) * sigmoid(self) - pos_weight * target
                       : sigmoid(self) - target;
  return bce_grad(weighted(d, weight), grad, reduction, self, weight, pos_weight);
}

Tensor bce_with_logits_backward_target(const Tensor& grad, const Tensor& self, const Tensor& weight,
                                       const Tensor& pos_weight, const std::string& reduction) {
  const Tensor d = pos_weight.defined() ? (pos_weight - 1.0) * softplus(-self) - self : -self;
  return bce_grad(weighted(d, weight), grad, reduction, self, weight, pos_weight);
}

Tensor bce_with_logits_backward_weight(const Tensor& grad, const Tensor& self, const Tensor& target,
                                       const Tensor& weight, const Tensor& pos_weight,
                                       const std::string& reduction) {
  const Tensor log_weight = pos_weight.defined() ? (pos_weight - 1.0) * target + 1.0 : Tensor();
  const Tensor d = (1.0 - target) * self + weighted(softplus(-self), log_weight);
  return bce_grad(d, grad, reduction, self, weight, pos_weight);
}

Tensor bce_with_logits_backward_pos_weight(const Tensor& grad, const Tensor& self,
                                           const Tensor& target, const Tensor& weight,
                                           const Tensor& pos_weight, const std::string& reduction) {
  const Tensor d = target * softplus(-self);
  return bce_grad(weighted(d, weight), grad, reduction, self, weight, pos_weight);
}

}  // namespace tg::formulas
