#pragma once
// Issue 16's sequence models: examples/makemore's transformer training step.
#include <vector>

#include "cases_common.h"

namespace tg_bench::sequence {

// One training step of examples/makemore's character transformer (the adapters' CharTransformer:
// token and position embeddings 27 x 64 and 16 x 64, 2 pre-norm causal blocks of 4 heads with a
// 256-wide ReLU feed-forward, a final LayerNorm and a linear head to 27 logits) on a batch of 32
// sequences of 16 tokens, as the example trains it: zero_grad, forward, cross_entropy, backward,
// clip_grad_norm_(1.0), AdamW step.
template <class L> void makemore_train_step(benchmark::State& state) {
  constexpr int64_t batch = 32, context = 16, vocab = 27;
  L::seed(0);
  typename L::CharTransformer model;
  auto optimizer = L::adamw(model.parameters());
  const typename L::Tensor x = L::randint(vocab, {batch, context});
  const typename L::Tensor y = L::randint(vocab, {batch * context});
  for (auto _ : state) {
    optimizer.zero_grad();
    const typename L::Tensor loss = L::cross_entropy(model.forward(x), y);
    loss.backward();
    L::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    keep(loss);
  }
}

template <class L> std::vector<Case> cases() {
  return {
      {"makemore_transformer_b32x16_adamw_step", makemore_train_step<L>, kMs},
  };
}

}  // namespace tg_bench::sequence
