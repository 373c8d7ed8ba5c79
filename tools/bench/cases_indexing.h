#pragma once
// Issue 3's indexing cases (masked_scatter, index_reduce, scatter_reduce, index_fill, index_add,
// gather, index_select). `_fwd`: inputs need no grad, forward only. `_fwd_bwd`: self and
// src/source require grad (grads reset to undefined first), forward + sum(out).backward().
// Setup (tensor creation) stays outside the timed loop. Values in [0.5, 1.5) so prod stays finite.
#include <initializer_list>
#include <vector>

#include "cases_common.h"

namespace tg_bench::indexing {

template <class L> typename L::Tensor values(std::initializer_list<int64_t> shape, bool grad) {
  typename L::Tensor t = L::rand(shape) + 0.5;
  if (grad) t.requires_grad_();
  return t;
}

template <class L> void reset_grads(const typename L::Tensor& a, const typename L::Tensor& b) {
  if (a.requires_grad()) L::clear_grad(a);
  if (b.defined() && b.requires_grad()) L::clear_grad(b);
}

template <class L>
void finish(const typename L::Tensor& out, const typename L::Tensor& self, bool grad) {
  if (grad) {
    L::sum(out).backward();
    keep(self.grad());
  } else {
    keep(out);
  }
}

// self [4096,1024], mask [1024] (~50% true, broadcast over rows), source [4096*1024].
template <class L> void masked_scatter_case(benchmark::State& state, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({4096, 1024}, grad);
  typename L::Tensor source = values<L>({4096 * 1024}, grad);
  typename L::Tensor mask = L::rand({1024}) < 0.5;
  for (auto _ : state) {
    reset_grads<L>(self, source);
    finish<L>(L::masked_scatter(self, mask, source), self, grad);
  }
}

// index_reduce dim 0: source [4096,1024] into self [1024,1024], index [4096] in [0,1024).
template <class L> void index_reduce_case(benchmark::State& state, const char* reduce, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({1024, 1024}, grad), source = values<L>({4096, 1024}, grad);
  typename L::Tensor index = L::randint(1024, {4096});
  for (auto _ : state) {
    reset_grads<L>(self, source);
    finish<L>(L::index_reduce(self, 0, index, source, reduce, true), self, grad);
  }
}

// scatter_reduce dim 1: src [1024,1024] into self [1024,256], index [1024,1024] in [0,256).
template <class L>
void scatter_reduce_case(benchmark::State& state, const char* reduce, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({1024, 256}, grad), src = values<L>({1024, 1024}, grad);
  typename L::Tensor index = L::randint(256, {1024, 1024});
  for (auto _ : state) {
    reset_grads<L>(self, src);
    finish<L>(L::scatter_reduce(self, 1, index, src, reduce, true), self, grad);
  }
}

// index_fill dim 0: self [4096,1024], 1024 indices in [0,4096), 0-d tensor value.
template <class L> void index_fill_case(benchmark::State& state, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({4096, 1024}, grad);
  typename L::Tensor index = L::randint(4096, {1024});
  typename L::Tensor value = L::scalar(0.0);
  for (auto _ : state) {
    reset_grads<L>(self, typename L::Tensor());
    finish<L>(L::index_fill(self, 0, index, value), self, grad);
  }
}

// index_add dim 0: source [4096,1024] into self [1024,1024], index [4096] in [0,1024).
template <class L> void index_add_case(benchmark::State& state, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({1024, 1024}, grad), source = values<L>({4096, 1024}, grad);
  typename L::Tensor index = L::randint(1024, {4096});
  for (auto _ : state) {
    reset_grads<L>(self, source);
    finish<L>(L::index_add(self, 0, index, source), self, grad);
  }
}

// gather dim 0: self [1024,1024], index [4096,1024] in [0,1024) -> out [4096,1024].
template <class L> void gather_case(benchmark::State& state, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({1024, 1024}, grad);
  typename L::Tensor index = L::randint(1024, {4096, 1024});
  for (auto _ : state) {
    reset_grads<L>(self, typename L::Tensor());
    finish<L>(L::gather(self, 0, index), self, grad);
  }
}

// index_select dim 0: self [1024,1024], index [4096] in [0,1024) -> out [4096,1024].
template <class L> void index_select_case(benchmark::State& state, bool grad) {
  L::seed(0);
  typename L::Tensor self = values<L>({1024, 1024}, grad);
  typename L::Tensor index = L::randint(1024, {4096});
  for (auto _ : state) {
    reset_grads<L>(self, typename L::Tensor());
    finish<L>(L::index_select(self, 0, index), self, grad);
  }
}

template <class L> std::vector<Case> cases() {
  using S = benchmark::State;
  return {
      {"masked_scatter_fwd", [](S& s) { masked_scatter_case<L>(s, false); }, kMs},
      {"masked_scatter_fwd_bwd", [](S& s) { masked_scatter_case<L>(s, true); }, kMs},
      {"index_reduce_prod_fwd", [](S& s) { index_reduce_case<L>(s, "prod", false); }, kMs},
      {"index_reduce_prod_fwd_bwd", [](S& s) { index_reduce_case<L>(s, "prod", true); }, kMs},
      {"index_reduce_mean_fwd", [](S& s) { index_reduce_case<L>(s, "mean", false); }, kMs},
      {"index_reduce_mean_fwd_bwd", [](S& s) { index_reduce_case<L>(s, "mean", true); }, kMs},
      {"index_reduce_amax_fwd", [](S& s) { index_reduce_case<L>(s, "amax", false); }, kMs},
      {"index_reduce_amax_fwd_bwd", [](S& s) { index_reduce_case<L>(s, "amax", true); }, kMs},
      {"scatter_reduce_sum_fwd", [](S& s) { scatter_reduce_case<L>(s, "sum", false); }, kMs},
      {"scatter_reduce_sum_fwd_bwd", [](S& s) { scatter_reduce_case<L>(s, "sum", true); }, kMs},
      {"scatter_reduce_prod_fwd", [](S& s) { scatter_reduce_case<L>(s, "prod", false); }, kMs},
      {"scatter_reduce_prod_fwd_bwd", [](S& s) { scatter_reduce_case<L>(s, "prod", true); }, kMs},
      {"scatter_reduce_mean_fwd", [](S& s) { scatter_reduce_case<L>(s, "mean", false); }, kMs},
      {"scatter_reduce_mean_fwd_bwd", [](S& s) { scatter_reduce_case<L>(s, "mean", true); }, kMs},
      {"scatter_reduce_amax_fwd", [](S& s) { scatter_reduce_case<L>(s, "amax", false); }, kMs},
      {"scatter_reduce_amax_fwd_bwd", [](S& s) { scatter_reduce_case<L>(s, "amax", true); }, kMs},
      {"index_fill_fwd", [](S& s) { index_fill_case<L>(s, false); }, kMs},
      {"index_fill_fwd_bwd", [](S& s) { index_fill_case<L>(s, true); }, kMs},
      {"index_add_fwd", [](S& s) { index_add_case<L>(s, false); }, kMs},
      {"index_add_fwd_bwd", [](S& s) { index_add_case<L>(s, true); }, kMs},
      {"gather_fwd", [](S& s) { gather_case<L>(s, false); }, kMs},
      {"gather_fwd_bwd", [](S& s) { gather_case<L>(s, true); }, kMs},
      {"index_select_fwd", [](S& s) { index_select_case<L>(s, false); }, kMs},
      {"index_select_fwd_bwd", [](S& s) { index_select_case<L>(s, true); }, kMs},
  };
}

}  // namespace tg_bench::indexing
