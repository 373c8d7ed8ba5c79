#pragma once
// The backend-neutral plans of scaled_dot_product_attention and binary_cross_entropy_with_logits:
// result shapes, dtypes and constants, computed once here for the CPU and CUDA kernels (which do
// only the arithmetic). Arguments were checked before dispatch (ops/checks/attention.cpp,
// loss.cpp).
#include <cmath>
#include <cstdint>
#include <optional>

#include <tapegrad/core/scalar.h>
#include <tapegrad/core/tensor_base.h>
#include <tapegrad/generated/tensor.h>

namespace tg::shared {

struct AttentionPlan {
  Shape weights_shape;  // [batch..., L, S]
  int64_t L = 0, S = 0;
  double scale = 1;  // what the scores are multiplied by before the softmax
};

// scores = query @ key^T has the batch dims of query and key; the weights have those of value
// too (they are applied to it), so scores_shape is broadcast with value's batch dims.
inline AttentionPlan attention_plan(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Shape& scores_shape, const std::optional<Scalar>& scale) {
  AttentionPlan p;
  const int64_t E = query.size(-1);
  p.L = query.size(-2);
  p.S = key.size(-2);
  const Shape value_batch(value.shape().begin(), value.shape().end() - 2);
  p.weights_shape =
      broadcast_shapes("scaled_dot_product_attention",
                       Shape(scores_shape.begin(), scores_shape.end() - 2), value_batch);
  p.weights_shape.push_back(p.L);
  p.weights_shape.push_back(p.S);
  // With E = 0 the scores are all 0 and 1/sqrt(E) is inf: leave them 0 (uniform weights).
  p.scale = scale ? scale->to_double() : E > 0 ? 1 / std::sqrt(double(E)) : 1.0;
  return p;
}

struct BceWithLogitsPlan {
  Shape shape;  // of the unreduced loss: self, weight and pos_weight broadcast
  DType dtype;
  Tensor weight, pos_weight;  // always defined: an absent one is a 0-d 1
};

inline BceWithLogitsPlan bce_with_logits_plan(const Tensor& self, const Tensor& target,
                                              const Tensor& weight, const Tensor& pos_weight) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  BceWithLogitsPlan p;
  p.shape = self.shape();
  if (weight.defined()) p.shape = broadcast_shapes(op, p.shape, weight.shape());
  if (pos_weight.defined()) p.shape = broadcast_shapes(op, p.shape, pos_weight.shape());
  // Absent weight / pos_weight: a single 1 broadcast everywhere (read once, no allocation per
  // element).
  const Tensor one = scalar_to_tensor(1.0, self.device());
  p.weight = weight.defined() ? weight : one;
  p.pos_weight = pos_weight.defined() ? pos_weight : one;
  p.dtype = result_type({&self, &target, &p.weight, &p.pos_weight});
  return p;
}

}  // namespace tg::shared
