#pragma once
// Backward helpers of the attention and sequence ops (scaled_dot_product_attention, cumsum, sort,
// topk), namespace tg::formulas. Each is written with public ops, so double backward works.
#include <array>
#include <optional>
#include <tuple>

#include <tapegrad/core/scalar.h>
#include <tapegrad/generated/tensor.h>

namespace tg::formulas {

// scaled_dot_product_attention, with S = query @ key^T * scale + mask, P = softmax(S), the
// returned weights A = P * keep / (1 - dropout_p) (A = P without dropout) and result = A @ value.
// dA = grad @ value^T + grad_attn; then, since P * dP = dA * A elementwise,
//   dS = dA * A - P * sum(dA * A, -1)        (softmax_backward(dA, A) without dropout)
//   query: dS @ key * scale    key: dS^T @ query * scale    value: A^T @ grad    attn_mask: dS
// Only A is saved by the forward: without dropout P = A; with dropout P is recomputed here from
// query, key and the mask (A alone cannot give P where an element was dropped).
std::tuple<Tensor, Tensor, Tensor, Tensor> scaled_dot_product_attention_backward(
    const Tensor& grad, const Tensor& grad_attn, const Tensor& query, const Tensor& key,
    const Tensor& value, const Tensor& attn_mask, const Tensor& attn, double dropout_p,
    bool is_causal, const std::optional<Scalar>& scale, std::array<bool, 4> grad_input_mask);

// cumsum: each element gets the sum of the grads at and after it along dim (a reversed cumsum).
Tensor cumsum_backward(const Tensor& grad, int64_t dim);

// sort / topk values: each grad goes back to the position its value came from (0 elsewhere).
Tensor sort_backward(const Tensor& grad, const Shape& self_shape, const Tensor& indices,
                     int64_t dim);

}  // namespace tg::formulas
