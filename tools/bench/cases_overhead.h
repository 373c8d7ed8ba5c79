#pragma once
// Per-op overhead on tiny tensors (issue 2, and issue 14's 1-element path): the time is dispatch,
// allocation of tensors and autograd nodes, and the backward engine, not arithmetic.
#include <vector>

#include "cases_common.h"

namespace tg_bench::overhead {

// 1-element float32 add; nothing requires grad, so nothing is recorded.
template <class L> void add_1elem_nograd(benchmark::State& state) {
  typename L::Tensor a = L::full({1}, 1.5), b = L::full({1}, 2.5);
  for (auto _ : state) {
    typename L::Tensor c = L::add(a, b);
    keep(c);
  }
}

// 1-element float32 add where `a` requires grad: every call records a node.
template <class L> void add_1elem_grad(benchmark::State& state) {
  typename L::Tensor a = L::full({1}, 1.5), b = L::full({1}, 2.5);
  a.requires_grad_();
  for (auto _ : state) {
    typename L::Tensor c = L::add(a, b);
    keep(c);
  }
}

// y = sum(tanh(x * w + b)) with w, b of shape [4] requiring grad; forward + backward each
// iteration, grads reset to undefined first (like zero_grad(set_to_none=True)).
template <class L> void tiny_fwd_bwd(benchmark::State& state) {
  typename L::Tensor x = L::floats({0.5f, -1.0f, 2.0f, 0.25f});
  typename L::Tensor w = L::full({4}, 0.3), b = L::full({4}, -0.1);
  w.requires_grad_();
  b.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(w, b);
    typename L::Tensor y = L::sum(L::tanh(x * w + b));
    y.backward();
    keep(w.grad());
  }
}

// Issue 14's tiny step: (a * b + a).sum().backward() on 1-element leaves created in the
// iteration (a fresh graph and fresh leaves every time, as in a loop over scalars).
template <class L> void tiny_fwd_bwd_1elem(benchmark::State& state) {
  for (auto _ : state) {
    typename L::Tensor a = L::full({1}, 1.5), b = L::full({1}, 2.5);
    a.requires_grad_();
    b.requires_grad_();
    L::sum(a * b + a).backward();
    keep(a.grad());
  }
}

template <class L> std::vector<Case> cases() {
  return {
      {"add_1elem_nograd", add_1elem_nograd<L>},
      {"add_1elem_grad", add_1elem_grad<L>},
      {"tiny_fwd_bwd", tiny_fwd_bwd<L>},
      {"tiny_fwd_bwd_1elem", tiny_fwd_bwd_1elem<L>},
  };
}

}  // namespace tg_bench::overhead
