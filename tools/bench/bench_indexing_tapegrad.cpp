// tapegrad's side of the issue-3 indexing cases (masked_scatter, index_reduce, scatter_reduce,
// index_fill, index_add, gather, index_select). bench_indexing_libtorch.cpp mirrors each
// function line by line. `_fwd`: inputs need no grad, forward only. `_fwd_bwd`: self and
// src/source require grad (grads reset to undefined first), forward + sum(out).backward().
// Setup (tensor creation) stays outside the timed loop. Values in [0.5, 1.5) so prod stays finite.
#include <tapegrad/tapegrad.h>

#include "bench_common.h"

namespace tg_bench {
namespace {

tg::Tensor values(tg::IntArrayRef shape, bool grad) {
  tg::Tensor t = tg::rand(shape) + 0.5;
  if (grad) t.requires_grad_();
  return t;
}

void reset_grads(const tg::Tensor& a, const tg::Tensor& b) {
  if (a.requires_grad()) a.set_grad(tg::Tensor());
  if (b.defined() && b.requires_grad()) b.set_grad(tg::Tensor());
}

void finish(benchmark::State& state, const tg::Tensor& out, const tg::Tensor& self, bool grad) {
  if (grad) {
    tg::sum(out).backward();
    benchmark::DoNotOptimize(self.grad().data_ptr());
  } else {
    benchmark::DoNotOptimize(out.data_ptr());
  }
  (void)state;
}

// self [4096,1024], mask [1024] (~50% true, broadcast over rows), source [4096*1024].
void masked_scatter_case(benchmark::State& state, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({4096, 1024}, grad), source = values({4096 * 1024}, grad);
  tg::Tensor mask = tg::rand({1024}) < 0.5;
  for (auto _ : state) {
    reset_grads(self, source);
    tg::Tensor out = tg::masked_scatter(self, mask, source);
    finish(state, out, self, grad);
  }
}

// index_reduce dim 0: source [4096,1024] into self [1024,1024], index [4096] in [0,1024).
void index_reduce_case(benchmark::State& state, const char* reduce, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({1024, 1024}, grad), source = values({4096, 1024}, grad);
  tg::Tensor index = tg::randint(0, 1024, {4096});
  for (auto _ : state) {
    reset_grads(self, source);
    tg::Tensor out = tg::index_reduce(self, 0, index, source, reduce, true);
    finish(state, out, self, grad);
  }
}

// scatter_reduce dim 1: src [1024,1024] into self [1024,256], index [1024,1024] in [0,256).
void scatter_reduce_case(benchmark::State& state, const char* reduce, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({1024, 256}, grad), src = values({1024, 1024}, grad);
  tg::Tensor index = tg::randint(0, 256, {1024, 1024});
  for (auto _ : state) {
    reset_grads(self, src);
    tg::Tensor out = tg::scatter_reduce(self, 1, index, src, reduce, true);
    finish(state, out, self, grad);
  }
}

// index_fill dim 0: self [4096,1024], 1024 indices in [0,4096), 0-d tensor value.
void index_fill_case(benchmark::State& state, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({4096, 1024}, grad);
  tg::Tensor index = tg::randint(0, 4096, {1024});
  tg::Tensor value = tg::scalar_tensor(0.0, tg::kFloat32);
  for (auto _ : state) {
    reset_grads(self, tg::Tensor());
    tg::Tensor out = tg::index_fill(self, 0, index, value);
    finish(state, out, self, grad);
  }
}

// index_add dim 0: source [4096,1024] into self [1024,1024], index [4096] in [0,1024).
void index_add_case(benchmark::State& state, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({1024, 1024}, grad), source = values({4096, 1024}, grad);
  tg::Tensor index = tg::randint(0, 1024, {4096});
  for (auto _ : state) {
    reset_grads(self, source);
    tg::Tensor out = tg::index_add(self, 0, index, source);
    finish(state, out, self, grad);
  }
}

// gather dim 0: self [1024,1024], index [4096,1024] in [0,1024) -> out [4096,1024].
void gather_case(benchmark::State& state, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({1024, 1024}, grad);
  tg::Tensor index = tg::randint(0, 1024, {4096, 1024});
  for (auto _ : state) {
    reset_grads(self, tg::Tensor());
    tg::Tensor out = tg::gather(self, 0, index);
    finish(state, out, self, grad);
  }
}

// index_select dim 0: self [1024,1024], index [4096] in [0,1024) -> out [4096,1024].
void index_select_case(benchmark::State& state, bool grad) {
  tg::manual_seed(0);
  tg::Tensor self = values({1024, 1024}, grad);
  tg::Tensor index = tg::randint(0, 1024, {4096});
  for (auto _ : state) {
    reset_grads(self, tg::Tensor());
    tg::Tensor out = tg::index_select(self, 0, index);
    finish(state, out, self, grad);
  }
}

}  // namespace

std::vector<Case> indexing_tapegrad_cases() {
  using S = benchmark::State;
  return {
      {"masked_scatter_fwd", [](S& s) { masked_scatter_case(s, false); }, true},
      {"masked_scatter_fwd_bwd", [](S& s) { masked_scatter_case(s, true); }, true},
      {"index_reduce_prod_fwd", [](S& s) { index_reduce_case(s, "prod", false); }, true},
      {"index_reduce_prod_fwd_bwd", [](S& s) { index_reduce_case(s, "prod", true); }, true},
      {"index_reduce_mean_fwd", [](S& s) { index_reduce_case(s, "mean", false); }, true},
      {"index_reduce_mean_fwd_bwd", [](S& s) { index_reduce_case(s, "mean", true); }, true},
      {"index_reduce_amax_fwd", [](S& s) { index_reduce_case(s, "amax", false); }, true},
      {"index_reduce_amax_fwd_bwd", [](S& s) { index_reduce_case(s, "amax", true); }, true},
      {"scatter_reduce_sum_fwd", [](S& s) { scatter_reduce_case(s, "sum", false); }, true},
      {"scatter_reduce_sum_fwd_bwd", [](S& s) { scatter_reduce_case(s, "sum", true); }, true},
      {"scatter_reduce_prod_fwd", [](S& s) { scatter_reduce_case(s, "prod", false); }, true},
      {"scatter_reduce_prod_fwd_bwd", [](S& s) { scatter_reduce_case(s, "prod", true); }, true},
      {"scatter_reduce_mean_fwd", [](S& s) { scatter_reduce_case(s, "mean", false); }, true},
      {"scatter_reduce_mean_fwd_bwd", [](S& s) { scatter_reduce_case(s, "mean", true); }, true},
      {"scatter_reduce_amax_fwd", [](S& s) { scatter_reduce_case(s, "amax", false); }, true},
      {"scatter_reduce_amax_fwd_bwd", [](S& s) { scatter_reduce_case(s, "amax", true); }, true},
      {"index_fill_fwd", [](S& s) { index_fill_case(s, false); }, true},
      {"index_fill_fwd_bwd", [](S& s) { index_fill_case(s, true); }, true},
      {"index_add_fwd", [](S& s) { index_add_case(s, false); }, true},
      {"index_add_fwd_bwd", [](S& s) { index_add_case(s, true); }, true},
      {"gather_fwd", [](S& s) { gather_case(s, false); }, true},
      {"gather_fwd_bwd", [](S& s) { gather_case(s, true); }, true},
      {"index_select_fwd", [](S& s) { index_select_case(s, false); }, true},
      {"index_select_fwd_bwd", [](S& s) { index_select_case(s, true); }, true},
  };
}

}  // namespace tg_bench
