#pragma once
// The plain-data interface of nn_ops_kernels.cu (scaled_dot_product_attention's rows and
// binary_cross_entropy_with_logits' elementwise loss).
#include "cuda_utils.h"

namespace tg::cuda::detail {

// Each row r of the contiguous scores [rows, S] (query position r % L) in place: scaled, masked
// (bool_mask: false -> -inf; float_mask: added; both [rows, S] or null), causal keys after the
// query set to -inf, soft-maxed, then dropped with probability dropout_p (draw of element e:
// uniform_at(seed, e)) and scaled by 1 / (1 - dropout_p).
struct AttentionRows {
  int64_t rows = 0, L = 0, S = 0;
  double scale = 1, dropout_p = 0;
  bool causal = false;
  uint64_t seed = 0;
  const bool* bool_mask = nullptr;
  const void* float_mask = nullptr;  // of the scores' dtype
};
void launch_attention_rows(DType dtype, void* scores, const AttentionRows& a);

// loss = w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)) over a broadcast shape: operand 0 the
// loss, then x, t, w, pw, all of the floating `dtype`.
void launch_bce_with_logits(DType dtype, void* loss, const void* x, const void* t, const void* w,
                            const void* pw, int64_t n, const StridedLayout<5>& layout);

}  // namespace tg::cuda::detail
