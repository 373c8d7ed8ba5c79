#pragma once
// The constants of one fused optimizer step, as plain data. nn/optim.cpp computes them once per
// step; the CPU loops there and the CUDA backend's fused kernels (backends/cuda/optim_kernels.cu,
// reached through tg::cuda::detail::sgd_step / adam_step in core/cuda.h) apply the same
// per-element formulas to them, in the parameter's own type, so a device step gives the CPU's
// update. Plain C++17: the .cu files include it.

namespace tg::detail {

// p -= lr * (nesterov ? d + momentum * b : b), d = g + weight_decay * p, and with a momentum
// buffer b = first ? d : momentum * b + dampening_complement * d (b = d when momentum is 0).
struct SgdStepArgs {
  double lr = 0, weight_decay = 0, momentum = 0, dampening_complement = 1;
  bool nesterov = false, first = false;
};

// g' = g + l2 * p; m = beta1 m + (1 - beta1) g'; v = beta2 v + (1 - beta2) g'^2 (vmax = max(vmax,
// v) with amsgrad); p = p * shrink - step_size * m / (sqrt(v) / sqrt_bc2 + eps).
struct AdamStepArgs {
  double step_size = 0, sqrt_bc2 = 1, shrink = 1, l2 = 0, beta1 = 0, beta2 = 0, eps = 0;
  bool amsgrad = false;
};

}  // namespace tg::detail
