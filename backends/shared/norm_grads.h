#pragma once
// The results of the norm backward ops (layer_norm, batch_norm), allocated the same way by both
// backends: grad_input like self, grad_weight and grad_bias zeros of the parameter shape, so an
// empty input returns zero parameter gradients without running a kernel.
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

}  // namespace tg::shared
