#pragma once
// Argument checks of the attention family (bmm, baddbmm, scaled_dot_product_attention): shapes,
// dtypes and options, run once before any backend kernel (the check convention of HELPERS.md).
// Each has exactly its op's parameter list and throws a tg::Error starting with "[op]".
#include <optional>

#include <tapegrad/core/scalar.h>
#include <tapegrad/core/tensor.h>

namespace tg::checks {

void bmm(const Tensor& self, const Tensor& mat2);
void baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
             const Scalar& alpha);
void scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const Tensor& attn_mask, double dropout_p, bool is_causal,
                                  const std::optional<Scalar>& scale);

}  // namespace tg::checks
