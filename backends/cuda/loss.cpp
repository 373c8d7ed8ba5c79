// CUDA nll_loss, cross_entropy and their backward (loss_kernels.cu). Shapes, dtypes and the
// reduction were checked before dispatch (ops/checks/loss.cpp); target values are checked on the
// device. "mean" divides by D = sum of w[t] over non-ignored samples (NaN when all are ignored),
// computed on the device: nothing is read back.
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"
#include "device_errors.h"
#include "loss_kernels.h"

namespace tg::cuda {
namespace {

struct Prepared {
  Tensor self, target, weight;
  detail::LossArgs args;
  Tensor loss, wt;  // float64 [samples]
};

// The inputs laid out for the kernels, and each sample's loss and weight (launch_loss).
Prepared prepare(const char* op, const Tensor& self, const Tensor& target, const Tensor& weight,
                 int64_t ignore_index, bool softmax, double eps) {
  Prepared p;
  p.self = dense_as(self, self.dtype());
  p.target = dense_as(target, kInt64);
  if (weight.defined()) p.weight = dense_as(weight, self.dtype());
  const int64_t class_dim = self.dim() >= 2 ? 1 : 0;
  p.args.target = p.target.data<int64_t>();
  p.args.classes = self.size(class_dim);
  for (int64_t d = class_dim + 1; d < self.dim(); ++d) p.args.inner *= self.size(d);
  p.args.samples = p.target.numel();
  p.args.ignore_index = ignore_index;
  p.args.softmax = softmax;
  p.args.eps = eps;
  p.loss = empty({p.args.samples}, kFloat64, self.device());
  p.wt = empty({p.args.samples}, kFloat64, self.device());
  detail::launch_loss(op, p.args, self.dtype(), p.self.data_ptr(),
                      p.weight.defined() ? p.weight.data_ptr() : nullptr, p.loss.data<double>(),
                      p.wt.data<double>());
  detail::checkpoint();
  return p;
}

// D for "mean", 1 otherwise, as a 0-d float64 tensor on the device.
Tensor divisor(const Prepared& p, const std::string& reduction) {
  if (reduction != "mean") return ones({}, kFloat64, p.self.device());
  return sum(p.wt, {}, false, std::nullopt);
}

Tensor reduce_losses(const Prepared& p, const Tensor& target, const std::string& reduction) {
  if (reduction == "none") {
    Tensor out = empty(target.shape(), p.self.dtype(), p.self.device());
    copy_data(out, make_view(p.loss, target.shape(), contiguous_strides(target.shape()), 0));
    return out;
  }
  const Tensor total = div(sum(p.loss, {}, false, std::nullopt), divisor(p, reduction));
  Tensor out = empty({}, p.self.dtype(), p.self.device());
  copy_data(out, total);
  return out;
}

Tensor backward(const char* op, const Tensor& grad_output, const Tensor& self, const Tensor& target,
                const Tensor& weight, const std::string& reduction, int64_t ignore_index,
                bool softmax, double eps) {
  Prepared p = prepare(op, self, target, weight, ignore_index, softmax, eps);
  p.args.per_sample = reduction == "none";
  const Tensor d = divisor(p, reduction);
  const Tensor g = dense_as(grad_output, self.dtype());
  Tensor out = zeros(self.shape(), self.dtype(), self.device());
  detail::launch_loss_backward(op, p.args, self.dtype(), p.self.data_ptr(),
                               p.weight.defined() ? p.weight.data_ptr() : nullptr, g.data_ptr(),
                               d.data<double>(), out.data_ptr());
  return out;
}

}  // namespace

Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight,
                const std::string& reduction, int64_t ignore_index) {
  const Prepared p = prepare("nll_loss", self, target, weight, ignore_index, false, 0);
  return reduce_losses(p, target, reduction);
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const Tensor& weight, const std::string& reduction, int64_t ignore_index) {
  return backward("nll_loss_backward", grad_output, self, target, weight, reduction, ignore_index,
                  false, 0);
}

Tensor cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                     const std::string& reduction, int64_t ignore_index, double label_smoothing) {
  const Prepared p =
      prepare("cross_entropy", self, target, weight, ignore_index, true, label_smoothing);
  return reduce_losses(p, target, reduction);
}

Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const Tensor& weight, const std::string& reduction,
                              int64_t ignore_index, double label_smoothing) {
  return backward("cross_entropy_backward", grad_output, self, target, weight, reduction,
                  ignore_index, true, label_smoothing);
}

}  // namespace tg::cuda
