#pragma once
// Backward helpers for the nn ops (gelu, dropout, embedding, layer_norm, mse_loss,
// binary_cross_entropy_with_logits), namespace tg::formulas. Each is written with public ops, so
// double backward works through them.
#include <array>
#include <optional>
#include <string>
#include <tuple>

#include <tapegrad/generated/tensor.h>

namespace tg::formulas {

// gelu''(x): phi(x) * (2 - x^2) for approximate "none"; the tanh form's derivative otherwise.
// gelu_backward's gradient w.r.t. self is grad * grad_output * gelu_second_derivative(self).
Tensor gelu_second_derivative(const Tensor& self, const std::string& approximate);

// dropout: grad where the mask kept the element, scaled by 1 / (1 - p) as the forward was.
Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p, bool train);

// embedding's weight: each row of grad (one per index) added into zeros of weight's shape at its
// index (repeated indices accumulate); the padding_idx row gets 0.
Tensor embedding_backward(const Tensor& grad, const Shape& weight_shape, const Tensor& indices,
                          std::optional<int64_t> padding_idx);

// layer_norm: its three gradients from the fused layer_norm_backward op (picked by the mask),
// given the mean and rstd the forward saved.
std::tuple<Tensor, Tensor, Tensor> layer_norm_grads(const Tensor& grad, const Tensor& self,
                                                    IntArrayRef normalized_shape,
                                                    const Tensor& weight, double eps,
                                                    const Tensor& mean, const Tensor& rstd,
                                                    const std::array<bool, 3>& grad_input_mask);
// layer_norm_backward's backward (double backward of layer_norm), composed of public ops. It
// recomputes mean and rstd from self, so that their dependence on self is differentiated too
// (the saved ones are constants).
std::tuple<Tensor, Tensor, Tensor> layer_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, IntArrayRef normalized_shape,
    const Tensor& weight, double eps, const std::array<bool, 3>& grad_input_mask);

// mse_loss's self: 2 * (self - target) * grad, divided by the element count for "mean".
Tensor mse_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const std::string& reduction);

// binary_cross_entropy_with_logits, with lw = 1 + (pos_weight - 1) * target:
//   self:       weight * (lw * sigmoid(self) - pos_weight * target)
//   target:     weight * (-self + (pos_weight - 1) * softplus(-self))
//   weight:     (1 - target) * self + lw * softplus(-self)   (the unweighted loss)
//   pos_weight: weight * target * softplus(-self)
// each times grad, divided by the loss's element count for "mean". Undefined weight / pos_weight
// count as 1.
Tensor bce_with_logits_backward_self(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const Tensor& weight, const Tensor& pos_weight,
                                     const std::string& reduction);
// (the loss is linear in target, so its gradient does not depend on target)
Tensor bce_with_logits_backward_target(const Tensor& grad, const Tensor& self, const Tensor& weight,
                                       const Tensor& pos_weight, const std::string& reduction);
Tensor bce_with_logits_backward_weight(const Tensor& grad, const Tensor& self, const Tensor& target,
                                       const Tensor& weight, const Tensor& pos_weight,
                                       const std::string& reduction);
Tensor bce_with_logits_backward_pos_weight(const Tensor& grad, const Tensor& self,
                                           const Tensor& target, const Tensor& weight,
                                           const Tensor& pos_weight, const std::string& reduction);

}  // namespace tg::formulas
