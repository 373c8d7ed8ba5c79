#pragma once
// float64, gradcheck's dtype and the default of tg::tensor, found slow by a side-by-side sweep
// (twenty-eighth session, docs/PERFORMANCE.md): softmax rows (libm's scalar exp), relu and a
// division (the SSE2 flat loop), and the transposed copy (a scalar tile loop). Each reads a
// [1024, 1024] float64 tensor (8 MiB) once.
#include <vector>

#include "cases_common.h"

namespace tg_bench::float64 {

inline constexpr int64_t kN = 1024, kF64 = 8;

enum class Op { softmax, relu, div, transposed_copy };

template <class L, Op op> void square(benchmark::State& state) {
  L::seed(0);
  const typename L::Tensor x = L::to_float64(L::randn({kN, kN}));
  const typename L::Tensor y = L::to_float64(L::randn({kN, kN}));
  for (auto _ : state) {
    switch (op) {
      case Op::softmax: keep(L::softmax(x, 1)); break;
      case Op::relu: keep(L::relu(x)); break;
      case Op::div: keep(L::div(x, y)); break;
      case Op::transposed_copy: keep(L::contiguous(L::transpose(x, 0, 1))); break;
    }
  }
  set_bytes(state, (op == Op::div ? 3 : 2) * kF64 * kN * kN);
}

template <class L> std::vector<Case> cases() {
  return {
      {"softmax_dim1_1024x1024_f64", square<L, Op::softmax>, kMs},
      {"relu_1024x1024_f64", square<L, Op::relu>, kMs},
      {"div_1024x1024_f64", square<L, Op::div>, kMs},
      {"contiguous_transposed_1024x1024_f64", square<L, Op::transposed_copy>, kMs},
  };
}

}  // namespace tg_bench::float64
