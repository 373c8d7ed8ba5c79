// CUDA scaled_dot_product_attention and binary_cross_entropy_with_logits. Attention is the CPU's
// plan (backends/cpu/attention.cpp): scores = query @ key^T (tg::cuda::matmul, cuBLAS on the
// GPU), one row pass on the device (nn_ops_kernels.cu) that scales, masks, soft-maxes and drops
// in place, so the scores become the returned weights, then weights @ value. The loss is one
// fused elementwise kernel, then tg::cuda's sum / mean (float64 accumulation, as the CPU).
#include <cmath>

#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"
#include "nn_ops_kernels.h"

namespace tg::cuda {
namespace {

Tensor dense_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  copy_data(out, t);
  return out;
}

}  // namespace

std::tuple<Tensor, Tensor> scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const Tensor& attn_mask, double dropout_p,
                                                        bool is_causal,
                                                        const std::optional<Scalar>& scale) {
  constexpr const char* op = "scaled_dot_product_attention";
  const int64_t E = query.size(-1), L = query.size(-2), S = key.size(-2);
  // scores = query @ key^T, fresh and contiguous, with the batch dims of all three broadcast
  // (value's too: scores must have the shape of the weights applied to it).
  Tensor scores = matmul(query, key.transpose(-2, -1));
  const Shape value_batch(value.shape().begin(), value.shape().end() - 2);
  Shape attn_shape =
      broadcast_shapes(op, Shape(scores.shape().begin(), scores.shape().end() - 2), value_batch);
  attn_shape.push_back(L);
  attn_shape.push_back(S);
  if (!(attn_shape == scores.shape()))
    scores = dense_as(scores.broadcast_to(attn_shape), scores.dtype());
  detail::AttentionRows a;
  a.L = L;
  a.S = S;
  a.rows = S > 0 ? scores.numel() / S : 0;
  // With E = 0 the scores are all 0 and 1/sqrt(E) is inf: leave them 0 (uniform weights).
  a.scale = scale ? scale->to_double() : E > 0 ? 1 / std::sqrt(double(E)) : 1.0;
  a.dropout_p = dropout_p;
  a.causal = is_causal;
  a.seed = dropout_p > 0 ? random_u64() : 0;  // one draw per call, as on the CPU
  Tensor mask;
  if (attn_mask.defined()) {
    const bool is_bool = attn_mask.dtype() == kBool;
    mask = dense_as(attn_mask.broadcast_to(attn_shape), is_bool ? kBool : scores.dtype());
    if (is_bool) {
      a.bool_mask = mask.data<bool>();
    } else {
      a.float_mask = mask.data_ptr();
    }
  }
  if (a.rows > 0) detail::launch_attention_rows(scores.dtype(), scores.data_ptr(), a);
  Tensor result = matmul(scores, value);
  return {result, scores};
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        const std::string& reduction) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  Shape shape = self.shape();
  if (weight.defined()) shape = broadcast_shapes(op, shape, weight.shape());
  if (pos_weight.defined()) shape = broadcast_shapes(op, shape, pos_weight.shape());
  // Absent weight / pos_weight: a single 1 broadcast everywhere.
  const Tensor one = scalar_to_tensor(1.0, self.device());
  const Tensor& w0 = weight.defined() ? weight : one;
  const Tensor& pw0 = pos_weight.defined() ? pos_weight : one;
  const DType dtype = result_type({&self, &target, &w0, &pw0});
  auto as_dtype = [&](const Tensor& t) { return t.dtype() == dtype ? t : t.to(dtype); };
  const Tensor x = as_dtype(self), t = as_dtype(target), w = as_dtype(w0), pw = as_dtype(pw0);
  Tensor loss = empty(shape, dtype, self.device());
  if (loss.numel() > 0) {
    const auto layout =
        detail::make_layout<5>(op, shape,
                               {loss.strides(), broadcast_strides(op, x, shape),
                                broadcast_strides(op, t, shape), broadcast_strides(op, w, shape),
                                broadcast_strides(op, pw, shape)});
    detail::launch_bce_with_logits(dtype, loss.data_ptr(), x.data_ptr(), t.data_ptr(), w.data_ptr(),
                                   pw.data_ptr(), loss.numel(), layout);
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss, {}, false, std::nullopt);
  return mean(loss, {}, false);
}

}  // namespace tg::cuda
