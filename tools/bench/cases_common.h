#pragma once
// Helpers for the case templates (cases_*.h). A case is `template <class L> void f(State&)` where
// L is a library adapter (bench_tapegrad.cpp, bench_libtorch.cpp). The adapter provides:
//   using Tensor;                      the library's tensor type
//   seed(uint64_t)                     manual_seed
//   rand(shape) randn(shape)           float32 factories (shape: a braced list of int64_t)
//   randint(high, shape)               int64 in [0, high)
//   full(shape, v) floats(vector)      float32; floats: a 1-d tensor of the given values
//   scalar(v)                          0-d float32
//   to_float64(t)                      t converted to float64 (the float64 cases)
//   clear_grad(t) set_grad(t, g)       t's grad to undefined / to g
//   parallel_for(begin, end, grain, f) the library's intra-op parallel loop
//   the ops the cases call, as free functions with the library's names (add, sum, gelu, ...),
//   Mlp (forward, parameters), DigitsCnn (forward, parameters, examples/digits_cnn's model),
//   sgd(params, lr), adamw(params)
// Tensor methods shared by both libraries are used directly: requires_grad_(), requires_grad(),
// defined(), grad(), backward(), backward(g), data_ptr(); so are the operators + * < on tensors
// and scalars (found by argument-dependent lookup in the library's namespace).
#include <cstdint>

#include "bench_common.h"

namespace tg_bench {

// Keeps the result alive as far as the optimiser can tell.
template <class T> void keep(const T& t) { benchmark::DoNotOptimize(t.data_ptr()); }

// Sets every given tensor's grad to undefined (zero_grad(set_to_none=True)): backward then
// stores its gradient instead of adding it to an old one.
template <class L, class... Ts> void clear_grads(const Ts&... ts) { (L::clear_grad(ts), ...); }

// Bytes one iteration must move at least (each input read once, each output written once);
// Google Benchmark turns it into bytes_per_second, which tools/bench/compare.py divides by the
// STREAM triad's.
inline void set_bytes(benchmark::State& state, int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

inline constexpr int64_t kF32 = 4;  // bytes per float32 element

}  // namespace tg_bench
