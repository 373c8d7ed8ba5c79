#pragma once
// The results of the norm ops (layer_norm, batch_norm), allocated the same way by both backends:
// layer_norm's output and saved statistics; the backward's grad_input like self, grad_weight and
// grad_bias zeros of the parameter shape, so an empty input returns zero parameter gradients
// without running a kernel.
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

// layer_norm's output and its saved mean and rstd: self's shape with the normalized dims 1
// (they broadcast against self), self's dtype.
struct LayerNormOutputs {
  Tensor out, mean, rstd;
  std::tuple<Tensor, Tensor, Tensor> all() const { return {out, mean, rstd}; }
};

inline LayerNormOutputs layer_norm_outputs(const Tensor& self, size_t normalized_dims) {
  const Shape stats = with_trailing_ones(self.shape(), normalized_dims);
  return {empty(self.shape(), self.dtype(), self.device()),
          empty(stats, self.dtype(), self.device()), empty(stats, self.dtype(), self.device())};
}

}  // namespace tg::shared
