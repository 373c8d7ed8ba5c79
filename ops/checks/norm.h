#pragma once
// Argument checks of batch_norm and group_norm.
#include <tapegrad/core/tensor.h>

#include <cstdint>

namespace tg::checks {

void batch_norm(const Tensor& self, const Tensor& running_mean, const Tensor& running_var,
                const Tensor& weight, const Tensor& bias, bool training, double momentum,
                double eps);
void group_norm(const Tensor& self, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                double eps);

}  // namespace tg::checks
