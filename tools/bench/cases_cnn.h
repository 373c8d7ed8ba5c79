#pragma once
// Issue 16's CNN cases: one conv2d forward + backward, and the digits_cnn training step.
#include <vector>

#include "cases_common.h"

namespace tg_bench::cnn {

// y = conv2d(x [32, 16, 28, 28], weight [32, 16, 3, 3], bias [32], stride 1, padding 1),
// y.backward(g) with a fixed g [32, 32, 28, 28]; x, weight and bias require grad (a hidden layer:
// all three gradients), grads reset to undefined each iteration. Reports the flops of the three
// products (forward, input and weight gradients: 2 * 32 * 32 * 16 * 9 * 28 * 28 each).
template <class L> void conv2d_fwd_bwd(benchmark::State& state) {
  constexpr int64_t n = 32, c = 16, oc = 32, hw = 28, k = 3;
  L::seed(0);
  typename L::Tensor x = L::randn({n, c, hw, hw});
  typename L::Tensor w = L::randn({oc, c, k, k}) * 0.1, b = L::randn({oc});
  const typename L::Tensor g = L::randn({n, oc, hw, hw});
  x.requires_grad_();
  w.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w, b);
    L::conv2d(x, w, b, 1, 1).backward(g);
    keep(w.grad());
  }
  state.counters["flops"] = benchmark::Counter(3 * 2.0 * n * oc * c * k * k * hw * hw,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// examples/digits_cnn's training step: conv(1->16, 3x3, pad 1), BatchNorm2d, ReLU, conv(16->32),
// BatchNorm2d, ReLU, max pool 2, flatten, linear(512 -> 10) on a batch of 32 [1, 8, 8] images,
// cross_entropy, AdamW. One iteration = zero_grad + forward + loss + backward + step.
template <class L> void digits_cnn_train_step(benchmark::State& state) {
  L::seed(0);
  typename L::DigitsCnn model;
  auto optimizer = L::adamw(model.parameters());
  const typename L::Tensor x = L::randn({32, 1, 8, 8});
  const typename L::Tensor y = L::randint(10, {32});
  for (auto _ : state) {
    optimizer.zero_grad();
    const typename L::Tensor loss = L::cross_entropy(model.forward(x), y);
    loss.backward();
    optimizer.step();
    keep(loss);
  }
}

template <class L> std::vector<Case> cases() {
  return {
      {"conv2d_fwd_bwd_32x16x28x28_32x3x3_f32", conv2d_fwd_bwd<L>, kMs},
      {"digits_cnn_b32_adamw_step", digits_cnn_train_step<L>, kMs},
  };
}

}  // namespace tg_bench::cnn
