#include <tapegrad/nn/utils.h>

#include <cmath>

#include <tapegrad/core/error.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/generated/functions.h>

namespace tg::nn::utils {

namespace {

// The p-norm of t's elements as a 0-d float64 tensor (the largest |element| for p = inf).
Tensor norm_of(const Tensor& t, double p) {
  const Tensor a = abs(t.to(kFloat64));
  if (a.numel() == 0) return scalar_tensor(0.0, kFloat64, t.device());
  if (std::isinf(p)) return amax(a);
  if (p == 1) return sum(a);
  if (p == 2) return sqrt(sum(a * a));
  return pow_scalar(sum(pow_scalar(a, p)), 1 / p);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  TG_CHECK(norm_type > 0, ValueError, "clip_grad_norm_",
           "norm_type must be > 0 (or infinity), got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(norm_of(g, norm_type));
  const Tensor total = norm_of(stack(norms, 0), norm_type);
  const double value = total.item<double>();
  TG_CHECK(!error_if_nonfinite || std::isfinite(value), ValueError, "clip_grad_norm_",
           "the total norm of order ", norm_type, " of the gradients is ", value,
           ", so it cannot be clipped; pass error_if_nonfinite=false to scale by it anyway");
  const double coef = std::min(1.0, max_norm / (value + 1e-6));  // nan stays nan, as PyTorch's
  for (const Tensor& g : grads) g.mul_(scalar_to_tensor(std::isnan(value) ? value : coef));
  return total.to(grads[0].dtype());
}

}  // namespace tg::nn::utils
