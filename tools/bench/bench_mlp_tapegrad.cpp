// tapegrad's side of issue 4's training-step case: an MLP 784-256-128-10 (ReLU), batch 64,
// cross_entropy, SGD(lr 0.01). One iteration = zero_grad + forward + loss + backward + step.
// bench_mlp_libtorch.cpp mirrors it line by line.
#include <tapegrad/tapegrad.h>

#include "bench_common.h"

namespace tg_bench {
namespace {

void mlp_train_step(benchmark::State& state) {
  tg::manual_seed(0);
  auto model = tg::nn::MLP({784, 256, 128, 10});
  tg::nn::SGD optimizer(model->parameters(), {.lr = 0.01});
  const tg::Tensor x = tg::randn({64, 784});
  const tg::Tensor y = tg::randint(0, 10, {64});
  for (auto _ : state) {
    optimizer.zero_grad();
    const tg::Tensor loss = tg::cross_entropy((*model)(x), y);
    loss.backward();
    optimizer.step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
}

}  // namespace

std::vector<Case> mlp_tapegrad_cases() { return {{"mlp_784_256_128_10_b64_sgd_step", mlp_train_step, true}}; }

}  // namespace tg_bench
