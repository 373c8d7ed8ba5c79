// CPU kernels of mse_loss and binary_cross_entropy_with_logits: the elementwise loss on the
// elementwise engine (loops.h), then a sum over fixed blocks in double, so that "sum" and "mean"
// give the same bits whatever the thread count. The shapes are checked before dispatch
// (ops/checks/nn.cpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include <tapegrad/backends/cpu/loops.h>
#include <tapegrad/backends/shared/nn_plans.h>
#include <tapegrad/generated/kernels.h>

namespace tg::cpu {

namespace {

// term(0) + ... + term(n - 1) in double: blocks of kBlock terms summed in parallel (four
// accumulators each), then the block sums added in order.
template <typename Term> double sum_blocks(int64_t n, const Term& term) {
  constexpr int64_t kBlock = 8192;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  parallel_for(0, blocks, kElementwiseGrain / kBlock, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double acc[4] = {0, 0, 0, 0};
      const int64_t end = std::min(n, (b + 1) * kBlock);
      int64_t i = b * kBlock;
      for (; i + 4 <= end; i += 4)
        for (int k = 0; k < 4; ++k) acc[k] += term(i + k);
      for (; i < end; ++i) acc[0] += term(i);
      partial[static_cast<size_t>(b)] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// A 0-d tensor of dtype holding the sum of n terms, divided by n for "mean".
template <typename Term> Tensor reduce_terms(int64_t n, const Term& term,
                                             const std::string& reduction, DType dtype,
                                             Device device) {
  double total = sum_blocks(n, term);
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
    return reduce_terms(
        loss.numel(), [p](int64_t i) { return static_cast<double>(p[i]); }, reduction, loss.dtype(),
        loss.device());
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
      auto term = [a, b](int64_t i) {
        const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
        return d * d;
      };
      return reduce_terms(self.numel(), term, reduction, self.dtype(), self.device());
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
