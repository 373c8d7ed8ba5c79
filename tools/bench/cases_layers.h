#pragma once
// Layer and loss ops beyond the issue-14 table that the twenty-third session's side-by-side sweep
// found slow (docs/PERFORMANCE.md): the norms of a CNN, a global average pool, leaky_relu, a
// concatenation along rows, one_hot, nll_loss, the logits loss of a binary classifier, a mask's
// logical_not and masked_fill, and an elementwise op on a transposed view; and from the
// twenty-fourth session's sweep a column broadcast, an expanded row copied, a float to int64
// conversion, baddbmm and conv1d; and depthwise conv1d / conv2d (twenty-fifth session; conv2d
// with stride 2, twenty-seventh).
// Forward+backward cases reset the leaves' grads to undefined each iteration and back-propagate a
// fixed N(0, 1) g.
#include <vector>

#include "cases_common.h"
#include "cases_reduce.h"

namespace tg_bench::layers {

inline constexpr int64_t kN = 32, kC = 64, kH = 28, kW = 28;  // a CNN's feature maps
inline constexpr int64_t kMaps = kN * kC * kH * kW;

enum class Norm { group, batch };

// group_norm(x, 8 groups, w, b) or training batch_norm(x, w, b) on [32, 64, 28, 28], then
// backward: reads x, writes y; reads g and x, writes x.grad.
template <class L, Norm op> void norm_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({kN, kC, kH, kW});
  typename L::Tensor w = L::randn({kC}), b = L::randn({kC});
  const typename L::Tensor g = L::randn({kN, kC, kH, kW});
  x.requires_grad_();
  w.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w, b);
    switch (op) {
      case Norm::group: L::group_norm(x, 8, w, b).backward(g); break;
      case Norm::batch: L::batch_norm_train(x, w, b).backward(g); break;
    }
    keep(x.grad());
  }
  set_bytes(state, 5 * kF32 * kMaps);
}

// adaptive_avg_pool2d(x, 1x1) of [32, 64, 28, 28]: a global average pool (reads x once).
template <class L> void global_avg_pool(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({kN, kC, kH, kW});
  for (auto _ : state) keep(L::adaptive_avg_pool2d(x, {1, 1}));
  set_bytes(state, kF32 * kMaps);
}

// leaky_relu(x).backward(g) on 1<<22 values: reads x, writes y; reads g and x, writes x.grad.
template <class L> void leaky_relu_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({kLargeN / 4});
  const typename L::Tensor g = L::randn({kLargeN / 4});
  x.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x);
    L::leaky_relu(x).backward(g);
    keep(x.grad());
  }
  set_bytes(state, 5 * kF32 * kLargeN / 4);
}

// (x.t() * 2).backward(g) with x [4096, 1024]: an elementwise op on a transposed view.
template <class L> void mul_transposed_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({4096, 1024});
  const typename L::Tensor g = L::randn({1024, 4096});
  x.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x);
    (L::transpose(x, 0, 1) * 2.0).backward(g);
    keep(x.grad());
  }
  set_bytes(state, 4 * kF32 * 4096 * 1024);
}

// cat of 8 [512, 1024] along dim 1: rows of 1024 values interleaved into [512, 8192].
template <class L> void cat_dim1(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor p = L::randn({512, 1024});
  const std::vector<typename L::Tensor> parts(8, p);
  for (auto _ : state) keep(L::cat(parts, 1));
  set_bytes(state, 2 * 8 * kF32 * 512 * 1024);
}

// one_hot of 4096 int64 ids in [0, 512): writes a [4096, 512] int64 result.
template <class L> void one_hot(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor ids = L::randint(512, {4096});
  for (auto _ : state) keep(L::one_hot(ids, 512));
  set_bytes(state, 8 * 4096 * 512);
}

// binary_cross_entropy_with_logits(x, p) (mean) over 1<<22 logits and targets in [0, 1).
template <class L> void bce_with_logits(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({kLargeN / 4}), p = L::rand({kLargeN / 4});
  for (auto _ : state) keep(L::bce_with_logits(x, p));
  set_bytes(state, 2 * kF32 * kLargeN / 4);
}

enum class Mask { logical_not, masked_fill };

// logical_not(mask) or masked_fill(a, mask, 0) with a random mask (half true) of 1<<22 values.
template <class L, Mask op> void with_mask(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor a = L::randn({kLargeN / 4});
  const typename L::Tensor mask = L::gt(L::randn({kLargeN / 4}), L::scalar(0.0));
  for (auto _ : state) {
    switch (op) {
      case Mask::logical_not: keep(L::logical_not(mask)); break;
      case Mask::masked_fill: keep(L::masked_fill(a, mask, 0.0)); break;
    }
  }
  set_bytes(state, (op == Mask::logical_not ? 2 : 9) * kLargeN / 4);
}

enum class Layout { sub_column, expand_row, to_int64 };

// x - x.mean(1, keepdim) with the mean made once (a column broadcast), a [1, 1024] row expanded
// to [4096, 1024] and copied, or x.to(int64): each writes one [4096, 1024] result.
template <class L, Layout op> void layouts(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({4096, 1024});
  const typename L::Tensor column = L::mean(x, 1, true), row = L::randn({1, 1024});
  for (auto _ : state) {
    switch (op) {
      case Layout::sub_column: keep(x - column); break;
      case Layout::expand_row: keep(L::contiguous(L::expand(row, {4096, 1024}))); break;
      case Layout::to_int64: keep(L::to_int64(x)); break;
    }
  }
  set_bytes(state, (op == Layout::expand_row ? 1
                    : op == Layout::to_int64 ? 3
                                             : 2) *
                       kF32 * 4096 * 1024);
}

