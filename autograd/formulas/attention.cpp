// Backward helpers of the attention and sequence ops, written with public ops (see attention.h).
#include <tapegrad/autograd/formulas/attention.h>

#include <cmath>
#include <limits>

#include <tapegrad/autograd/formulas/linalg.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/generated/functions.h>

namespace tg::formulas {

namespace {

// softmax(query @ key^T * scale + mask) as the forward computed it, in differentiable ops.
Tensor attention_probabilities(const Tensor& query, const Tensor& key, const Tensor& attn_mask,
                               bool is_causal, double scale) {
  Tensor scores = matmul(query, transpose_last(key)) * scale;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined())
    scores = attn_mask.dtype() == kBool
                 ? masked_fill_scalar(scores, logical_not(attn_mask), neg_inf)
                 : scores + attn_mask;
  if (is_causal) {
    const int64_t L = query.size(-2), S = key.size(-2);
    const Tensor later = triu(ones({L, S}, kBool, query.device()), 1);  // keys after the query
    scores = masked_fill_scalar(scores, later, neg_inf);
  }
  return softmax(scores, -1);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> scaled_dot_product_attention_backward(
    const Tensor& grad, const Tensor& grad_attn, const Tensor& query, const Tensor& key,
    const Tensor& value, const Tensor& attn_mask, const Tensor& attn, double dropout_p,
    bool is_causal, const std::optional<Scalar>& scale, std::array<bool, 4> grad_input_mask) {
  const int64_t E = query.size(-1);
  const double s = scale ? scale->to_double() : E > 0 ? 1 / std::sqrt(double(E)) : 1.0;
  Tensor grad_value;
  if (grad_input_mask[2]) grad_value = matmul(transpose_last(attn), grad);
  if (!grad_input_mask[0] && !grad_input_mask[1] && !grad_input_mask[3])
    return {Tensor(), Tensor(), grad_value, Tensor()};
  Tensor d_attn = matmul(grad, transpose_last(value));
  if (grad_attn.defined()) d_attn = d_attn + grad_attn;
  Tensor d_scores;
  if (dropout_p == 0) {
    d_scores = softmax_backward(d_attn, attn, -1);
  } else {
    const Tensor weighted = d_attn * attn;
    const Tensor probs = attention_probabilities(query, key, attn_mask, is_causal, s);
    d_scores = weighted - probs * sum(weighted, {-1}, true);
  }
  Tensor grad_query, grad_key, grad_mask;
  if (grad_input_mask[0]) grad_query = matmul(d_scores, key) * s;
  if (grad_input_mask[1]) grad_key = matmul(transpose_last(d_scores), query) * s;
  if (grad_input_mask[3]) grad_mask = d_scores;
  return {grad_query, grad_key, grad_value, grad_mask};
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  const int64_t d = wrap_dim("cumsum", dim, grad.dim());
  const int64_t n = grad.size(d);
  const Tensor reversed = arange(n - 1, -1, -1, kInt64, grad.device());
  return index_select(cumsum(index_select(grad, d, reversed), d), d, reversed);
}

Tensor sort_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices,
                     int64_t dim) {
  if (self_shape.empty()) return grad;
  return scatter(zeros(self_shape, grad.dtype(), grad.device()), dim, indices, grad);
}

}  // namespace tg::formulas
