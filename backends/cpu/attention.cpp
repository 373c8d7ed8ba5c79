// CPU kernels of bmm, baddbmm and scaled_dot_product_attention. The products go through
// cpu::matmul (OpenBLAS when built in); attention's scores are scaled, masked, soft-maxed and
// dropped in place, row by row, so the one [..., L, S] buffer becomes the returned weights.
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include <tapegrad/backends/cpu/counter_random.h>
#include <tapegrad/backends/cpu/linalg.h>
#include <tapegrad/backends/cpu/softmax_rows.h>
#include <tapegrad/backends/shared/nn_plans.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

Tensor bmm(const Tensor& self, const Tensor& mat2) { return cpu::matmul(self, mat2); }

// alpha * bmm(batch1, batch2) + beta * self: in BLAS's gemm for float32 and float64 (as PyTorch),
// else written into the fresh product.
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  if (std::optional<Tensor> fused =
          scaled_matmul_blas(batch1, batch2, self, {alpha.to_double(), beta.to_double()}))
    return *fused;
  Tensor result = cpu::matmul(batch1, batch2);
  // beta = 0 ignores self altogether (as BLAS and PyTorch do), so its nan and inf do not leak in.
  const bool use_self = !beta.equals(0.0);
  if ((!use_self && alpha.equals(1.0)) || result.numel() == 0) return result;
  const Tensor s = use_self ? self.broadcast_to(result.shape()).contiguous() : Tensor();
  visit_dtype("baddbmm", result.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      // Integers multiply and add as unsigned: they wrap on overflow, as in PyTorch.
      using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                            std::type_identity<T>>::type;
      const U a = static_cast<U>(alpha.to<T>()), b = static_cast<U>(beta.to<T>());
      T* out = result.data<T>();
      const T* in = use_self ? s.data<T>() : nullptr;
      parallel_for(0, result.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const U p = a * static_cast<U>(out[i]);
          out[i] = static_cast<T>(in ? p + b * static_cast<U>(in[i]) : p);
        }
      });
    }
  });
  return result;
}

namespace {

// Where row r (of the rows of length S of the attention shape) of a mask broadcast to that shape
// starts, in elements from the view's first: the mask is a view with stride 0 on its broadcast
// dims.
struct MaskRows {
  const Tensor& mask;  // expanded to the attention shape
  int64_t offset(int64_t r) const {
    int64_t off = 0;
    for (int64_t d = mask.dim() - 2; d >= 0; --d) {
      const int64_t n = mask.size(d);
      off += (r % n) * mask.strides()[d];
      r /= n;
    }
    return off;
  }
};

// Scales, masks, soft-maxes and drops one row of scores in place. i is the row's query position
// (for the causal mask), first its element index in the whole tensor (for the dropout draws).
template <typename T> void attention_row(T* x, int64_t S, int64_t i, int64_t first, double scale,
                                         bool causal, const bool* bool_mask, const T* float_mask,
                                         int64_t mask_stride, double dropout_p, uint64_t seed) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const T s = static_cast<T>(scale);
  for (int64_t j = 0; j < S; ++j) x[j] *= s;
  if (float_mask)
    for (int64_t j = 0; j < S; ++j) x[j] += float_mask[j * mask_stride];
  if (bool_mask)
    for (int64_t j = 0; j < S; ++j) x[j] = bool_mask[j * mask_stride] ? x[j] : kNegInf;
  if (causal)  // keys after the query (top-left aligned when L != S)
    for (int64_t j = i + 1; j < S; ++j) x[j] = kNegInf;
  softmax_row(x, x, S);
  if (dropout_p <= 0) return;
  const double keep = 1 - dropout_p;
  const T factor = dropout_p >= 1 ? T(0) : static_cast<T>(1 / keep);
  for (int64_t j = 0; j < S; ++j)
    x[j] = uniform_at(seed, static_cast<uint64_t>(first + j)) < keep ? x[j] * factor : T(0);
}

}  // namespace

std::tuple<Tensor, Tensor> scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const Tensor& attn_mask, double dropout_p,
                                                        bool is_causal,
                                                        const std::optional<Scalar>& scale) {
  // scores = query @ key^T, fresh and contiguous, with the batch dims of all three broadcast
  // (backends/shared/nn_plans.h).
  Tensor scores = cpu::matmul(query, key.transpose(-2, -1));
  const shared::AttentionPlan plan =
      shared::attention_plan(query, key, value, scores.shape(), scale);
  const Shape& attn_shape = plan.weights_shape;
  const int64_t L = plan.L, S = plan.S;
  if (!(attn_shape == scores.shape())) scores = scores.broadcast_to(attn_shape).contiguous();
  const double factor = plan.scale;
  const uint64_t seed = dropout_p > 0 ? random_u64() : 0;  // one draw per call, as tg::dropout
  const Tensor mask = attn_mask.defined() ? attn_mask.broadcast_to(attn_shape) : Tensor();
  const MaskRows mask_rows{mask};
  const int64_t rows = S > 0 ? scores.numel() / S : 0;
  visit_floating("scaled_dot_product_attention", scores.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = scores.data<T>();
    const bool is_bool = mask.defined() && mask.dtype() == kBool;
    const bool* bool_base = is_bool ? mask.data<bool>() : nullptr;
    const T* float_base = mask.defined() && !is_bool ? mask.data<T>() : nullptr;
    const int64_t mask_stride = mask.defined() ? mask.strides()[mask.dim() - 1] : 0;
    parallel_items(rows, S * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t off = mask.defined() ? mask_rows.offset(r) : 0;
        attention_row(x + r * S, S, r % L, r * S, factor, is_causal,
                      bool_base ? bool_base + off : nullptr,
                      float_base ? float_base + off : nullptr, mask_stride, dropout_p, seed);
      }
    });
  });
  Tensor result = cpu::matmul(scores, value);
  return {result, scores};
}

}  // namespace tg::cpu
