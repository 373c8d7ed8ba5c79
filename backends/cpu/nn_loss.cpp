// CPU kernels of mse_loss and binary_cross_entropy_with_logits: the elementwise loss on the
// elementwise engine (loops.h), then a sum over fixed blocks in double, so that "sum" and "mean"
// give the same bits whatever the thread count. The shapes are checked before dispatch
// (ops/checks/nn.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include <tapegrad/backends/cpu/double_sums.h>
#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/cpu/simd/vec_ops.h>
#include <tapegrad/backends/shared/nn_plans.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// (a[i] - b[i])^2 in double. Always inlined: sum_terms_widest's AVX2 build gets its own copy.
template <typename T> struct SquaredError {
  const T* a;
  const T* b;
  __attribute__((always_inline)) double operator()(int64_t i) const {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    return d * d;
  }
};

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
        return sum_terms_widest(SquaredError<T>{a, b}, begin, end);
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
    const auto with_softplus = [](T x, T t, T pwt, T softplus_neg) {
      const T log_weight = (pwt - T(1)) * t + T(1);
      return (T(1) - t) * x + log_weight * softplus_neg;
    };
    if (vec_runs(dtype)) {
      // softplus(-x) on SLEEF's vector kernel first, into loss (its exp and log1p were 4/5 of
      // the op's time as scalar calls), then the rest over it in place.
      map_into<T, T>(
          loss, [](T x) { return -x; }, self);
      unary_math_in_place(vec::Unary::softplus, loss.data<T>(), loss.numel());
      map_into<T, T, T, T, T>(loss, with_softplus, self, target, pw, loss);
      if (weight.defined())
        map_into<T, T, T>(
            loss, [](T wt, T v) { return wt * v; }, w, loss);
      return;
    }
    map_into<T, T, T, T, T>(
        loss,
        [with_softplus](T x, T t, T wt, T pwt) {
          const T softplus_neg = std::max(-x, T(0)) + std::log1p(std::exp(-std::abs(x)));
          return wt * with_softplus(x, t, pwt, softplus_neg);
        },
        self, target, w, pw);
  });
  return reduce_loss(op, loss, reduction);
}

}  // namespace tg::cpu
