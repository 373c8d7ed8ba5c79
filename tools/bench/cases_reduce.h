#pragma once
// Reductions and row-wise ops: full and per-dim sums, amax, mean (issues 2 and 14), and the fused
// row ops of a model: softmax, log_softmax, layer_norm, cross_entropy, forward + backward.
#include <vector>

#include "cases_common.h"

namespace tg_bench::reduce {

inline constexpr int64_t kRows = 4096, kCols = 1024;

// Full sum of 1<<24 float32 (reads 4 * N bytes).
template <class L> void sum_large(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor a = L::rand({kLargeN});
  for (auto _ : state) keep(L::sum(a));
  set_bytes(state, kF32 * kLargeN);
}

enum class Reduce { sum_dim0, sum_dim1, amax_dim1, mean_dim1_keepdim };

// One reduction of a [4096, 1024] float32 tensor (reads it once; the result is small).
template <class L, Reduce op> void reduce_dim(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({kRows, kCols});
  for (auto _ : state) {
    switch (op) {
      case Reduce::sum_dim0: keep(L::sum(x, 0)); break;
      case Reduce::sum_dim1: keep(L::sum(x, 1)); break;
      case Reduce::amax_dim1: keep(L::amax(x, 1)); break;
      case Reduce::mean_dim1_keepdim: keep(L::mean(x, 1, true)); break;
    }
  }
  set_bytes(state, kF32 * kRows * kCols);
}

enum class Row { softmax, log_softmax, layer_norm };

// y = op(x) along dim 1 of [4096, 1024] float32, then y.backward(g) with a fixed N(0, 1) g; x
// (and layer_norm's weight and bias, [1024]) require grad, grads reset to undefined each
// iteration. Reads x, writes y; reads g and x (or y), writes x.grad: 5 arrays.
template <class L, Row op> void row_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({kRows, kCols});
  typename L::Tensor w = L::randn({kCols}), b = L::randn({kCols});
  const typename L::Tensor g = L::randn({kRows, kCols});
  x.requires_grad_();
  w.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w, b);
    switch (op) {
      case Row::softmax: L::softmax(x, 1).backward(g); break;
      case Row::log_softmax: L::log_softmax(x, 1).backward(g); break;
      case Row::layer_norm: L::layer_norm(x, {kCols}, w, b).backward(g); break;
    }
    keep(x.grad());
  }
  set_bytes(state, 5 * kF32 * kRows * kCols);
}

enum class Loss { cross_entropy, nll };

// loss = cross_entropy(logits [512, 1000], target [512]) (mean over the batch), loss.backward(),
// or nll_loss of the same leaf (taken as log-probabilities); the leaf's grad reset to undefined
// each iteration. 2 MB of logits: cache-resident, so no bytes are reported.
template <class L, Loss loss> void class_loss_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor logits = L::randn({512, 1000});
  const typename L::Tensor target = L::randint(1000, {512});
  logits.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(logits);
    switch (loss) {
      case Loss::cross_entropy: L::cross_entropy(logits, target).backward(); break;
      case Loss::nll: L::nll_loss(logits, target).backward(); break;
    }
    keep(logits.grad());
  }
}

template <class L> std::vector<Case> cases() {
  return {
      {"sum_1<<24_f32", sum_large<L>, kMs},
      {"sum_dim0_4096x1024_f32", reduce_dim<L, Reduce::sum_dim0>, kMs},
      {"sum_dim1_4096x1024_f32", reduce_dim<L, Reduce::sum_dim1>, kMs},
      {"amax_dim1_4096x1024_f32", reduce_dim<L, Reduce::amax_dim1>, kMs},
      {"mean_dim1_keepdim_4096x1024_f32", reduce_dim<L, Reduce::mean_dim1_keepdim>, kMs},
      {"softmax_dim1_fwd_bwd_4096x1024_f32", row_fwd_bwd<L, Row::softmax>, kMs},
      {"log_softmax_dim1_fwd_bwd_4096x1024_f32", row_fwd_bwd<L, Row::log_softmax>, kMs},
      {"layer_norm_fwd_bwd_4096x1024_f32", row_fwd_bwd<L, Row::layer_norm>, kMs},
      {"cross_entropy_fwd_bwd_512x1000_f32", class_loss_fwd_bwd<L, Loss::cross_entropy>, kMs},
  };
}

}  // namespace tg_bench::reduce
