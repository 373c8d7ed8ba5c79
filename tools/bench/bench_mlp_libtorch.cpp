// libtorch's side of the training-step case, mirroring bench_mlp_tapegrad.cpp.
#include <torch/torch.h>

#include "bench_common.h"

namespace tg_bench {
namespace {

void mlp_train_step(benchmark::State& state) {
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 128), torch::nn::ReLU(),
                              torch::nn::Linear(128, 10));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor x = torch::randn({64, 784});
  const torch::Tensor y = torch::randint(0, 10, {64});
  for (auto _ : state) {
    optimizer.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    optimizer.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}

}  // namespace

std::vector<Case> mlp_libtorch_cases() { return {{"mlp_784_256_128_10_b64_sgd_step", mlp_train_step, true}}; }

}  // namespace tg_bench
