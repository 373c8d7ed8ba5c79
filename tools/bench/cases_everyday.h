#pragma once
// Everyday ops beyond the issue-14 table, found slow by a side-by-side sweep (twenty-second
// session, docs/PERFORMANCE.md): a running sum along rows, max with indices, a product, topk, a
// select by mask, and the permuted copy of attention's head split; and a full sort along rows
// (twenty-fourth session); random draws, rand and randn of [1024, 1024] (twenty-ninth). Each
// reads a [4096, 1024] float32 tensor (or 1<<22 values, or attention's [32, 128, 12, 64]) once.
#include <vector>

#include "cases_common.h"

namespace tg_bench::everyday {

inline constexpr int64_t kRows = 4096, kCols = 1024;

enum class Row { cumsum, max_with_index, prod, topk8, sort };

template <class L, Row op> void along_rows(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({kRows, kCols});
  for (auto _ : state) {
    switch (op) {
      case Row::cumsum: keep(L::cumsum(x, 1)); break;
      case Row::max_with_index: keep(L::max_index(x, 1)); break;
      case Row::prod: keep(L::prod(x, 1)); break;
      case Row::topk8: keep(L::topk_values(x, 8, 1)); break;
      case Row::sort: keep(L::sort_values(x, 1)); break;
    }
  }
  set_bytes(state, kF32 * kRows * kCols);
}

// where(mask, a, b) with a random mask (half true): reads 1 + 4 + 4 bytes, writes 4 per value.
template <class L> void where_random_mask(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor a = L::randn({kLargeN / 4}), b = L::randn({kLargeN / 4});
  const typename L::Tensor mask = L::gt(L::randn({kLargeN / 4}), L::scalar(0.0));
  for (auto _ : state) keep(L::where(mask, a, b));
  set_bytes(state, 13 * kLargeN / 4);
}

// x.permute(0, 2, 1, 3).contiguous() of [32, 128, 12, 64]: attention's split of heads; rows of
// 64 values land in a new order (reads and writes 24 MiB).
template <class L> void permute_heads(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::randn({32, 128, 12, 64});
  for (auto _ : state) keep(L::contiguous(L::permute(x, {0, 2, 1, 3})));
  set_bytes(state, 2 * kF32 * 32 * 128 * 12 * 64);
}

// A [1024, 1024] float32 tensor of random draws (weight initialisation): writes 4 MiB.
template <class L, bool normal> void random_draws(benchmark::State& state) {
  L::seed(0);
  for (auto _ : state) keep(normal ? L::randn({1024, 1024}) : L::rand({1024, 1024}));
  set_bytes(state, kF32 * 1024 * 1024);
}

template <class L> std::vector<Case> cases() {
  return {
      {"cumsum_dim1_4096x1024_f32", along_rows<L, Row::cumsum>, kMs},
      {"max_with_indices_dim1_4096x1024_f32", along_rows<L, Row::max_with_index>, kMs},
      {"prod_dim1_4096x1024_f32", along_rows<L, Row::prod>, kMs},
      {"topk8_dim1_4096x1024_f32", along_rows<L, Row::topk8>, kMs},
      {"sort_dim1_4096x1024_f32", along_rows<L, Row::sort>, kMs},
      {"where_random_mask_1<<22_f32", where_random_mask<L>, kMs},
      {"permute_0213_contiguous_32x128x12x64_f32", permute_heads<L>, kMs},
      {"rand_1024x1024_f32", random_draws<L, false>, kMs},
      {"randn_1024x1024_f32", random_draws<L, true>, kMs},
  };
}

}  // namespace tg_bench::everyday
