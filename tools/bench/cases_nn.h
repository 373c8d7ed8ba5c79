#pragma once
// The building blocks of a model (issue 14): embedding, matmul, linear, layout copies (transpose
// to contiguous, cat), an AdamW step; and issue 4's whole MLP training step.
#include <vector>

#include "cases_common.h"

namespace tg_bench::nn {

// out = embedding(weight [50000, 128], ids [8192]), out.backward(g) with a fixed g [8192, 128];
// weight requires grad (a dense gradient, reset to undefined each iteration). Bytes: the ids,
// the rows read and the output written, then the table's gradient written and g read.
template <class L> void embedding_fwd_bwd(benchmark::State& state) {
  constexpr int64_t rows = 50000, dim = 128, ids = 8192;
  L::seed(0);
  typename L::Tensor weight = L::randn({rows, dim});
  const typename L::Tensor index = L::randint(rows, {ids});
  const typename L::Tensor g = L::randn({ids, dim});
  weight.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(weight);
    L::embedding(weight, index).backward(g);
    keep(weight.grad());
  }
  set_bytes(state, 8 * ids + kF32 * (3 * ids * dim + rows * dim));
}

// [batch,] [m, k] x [k, n] float32 (batch 0: 2-d operands); forward only. Reports flops, the
// 2*m*n*k multiply-adds per matrix, as a rate.
template <class L, int64_t batch, int64_t m, int64_t k, int64_t n>
void matmul(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor a = batch ? L::randn({batch, m, k}) : L::randn({m, k});
  const typename L::Tensor b = batch ? L::randn({batch, k, n}) : L::randn({k, n});
  for (auto _ : state) keep(L::matmul(a, b));
  state.counters["flops"] = benchmark::Counter(2.0 * (batch ? batch : 1) * m * n * k,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// y = linear(x [256, 512], weight [512, 512], bias [512]), y.backward(g); x, weight and bias
// require grad (a hidden layer: all three gradients), grads reset to undefined each iteration.
template <class L> void linear_fwd_bwd(benchmark::State& state) {
  constexpr int64_t batch = 256, in = 512, out = 512;
  L::seed(0);
  typename L::Tensor x = L::randn({batch, in});
  typename L::Tensor w = L::randn({out, in}) * 0.05, b = L::randn({out});
  const typename L::Tensor g = L::randn({batch, out});
  x.requires_grad_();
  w.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w, b);
    L::linear(x, w, b).backward(g);
    keep(w.grad());
  }
}

// contiguous() of the transpose of a [4096, 4096] float32 tensor: reads 64 MiB in column order,
// writes 64 MiB.
template <class L> void contiguous_transposed(benchmark::State& state) {
  constexpr int64_t n = 4096;
  L::seed(0);
  const typename L::Tensor t = L::transpose(L::rand({n, n}), 0, 1);
  for (auto _ : state) keep(L::contiguous(t));
  set_bytes(state, 2 * kF32 * n * n);
}

// cat of 8 [512, 1024] float32 tensors along dim 0: reads 16 MiB, writes 16 MiB.
template <class L> void cat8(benchmark::State& state) {
  constexpr int64_t parts = 8, rows = 512, cols = 1024;
  L::seed(0);
  std::vector<typename L::Tensor> tensors;
  for (int64_t i = 0; i < parts; ++i) tensors.push_back(L::rand({rows, cols}));
  for (auto _ : state) keep(L::cat(tensors, 0));
  set_bytes(state, 2 * kF32 * parts * rows * cols);
}

// One AdamW step (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 1e-2: both libraries'
// defaults) on one float32 parameter of 2^20 elements with a fixed gradient. Reads param, grad
// and the two moments, writes param and the moments: 7 arrays.
template <class L> void adamw_step(benchmark::State& state) {
  constexpr int64_t n = int64_t{1} << 20;
  L::seed(0);
  typename L::Tensor p = L::randn({n});
  p.requires_grad_();
  L::set_grad(p, L::randn({n}));
  auto optimizer = L::adamw({p});
  for (auto _ : state) {
    optimizer.step();
    keep(p);
  }
  set_bytes(state, 7 * kF32 * n);
}

// Issue 4's training step: an MLP 784-256-128-10 (ReLU), batch 64, cross_entropy, SGD(lr 0.01).
// One iteration = zero_grad + forward + loss + backward + step.
template <class L> void mlp_train_step(benchmark::State& state) {
  L::seed(0);
  typename L::Mlp model({784, 256, 128, 10});
  auto optimizer = L::sgd(model.parameters(), 0.01);
  const typename L::Tensor x = L::randn({64, 784});
  const typename L::Tensor y = L::randint(10, {64});
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
      {"embedding_fwd_bwd_50000x128_8192ids_f32", embedding_fwd_bwd<L>, kMs},
      {"matmul_512x512x512_f32", matmul<L, 0, 512, 512, 512>, kMs},
      {"matmul_64x784x256_f32", matmul<L, 0, 64, 784, 256>, kMs},
      {"matmul_batched_32x128x64x128_f32", matmul<L, 32, 128, 64, 128>, kMs},
      {"linear_fwd_bwd_256x512_512_f32", linear_fwd_bwd<L>, kMs},
      {"contiguous_transposed_4096x4096_f32", contiguous_transposed<L>, kMs},
      {"cat_8x512x1024_f32", cat8<L>, kMs},
      {"adamw_step_1M_f32", adamw_step<L>, kMs},
      {"mlp_784_256_128_10_b64_sgd_step", mlp_train_step<L>, kMs},
  };
}

}  // namespace tg_bench::nn
