#pragma once
// Gradient utilities, as torch.nn.utils.
#include <limits>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::nn::utils {

// Scales the gradients of parameters in place so that their total norm (the norm_type-norm of
// all of them as one vector; infinity for the largest |element|) is at most max_norm, exactly as
// torch.nn.utils.clip_grad_norm_: each grad is multiplied by min(1, max_norm / (total + 1e-6)).
// Parameters without a gradient are skipped. Returns the total norm before clipping (a 0-d
// tensor of the first gradient's dtype; 0 when none has a gradient). With error_if_nonfinite a
// nan or infinite total is a ValueError and nothing is changed.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace tg::nn::utils
