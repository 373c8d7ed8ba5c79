// CPU kernels of mse_loss and binary_cross_entropy_with_logits: the elementwise loss on the
// elementwise engine (loops.h), then a sum over fixed blocks in double, so that "sum" and "mean"
// give the same bits whatever the thread count. The shapes are checked before dispatch
// (ops/checks/nn.cpp).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/shared/nn_plans.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// term(begin) + ... + term(end - 1) in double, in kLanes accumulators (independent chains of
// additions), then those added as a tree.
template <typename Term> __attribute__((always_inline)) inline double sum_terms(const Term& term,
                                                                                int64_t begin,
                                                                                int64_t end) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += term(i + k);
  for (; i < end; ++i) acc[0] += term(i);
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int k = 0; k < half; ++k) acc[k] += acc[k + half];
  return acc[0];
}

// (a[i] - b[i])^2 in double. Always inlined: the AVX2 build below must get its own copy.
template <typename T> struct SquaredError {
  const T* a;
  const T* b;
  __attribute__((always_inline)) double operator()(int64_t i) const {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    return d * d;
  }
};

// The float32 squared errors of [begin, end), also built for AVX2 and picked at run time: the
// loop converts every value to double, which the baseline build does two at a time. The same
// additions in the same order, so the same bits (no FMA: ISO C++ mode does not contract). Not
// target_clones: its load-time resolver runs before ThreadSanitizer's runtime starts.
double squared_errors_f32_baseline(const float* a, const float* b, int64_t begin, int64_t end) {
  return sum_terms(SquaredError<float>{a, b}, begin, end);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) double squared_errors_f32_avx2(const float* a, const float* b,
                                                               int64_t begin, int64_t end) {
  return sum_terms(SquaredError<float>{a, b}, begin, end);
}
#endif
double squared_errors_f32(const float* a, const float* b, int64_t begin, int64_t end) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return squared_errors_f32_avx2(a, b, begin, end);
#endif
  return squared_errors_f32_baseline(a, b, begin, end);
}

// The sum of n terms in double: blocks of kBlock terms summed in parallel (block_sum(begin,
// end)), then the block sums added in order, so the bits do not depend on the thread count.
template <typename BlockSum> double sum_blocks(int64_t n, const BlockSum& block_sum) {
  constexpr int64_t kBlock = 8192;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  parallel_for(0, blocks, kElementwiseGrain / kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      partial[static_cast<size_t>(b)] = block_sum(b * kBlock, std::min(n, (b + 1) * kBlock));
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// A 0-d tensor of dtype holding the sum of n terms, divided by n for "mean".
template <typename BlockSum> Tensor reduce_terms(int64_t n, const BlockSum& block_sum,
                                                 const std::string& reduction, DType dtype,
                                                 Device device) {
  double total = sum_blocks(n, block_sum);
  if (reduction == "mean")
    total /= static_cast<double>(n);  // 0 / 0 = nan for an empty mean, as PyTorch
  return scalar_tensor(total, dtype, device);
}

// The elementwise loss (contiguous, fresh) reduced as reduction says ("none": as it is).
Tensor reduce_loss(const char* op, const Tensor& loss, const std::string& reduction) {
  if (reduction == "none") return loss;
  return visit_floating(op, loss.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = loss.data<T>();
    const auto value = [p](int64_t i) { return static_cast<double>(p[i]); };
    return reduce_terms(
        loss.numel(), [&](int64_t b, int64_t e) { return sum_terms(value, b, e); }, reduction,
        loss.dtype(), loss.device());
  });
}

}  // namespace

Tensor mse_loss(const Tensor& self, const Tensor& target, const std::string& reduction) {
  // Fast path: one pass, no temporary, for same-shape contiguous inputs reduced to a number.
  if (reduction != "none" && self.shape() == target.shape() && self.dtype() == target.dtype() &&
      self.is_contiguous() && target.is_contiguous()) {
    return visit_floating("mse_loss", self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = self.data<T>();
      const T* b = target.data<T>();
      const auto block_sum = [a, b](int64_t begin, int64_t end) {
        if constexpr (std::is_same_v<T, float>) {
          return squared_errors_f32(a, b, begin, end);
        } else {
          return sum_terms(SquaredError<T>{a, b}, begin, end);
        }
      };
      return reduce_terms(self.numel(), block_sum, reduction, self.dtype(), self.device());
    });
  }
  const Tensor loss = binary_op<Types::NoBool>("mse_loss", self, target, [](auto a, auto b) {
    const auto d = a - b;
    return d * d;
  });
  return reduce_loss("mse_loss", loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        const std::string& reduction) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  const shared::BceWithLogitsPlan plan =
      shared::bce_with_logits_plan(self, target, weight, pos_weight);
  const DType dtype = plan.dtype;
  const Tensor &w = plan.weight, &pw = plan.pos_weight;
  Tensor loss = empty(plan.shape, dtype, self.device());
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // (1 - t) x + lw * softplus(-x), softplus(-x) = max(-x, 0) + log1p(exp(-|x|)) (never
    // overflows), lw = 1 + (pos_weight - 1) t; times weight.
    map_into<T, T, T, T, T>(
        loss,
        [](T x, T t, T wt, T pwt) {
          const T log_weight = (pwt - T(1)) * t + T(1);
          const T softplus_neg = std::max(-x, T(0)) + std::log1p(std::exp(-std::abs(x)));
          return wt * ((T(1) - t) * x + log_weight * softplus_neg);
        },
        self, target, w, pw);
  });
  return reduce_loss(op, loss, reduction);
}

}  // namespace tg::cpu
