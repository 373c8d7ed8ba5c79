#pragma once
// Backward helpers of the softmax and loss family (namespace tg::formulas): softmax, log_softmax,
// logsumexp, nll_loss, cross_entropy and their fused backward ops. All are written with public
// ops, so their own gradients (double backward) come for free.
#include <tapegrad/generated/functions.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

#include <string>

namespace tg::formulas {

// softmax_backward(g, y) = y * (g - sum(g * y)); its gradient wrt y.
Tensor softmax_backward_output_grad(const Tensor& grad, const Tensor& grad_output,
                                    const Tensor& output, int64_t dim);
// log_softmax_backward(g, y) = g - exp(y) * sum(g); its gradients wrt g and wrt y.
Tensor log_softmax_backward_grad_output_grad(const Tensor& grad, const Tensor& output, int64_t dim);
Tensor log_softmax_backward_output_grad(const Tensor& grad, const Tensor& grad_output,
                                        const Tensor& output, int64_t dim);

// logsumexp: grad * exp(self - result), with the reduced dims put back when !keepdim.
Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                          IntArrayRef dim, bool keepdim);

// The class dim of a loss input: 1, or 0 for an unbatched [C] input.
inline int64_t class_dim(int64_t ndim) { return ndim >= 2 ? 1 : 0; }

// The target distribution the loss gradient pulls softmax towards, shaped like self: for each
// non-ignored sample (target t), ((1 - eps) * w[t] * onehot(t) + (eps / C) * w) / D, where w is
// the class weight (1 without one) and D the sum of w[t] over non-ignored samples for "mean"
// (1 otherwise); 0 for ignored samples. A constant: it depends on no differentiable input.
Tensor loss_target_weights(const Tensor& target, const Tensor& weight, const Shape& self_shape,
                           DType dtype, const std::string& reduction, int64_t ignore_index,
                           double label_smoothing);

// cross_entropy_backward(g, x) = g * (a * softmax(x) - b), with b = loss_target_weights and a its
// sum over the class dim. Its gradients wrt g and wrt x.
Tensor cross_entropy_backward_grad_output_grad(const Tensor& grad, const Tensor& self,
                                               const Tensor& target, const Tensor& weight,
                                               const std::string& reduction, int64_t ignore_index,
                                               double label_smoothing);
Tensor cross_entropy_backward_self_grad(const Tensor& grad, const Tensor& grad_output,
                                        const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        int64_t ignore_index, double label_smoothing);

}  // namespace tg::formulas
