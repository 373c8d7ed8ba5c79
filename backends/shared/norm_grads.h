#pragma once
// The results of the norm ops (layer_norm, group_norm, batch_norm), allocated the same way by
// both backends: the forward's output and saved statistics; the backward's grad_input like self,
// grad_weight and grad_bias zeros of the parameter shape, so an empty input returns zero
// parameter gradients without running a kernel.
#include <tuple>

#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

namespace tg::shared {

struct NormGrads {
  Tensor input, weight, bias;
  std::tuple<Tensor, Tensor, Tensor> all() const { return {input, weight, bias}; }
};

inline NormGrads norm_grads(const Tensor& self, const Shape& param_shape) {
  return {empty(self.shape(), self.dtype(), self.device()),
          zeros(param_shape, self.dtype(), self.device()),
          zeros(param_shape, self.dtype(), self.device())};
}

// A norm op's output and the mean and rstd it saves for its backward (self's dtype).
struct NormOutputs {
  Tensor out, mean, rstd;
  std::tuple<Tensor, Tensor, Tensor> all() const { return {out, mean, rstd}; }
};

inline NormOutputs norm_outputs(const Tensor& self, const Shape& stats) {
  return {empty(self.shape(), self.dtype(), self.device()),
          empty(stats, self.dtype(), self.device()), empty(stats, self.dtype(), self.device())};
}

// layer_norm's statistics: self's shape with the normalized dims 1 (they broadcast against self).
inline NormOutputs layer_norm_outputs(const Tensor& self, size_t normalized_dims) {
  return norm_outputs(self, with_trailing_ones(self.shape(), normalized_dims));
}

// group_norm's statistics: [N, num_groups], as PyTorch's native_group_norm saves them.
inline NormOutputs group_norm_outputs(const Tensor& self, int64_t num_groups) {
  return norm_outputs(self, {self.size(0), num_groups});
}

}  // namespace tg::shared