// baddbmm(c, a, b): c [32, 128, 128] + a [32, 128, 64] x b [32, 64, 128] (attention's scores).
template <class L> void baddbmm(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor c = L::randn({32, 128, 128});
  const typename L::Tensor a = L::randn({32, 128, 64}), b = L::randn({32, 64, 128});
  for (auto _ : state) keep(L::baddbmm(c, a, b));
}

// conv1d(x [32, 64, 256], w [64, 64, 5], padding 2), forward, then forward+backward with x and
// w requiring grad.
template <class L, bool backward> void conv1d(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({32, 64, 256}), w = L::randn({64, 64, 5});
  const typename L::Tensor g = L::randn({32, 64, 256});
  if (backward) {
    x.requires_grad_();
    w.requires_grad_();
  }
  for (auto _ : state) {
    if (!backward) {
      keep(L::conv1d(x, w, 2));
      continue;
    }
    clear_grads<L>(x, w);
    L::conv1d(x, w, 2).backward(g);
    keep(x.grad());
  }
}

// A downsampling conv1d, as in an audio codec's encoder: x [16, 128, 1024], w [128, 128, 4],
// stride 2, padding 1 (kernel twice the stride); forward+backward with x and w requiring grad.
template <class L> void strided_conv1d_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({16, 128, 1024}), w = L::randn({128, 128, 4});
  const typename L::Tensor g = L::randn({16, 128, 512});
  x.requires_grad_();
  w.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w);
    L::conv1d(x, w, 1, 1, 2).backward(g);
    keep(x.grad());
  }
}

// A depthwise causal conv1d, as in a Mamba or Conformer block: x [8, 256, 1024], w [256, 1, 4],
// padding 3, groups 256; forward+backward with x and w requiring grad.
template <class L> void depthwise_conv1d_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({8, 256, 1024}), w = L::randn({256, 1, 4});
  const typename L::Tensor g = L::randn({8, 256, 1027});
  x.requires_grad_();
  w.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w);
    L::conv1d(x, w, 3, 256).backward(g);
    keep(x.grad());
  }
}

// A depthwise 3x3 conv2d, as in a MobileNet block: x [32, 64, 28, 28], w [64, 1, 3, 3], padding
// 1, groups 64, stride 1 or (a block that halves the map) 2; forward+backward with x and w
// requiring grad.
template <class L, int64_t kStride> void depthwise_conv2d_fwd_bwd(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor x = L::randn({kN, kC, kH, kW}), w = L::randn({kC, 1, 3, 3});
  const int64_t oh = (kH - 1) / kStride + 1, ow = (kW - 1) / kStride + 1;
  const typename L::Tensor g = L::randn({kN, kC, oh, ow});
  x.requires_grad_();
  w.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x, w);
    L::conv2d(x, w, typename L::Tensor(), kStride, 1, kC).backward(g);
    keep(x.grad());
  }
}

template <class L> std::vector<Case> cases() {
  return {
      {"group_norm_fwd_bwd_32x64x28x28_g8_f32", norm_fwd_bwd<L, Norm::group>, kMs},
      {"batch_norm_train_fwd_bwd_32x64x28x28_f32", norm_fwd_bwd<L, Norm::batch>, kMs},
      {"adaptive_avg_pool2d_1x1_32x64x28x28_f32", global_avg_pool<L>, kMs},
      {"leaky_relu_fwd_bwd_1<<22_f32", leaky_relu_fwd_bwd<L>, kMs},
      {"mul_transposed_fwd_bwd_4096x1024_f32", mul_transposed_fwd_bwd<L>, kMs},
      {"cat_dim1_8x512x1024_f32", cat_dim1<L>, kMs},
      {"one_hot_4096_512", one_hot<L>, kMs},
      {"nll_loss_fwd_bwd_512x1000_f32", reduce::class_loss_fwd_bwd<L, reduce::Loss::nll>, kMs},
      {"bce_with_logits_1<<22_f32", bce_with_logits<L>, kMs},
      {"logical_not_1<<22", with_mask<L, Mask::logical_not>, kMs},
      {"masked_fill_random_mask_1<<22_f32", with_mask<L, Mask::masked_fill>, kMs},
      {"sub_column_4096x1024_4096x1_f32", layouts<L, Layout::sub_column>, kMs},
      {"expand_row_contiguous_4096x1024_f32", layouts<L, Layout::expand_row>, kMs},
      {"to_int64_4096x1024_f32", layouts<L, Layout::to_int64>, kMs},
      {"baddbmm_32x128x64x128_f32", baddbmm<L>, kMs},
      {"conv1d_fwd_32x64x256_k5_f32", conv1d<L, false>, kMs},
      {"conv1d_fwd_bwd_32x64x256_k5_f32", conv1d<L, true>, kMs},
      {"strided_conv1d_fwd_bwd_16x128x1024_k4_s2_f32", strided_conv1d_fwd_bwd<L>, kMs},
      {"depthwise_conv1d_fwd_bwd_8x256x1024_k4_f32", depthwise_conv1d_fwd_bwd<L>, kMs},
      {"depthwise_conv2d_fwd_bwd_32x64x28x28_3x3_f32", depthwise_conv2d_fwd_bwd<L, 1>, kMs},
      {"depthwise_conv2d_s2_fwd_bwd_32x64x28x28_3x3_f32", depthwise_conv2d_fwd_bwd<L, 2>, kMs},
  };
}

}  // namespace tg_bench::layers
