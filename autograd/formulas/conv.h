#pragma once
// Backward helpers of the conv, pooling and normalisation ops (namespace tg::formulas), written
// with public ops so that double backward works through them.
//
// conv_backward_input and conv_backward_weight are the two adjoints of the bilinear map
// (input, weight) -> conv(input, weight); the adjoint of each of them is again one of the three,
// so every derivative of a conv, to any order, is a conv or one of its two backward ops.
#include <array>
#include <optional>
#include <tuple>

#include <tapegrad/generated/tensor.h>

namespace tg::formulas {

// conv1d or conv2d, by weight's rank (3 or 4), without bias.
Tensor conv_nd(const Tensor& input, const Tensor& weight, IntArrayRef stride, IntArrayRef padding,
               IntArrayRef dilation, int64_t groups);

// A conv's bias gradient: grad summed over every dim but the channel dim (grad has
// weight_dim - 1 dims when unbatched, weight_dim when batched).
Tensor conv_bias_backward(const Tensor& grad, int64_t weight_dim);

// max_pool2d's input gradient: each grad element added into zeros of self's shape at the flat
// (h * W + w) index of its window's maximum, plane by plane.
Tensor max_pool2d_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices);

// adaptive_avg_pool2d_backward's gradient w.r.t. its grad_output: adaptive_avg_pool2d of grad
// to grad_output's spatial size.
Tensor adaptive_avg_pool2d_double_backward(const Tensor& grad, const Shape& grad_output_shape);

// batch_norm's three gradients, from the op batch_norm_backward (its kernel is one pass per
// channel), keeping those grad_input_mask asks for.
std::tuple<Tensor, Tensor, Tensor> batch_norm_grads(const Tensor& grad, const Tensor& self,
                                                    const Tensor& running_mean,
                                                    const Tensor& running_var, const Tensor& weight,
                                                    bool training, double eps,
                                                    const std::array<bool, 3>& grad_input_mask);

// The gradients of batch_norm_backward w.r.t. (grad_output, self, weight), given the gradients
// G, Gw, Gb of its outputs (grad_input, grad_weight, grad_bias). Per channel, with x^ and s = rstd
// (batch statistics when training, running ones otherwise), dy = grad_output, w = weight (or 1),
// <.> the mean over the channel's elements, a = <dy>, b = <dy x^>:
//   grad_input = w s (dy - a - x^ b) (training) or w s dy (eval); grad_weight = sum(dy x^);
//   grad_bias = sum(dy).
//   d/d grad_output = w s (G - <G> - x^ <G x^>) (eval: w s G) + Gw x^ + Gb
//   d/d weight      = sum(G s (dy - a - x^ b))   (eval: sum(G s dy))
//   d/d self        = w s^2 (3 b <G x^> x^ - <G (dy - a)> x^ - (dy - a) <G x^> - b (G - <G>))
//                     + Gw s (dy - a - b x^)      (eval: Gw s dy)
std::tuple<Tensor, Tensor, Tensor> batch_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& weight, bool training, double eps,
    const std::array<bool, 3>& grad_input_mask);

// grad summed over every dim but dim 1 (the channels).
Tensor sum_except_channels(const Tensor& grad);

// group_norm's three gradients, from the op group_norm_backward given the mean and rstd the
// forward saved, keeping those grad_input_mask asks for.
std::tuple<Tensor, Tensor, Tensor> group_norm_grads(const Tensor& grad, const Tensor& self,
                                                    int64_t num_groups, const Tensor& weight,
                                                    double eps, const Tensor& mean,
                                                    const Tensor& rstd,
                                                    const std::array<bool, 3>& grad_input_mask);

// The gradients of group_norm_backward w.r.t. (grad_output, self, weight), given the gradients
// G, Gw, Gb of its outputs: layer_norm's (nn_ops.h) over each (sample, group) of self viewed
// [N, groups, -1], with g = dy * w (w per channel), <.> the group's mean, x^ and s = rstd:
//   grad_input = s (g - <g> - x^ <g x^>); grad_weight = sum(dy x^), grad_bias = sum(dy) per
//   channel. d/d grad_output = w P(G) + Gw x^ + Gb, P(h) = s (h - <h> - x^ <h x^>) d/d weight =
//   sum(P(G) dy) per channel d/d self        = s^2 (x^ (3 b <G x^> - <G (g - a)>) - (g - a) <G x^>
//   - b (G - <G>))
//                     + P(Gw dy), a = <g>, b = <g x^>
std::tuple<Tensor, Tensor, Tensor> group_norm_double_backward(
    const Tensor& grad_input_grad, const Tensor& grad_weight_grad, const Tensor& grad_bias_grad,
    const Tensor& grad_output, const Tensor& self, int64_t num_groups, const Tensor& weight,
    double eps, const std::array<bool, 3>& grad_input_mask);

}  // namespace tg::formulas
