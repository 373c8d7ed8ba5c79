// Checks of the class-index losses nll_loss, cross_entropy and their backwards (kernels:
// backends/cpu/nll_loss.cpp). The target values are checked by the kernels (they are data).
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {
namespace {

// self [C], [N, C] or [N, C, d1, ...]; target self's shape without the class dim; weight [C].
void loss_args(const char* op, const Tensor& self, const Tensor& target, const Tensor& weight,
               double label_smoothing) {
  TG_CHECK(self.dim() >= 1, ValueError, op,
           "self must have at least 1 dim (the classes), got a 0-d tensor");
  const int64_t class_dim = self.dim() >= 2 ? 1 : 0;
  const int64_t classes = self.size(class_dim);
  Shape expected;  // self's shape without the class dim
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != class_dim) expected.push_back(self.size(d));
  TG_CHECK(target.shape() == expected, ValueError, op, "target has shape ", target.shape(),
           ", expected ", expected, " (self's shape ", self.shape(), " without the class dim ",
           class_dim, ")");
  TG_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == classes), ValueError, op,
           "weight has shape ", weight.defined() ? weight.shape() : Shape{}, ", expected [",
           classes, "] (one weight per class)");
  TG_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, op,
           "label_smoothing must be in [0, 1], got ", label_smoothing);
}

// grad_output must have the loss's shape: one entry per sample for "none", 0-d otherwise.
void loss_grad(const char* op, const Tensor& grad_output, const Tensor& target,
               const std::string& reduction) {
  const Shape expected = reduction == "none" ? target.shape() : Shape{};
  TG_CHECK(grad_output.shape() == expected, ValueError, op, "grad_output has shape ",
           grad_output.shape(), ", expected ", expected, " (the loss's shape for reduction '",
           reduction, "')");
}

}  // namespace

void nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight, const std::string&,
              int64_t) {
  loss_args("nll_loss", self, target, weight, 0);
}

void nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                       const Tensor& weight, const std::string& reduction, int64_t) {
  loss_args("nll_loss_backward", self, target, weight, 0);
  loss_grad("nll_loss_backward", grad_output, target, reduction);
}

void cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                   const std::string&, int64_t, double label_smoothing) {
  loss_args("cross_entropy", self, target, weight, label_smoothing);
}

void cross_entropy_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                            const Tensor& weight, const std::string& reduction, int64_t,
                            double label_smoothing) {
  loss_args("cross_entropy_backward", self, target, weight, label_smoothing);
  loss_grad("cross_entropy_backward", grad_output, target, reduction);
}

}  // namespace tg::checks
