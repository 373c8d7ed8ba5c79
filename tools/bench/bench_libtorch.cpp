// libtorch's side of every case, mirroring bench_tapegrad.cpp function by function.
#include <torch/torch.h>

#include <utility>

#include "bench_common.h"

namespace tg_bench {
namespace {

void add_1elem_nograd(benchmark::State& state) {
  torch::Tensor a = torch::full({1}, 1.5), b = torch::full({1}, 2.5);
  for (auto _ : state) {
    torch::Tensor c = torch::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
}

void add_1elem_grad(benchmark::State& state) {
  torch::Tensor a = torch::full({1}, 1.5).requires_grad_(), b = torch::full({1}, 2.5);
  for (auto _ : state) {
    torch::Tensor c = torch::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
}

void tiny_fwd_bwd(benchmark::State& state) {
  torch::Tensor x = torch::tensor({0.5f, -1.0f, 2.0f, 0.25f});
  torch::Tensor w = torch::full({4}, 0.3).requires_grad_();
  torch::Tensor b = torch::full({4}, -0.1).requires_grad_();
  for (auto _ : state) {
    w.mutable_grad().reset();
    b.mutable_grad().reset();
    torch::Tensor y = torch::sum(torch::tanh(x * w + b));
    y.backward();
    benchmark::DoNotOptimize(w.grad().data_ptr());
  }
}

void add_large(benchmark::State& state) {
  torch::manual_seed(0);
  torch::Tensor a = torch::rand({kLargeN}), b = torch::rand({kLargeN});
  for (auto _ : state) {
    torch::Tensor c = torch::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 3 * 4 * kLargeN);
}

void add_inplace_large(benchmark::State& state) {
  torch::manual_seed(0);
  torch::Tensor a = torch::rand({kLargeN}), b = torch::rand({kLargeN});
  for (auto _ : state) {
    a.add_(b);
    benchmark::DoNotOptimize(a.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 3 * 4 * kLargeN);
}

void sum_large(benchmark::State& state) {
  torch::manual_seed(0);
  torch::Tensor a = torch::rand({kLargeN});
  for (auto _ : state) {
    torch::Tensor s = torch::sum(a);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * 4 * kLargeN);
}

}  // namespace

std::vector<Case> libtorch_cases() {
  std::vector<Case> cases = {
      {"add_1elem_nograd", add_1elem_nograd},
      {"add_1elem_grad", add_1elem_grad},
      {"tiny_fwd_bwd", tiny_fwd_bwd},
      {"add_1<<24_f32", add_large, true},
      {"add_inplace_1<<24_f32", add_inplace_large, true},
      {"sum_1<<24_f32", sum_large, true},
  };
  for (Case& c : indexing_libtorch_cases()) cases.push_back(std::move(c));
  for (Case& c : mlp_libtorch_cases()) cases.push_back(std::move(c));
  return cases;
}

void libtorch_set_num_threads(int n) {
  at::set_num_threads(n);
  at::set_num_interop_threads(n);
}

}  // namespace tg_bench
