// tapegrad's side of every case. bench_libtorch.cpp mirrors each function line by line.
#include <tapegrad/tapegrad.h>

#include <utility>

#include "bench_common.h"

namespace tg_bench {
namespace {

// 1-element float32 add; nothing requires grad, so nothing is recorded.
void add_1elem_nograd(benchmark::State& state) {
  tg::Tensor a = tg::full({1}, 1.5), b = tg::full({1}, 2.5);
  for (auto _ : state) {
    tg::Tensor c = tg::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
}

// 1-element float32 add where `a` requires grad: every call records a node.
void add_1elem_grad(benchmark::State& state) {
  tg::Tensor a = tg::full({1}, 1.5).requires_grad_(), b = tg::full({1}, 2.5);
  for (auto _ : state) {
    tg::Tensor c = tg::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
}

// y = sum(tanh(x * w + b)) with w, b of shape [4] requiring grad; forward + backward each
// iteration, grads reset to undefined first (like zero_grad(set_to_none=True)).
void tiny_fwd_bwd(benchmark::State& state) {
  tg::Tensor x = tg::tensor(std::vector<float>{0.5f, -1.0f, 2.0f, 0.25f}, {4});
  tg::Tensor w = tg::full({4}, 0.3).requires_grad_();
  tg::Tensor b = tg::full({4}, -0.1).requires_grad_();
  for (auto _ : state) {
    w.set_grad(tg::Tensor());
    b.set_grad(tg::Tensor());
    tg::Tensor y = tg::sum(tg::tanh(x * w + b));
    y.backward();
    benchmark::DoNotOptimize(w.grad().data_ptr());
  }
}

// Out-of-place 1<<24 float32 add: reads 2 arrays, writes a fresh one (3 * 4 * N bytes).
void add_large(benchmark::State& state) {
  tg::manual_seed(0);
  tg::Tensor a = tg::rand({kLargeN}), b = tg::rand({kLargeN});
  for (auto _ : state) {
    tg::Tensor c = tg::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 3 * 4 * kLargeN);
}

// In-place a += b on 1<<24 float32: the same traffic as add without allocating a result.
void add_inplace_large(benchmark::State& state) {
  tg::manual_seed(0);
  tg::Tensor a = tg::rand({kLargeN}), b = tg::rand({kLargeN});
  for (auto _ : state) {
    a.add_(b);
    benchmark::DoNotOptimize(a.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 3 * 4 * kLargeN);
}

// Full sum of 1<<24 float32 (reads 4 * N bytes).
void sum_large(benchmark::State& state) {
  tg::manual_seed(0);
  tg::Tensor a = tg::rand({kLargeN});
  for (auto _ : state) {
    tg::Tensor s = tg::sum(a);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 4 * kLargeN);
}

}  // namespace

std::vector<Case> tapegrad_cases() {
  std::vector<Case> cases = {
      {"add_1elem_nograd", add_1elem_nograd},
      {"add_1elem_grad", add_1elem_grad},
      {"tiny_fwd_bwd", tiny_fwd_bwd},
      {"add_1<<24_f32", add_large, true},
      {"add_inplace_1<<24_f32", add_inplace_large, true},
      {"sum_1<<24_f32", sum_large, true},
  };
  for (Case& c : indexing_tapegrad_cases()) cases.push_back(std::move(c));
  for (Case& c : mlp_tapegrad_cases()) cases.push_back(std::move(c));
  return cases;
}

}  // namespace tg_bench
