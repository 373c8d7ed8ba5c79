// Backward helpers of the softmax and loss family; see softmax.h.
#include <tapegrad/autograd/formulas/reduce.h>
#include <tapegrad/autograd/formulas/softmax.h>

namespace tg::formulas {
namespace {

// sum(t, dim, keepdim = true): the row sums, broadcastable back over the row.
Tensor row_sum(const Tensor& t, int64_t dim) { return sum(t, std::vector<int64_t>{dim}, true); }

// grad_output of a loss put back on self's dims: unsqueezed at the class dim for "none" (one
// loss per sample), as it is (0-d) otherwise.
Tensor per_row(const Tensor& grad_output, const std::string& reduction, int64_t class_dim) {
  return reduction == "none" ? unsqueeze(grad_output, class_dim) : grad_output;
}

}  // namespace

// d/dy of y * (g - sum(g * y)) against grad G: G * (g - sum(g * y)) - g * sum(G * y).
Tensor softmax_backward_output_grad(const Tensor& grad, const Tensor& grad_output,
                                    const Tensor& output, int64_t dim) {
  return grad * (grad_output - row_sum(grad_output * output, dim)) -
         grad_output * row_sum(grad * output, dim);
}

// d/dg of g - exp(y) * sum(g) against G: G - sum(G * exp(y)).
Tensor log_softmax_backward_grad_output_grad(const Tensor& grad, const Tensor& output,
                                             int64_t dim) {
  return grad - row_sum(grad * exp(output), dim);
}

// d/dy of g - exp(y) * sum(g) against G: -G * exp(y) * sum(g).
Tensor log_softmax_backward_output_grad(const Tensor& grad, const Tensor& grad_output,
                                        const Tensor& output, int64_t dim) {
  return -(grad * exp(output)) * row_sum(grad_output, dim);
}

Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                          IntArrayRef dim, bool keepdim) {
  const Tensor g = unsqueeze_reduced(grad, self.shape(), dim, keepdim);
  return g * exp(self - unsqueeze_reduced(result, self.shape(), dim, keepdim));
}

Tensor loss_target_weights(const Tensor& target, const Tensor& weight, const Shape& self_shape,
                           DType dtype, const std::string& reduction, int64_t ignore_index,
                           double label_smoothing) {
  const int64_t ndim = static_cast<int64_t>(self_shape.size());
  const int64_t cdim = class_dim(ndim), classes = self_shape[cdim];
  int64_t inner = 1;  // samples per batch entry: the product of the dims after the class dim
  for (int64_t d = cdim + 1; d < ndim; ++d) inner *= self_shape[d];
  // Built on the host (a constant, read by loops), then moved to target's device.
  const Tensor t = target.cpu().to(kInt64).contiguous();
  const Tensor w =
      weight.defined() ? weight.cpu().to(kFloat64).contiguous() : ones({classes}, kFloat64);
  const int64_t* tp = t.data<int64_t>();
  const double* wp = w.data<double>();
  double divisor = 1;  // D: the summed weights of the non-ignored targets, for "mean"
  if (reduction == "mean") {
    divisor = 0;
    for (int64_t k = 0; k < t.numel(); ++k)
      if (tp[k] != ignore_index) divisor += wp[tp[k]];
  }
  const double eps = label_smoothing;
  Tensor out = zeros(self_shape, kFloat64);
  double* o = out.data<double>();
  for (int64_t k = 0; k < t.numel(); ++k) {  // sample k = (n, i): row n * C * inner + i
    if (tp[k] == ignore_index) continue;
    TG_ASSERT(tp[k] >= 0 && tp[k] < classes, "target validated by the forward");
    double* row = o + (k / inner) * classes * inner + k % inner;
    for (int64_t c = 0; c < classes; ++c)
      row[c * inner] = eps / static_cast<double>(classes) * wp[c] / divisor;
    row[tp[k] * inner] += (1 - eps) * wp[tp[k]] / divisor;
  }
  return out.to(dtype).to(target.device());
}

// With h = a * softmax(x) - b (the backward at grad_output 1): G * h summed over the class dim
// for "none" (grad_output has one entry per sample), over everything otherwise (grad_output 0-d).
Tensor cross_entropy_backward_grad_output_grad(const Tensor& grad, const Tensor& self,
                                               const Tensor& target, const Tensor& weight,
                                               const std::string& reduction, int64_t ignore_index,
                                               double label_smoothing) {
  const int64_t cdim = class_dim(self.dim());
  const Tensor b = loss_target_weights(target, weight, self.shape(), self.dtype(), reduction,
                                       ignore_index, label_smoothing);
  const Tensor h = row_sum(b, cdim) * softmax(self, cdim) - b;
  return reduction == "none" ? sum(grad * h, std::vector<int64_t>{cdim}) : sum(grad * h);
}

// g * (a * softmax(x) - b) is, in x, softmax with the incoming gradient scaled by g * a per row,
// so its gradient against G is softmax_backward(G * g * a, softmax(x)).
Tensor cross_entropy_backward_self_grad(const Tensor& grad, const Tensor& grad_output,
                                        const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const std::string& reduction,
                                        int64_t ignore_index, double label_smoothing) {
  const int64_t cdim = class_dim(self.dim());
  const Tensor a = row_sum(loss_target_weights(target, weight, self.shape(), self.dtype(),
                                               reduction, ignore_index, label_smoothing),
                           cdim);
  return softmax_backward(grad * per_row(grad_output, reduction, cdim) * a, softmax(self, cdim),
                          cdim);
}

}  // namespace tg::formulas
