#pragma once
// Elementwise cases: binary arithmetic on large arrays (issue 2), unary activations forward and
// forward + backward, and broadcasting arithmetic (issue 14). Bytes are the arrays each op must
// read and write at least.
#include <initializer_list>
#include <vector>

#include "cases_common.h"

namespace tg_bench::elementwise {

// Out-of-place 1<<24 float32 add: reads 2 arrays, writes a fresh one (3 * 4 * N bytes).
template <class L> void add_large(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor a = L::rand({kLargeN}), b = L::rand({kLargeN});
  for (auto _ : state) {
    typename L::Tensor c = L::add(a, b);
    keep(c);
  }
  set_bytes(state, 3 * kF32 * kLargeN);
}

// In-place a += b on 1<<24 float32: the same traffic as add without allocating a result.
template <class L> void add_inplace_large(benchmark::State& state) {
  L::seed(0);
  typename L::Tensor a = L::rand({kLargeN}), b = L::rand({kLargeN});
  for (auto _ : state) {
    L::add_(a, b);
    keep(a);
  }
  set_bytes(state, 3 * kF32 * kLargeN);
}

enum class Unary {
  exp,
  log,
  tanh,
  sigmoid,
  gelu_erf,
  gelu_tanh,
  log1p,
  expm1,
  erf,
  rsqrt,
  pow_1_5
};

template <class L> typename L::Tensor apply(Unary op, const typename L::Tensor& x) {
  switch (op) {
    case Unary::exp: return L::exp(x);
    case Unary::log: return L::log(x);
    case Unary::tanh: return L::tanh(x);
    case Unary::sigmoid: return L::sigmoid(x);
    case Unary::gelu_erf: return L::gelu(x, "none");
    case Unary::gelu_tanh: return L::gelu(x, "tanh");
    case Unary::log1p: return L::log1p(x);
    case Unary::expm1: return L::expm1(x);
    case Unary::erf: return L::erf(x);
    case Unary::rsqrt: return L::rsqrt(x);
    case Unary::pow_1_5: return L::pow(x, 1.5);
  }
  return {};
}

// Inputs: N(0, 1), the range activations see; log, log1p, rsqrt and pow get U[0.5, 1.5).
template <class L> typename L::Tensor unary_input(Unary op, std::initializer_list<int64_t> shape) {
  const bool positive =
      op == Unary::log || op == Unary::log1p || op == Unary::rsqrt || op == Unary::pow_1_5;
  return positive ? L::rand(shape) + 0.5 : L::randn(shape);
}

// x^y on 1<<22 float32, x in U[0.5, 1.5), y N(0, 1): reads x and y, writes the result.
template <class L> void pow_fwd(benchmark::State& state) {
  constexpr int64_t n = int64_t{1} << 22;
  L::seed(0);
  const typename L::Tensor x = L::rand({n}) + 0.5, y = L::randn({n});
  for (auto _ : state) keep(L::pow(x, y));
  set_bytes(state, 3 * kF32 * n);
}

// y = op(x) on 1<<22 float32 (16 MiB in, 16 MiB out): reads x, writes y.
template <class L, Unary op> void unary_fwd(benchmark::State& state) {
  constexpr int64_t n = int64_t{1} << 22;
  L::seed(0);
  const typename L::Tensor x = unary_input<L>(op, {n});
  for (auto _ : state) keep(apply<L>(op, x));
  set_bytes(state, 2 * kF32 * n);
}

// y = op(x), y.backward(g) on [4096, 1024] float32, x requiring grad (its grad reset to
// undefined each iteration), g a fixed N(0, 1) tensor (a model's gradient, not the expanded
// scalar of a sum). Reads x, writes y; reads g and x (or y), writes x.grad: 5 arrays.
template <class L, Unary op> void unary_fwd_bwd(benchmark::State& state) {
  constexpr int64_t rows = 4096, cols = 1024;
  L::seed(0);
  typename L::Tensor x = unary_input<L>(op, {rows, cols});
  const typename L::Tensor g = L::randn({rows, cols});
  x.requires_grad_();
  for (auto _ : state) {
    clear_grads<L>(x);
    apply<L>(op, x).backward(g);
    keep(x.grad());
  }
  set_bytes(state, 5 * kF32 * rows * cols);
}

// a [4096, 1024] (op) b [1024], b broadcast over the rows: reads a and b, writes a result of a's
// size (out of place) or a itself (in place). b is within 1% of 1, so repeated in-place
// multiplication keeps a far from overflow and denormals.
template <class L, bool mul, bool in_place> void broadcast(benchmark::State& state) {
  constexpr int64_t rows = 4096, cols = 1024;
  L::seed(0);
  typename L::Tensor a = L::randn({rows, cols});
  const typename L::Tensor b = L::rand({cols}) * 0.02 + 0.99;
  for (auto _ : state) {
    if (in_place) {
      if (mul)
        L::mul_(a, b);
      else
        L::add_(a, b);
      keep(a);
    } else {
      keep(mul ? L::mul(a, b) : L::add(a, b));
    }
  }
  set_bytes(state, kF32 * (2 * rows * cols + cols));
}

template <class L> std::vector<Case> cases() {
  using U = Unary;
  return {
      {"add_1<<24_f32", add_large<L>, kMs},
      {"add_inplace_1<<24_f32", add_inplace_large<L>, kMs},
      {"exp_fwd_1<<22_f32", unary_fwd<L, U::exp>, kMs},
      {"log_fwd_1<<22_f32", unary_fwd<L, U::log>, kMs},
      {"tanh_fwd_1<<22_f32", unary_fwd<L, U::tanh>, kMs},
      {"sigmoid_fwd_1<<22_f32", unary_fwd<L, U::sigmoid>, kMs},
      {"gelu_erf_fwd_1<<22_f32", unary_fwd<L, U::gelu_erf>, kMs},
      {"gelu_tanh_fwd_1<<22_f32", unary_fwd<L, U::gelu_tanh>, kMs},
      {"log1p_fwd_1<<22_f32", unary_fwd<L, U::log1p>, kMs},
      {"expm1_fwd_1<<22_f32", unary_fwd<L, U::expm1>, kMs},
      {"erf_fwd_1<<22_f32", unary_fwd<L, U::erf>, kMs},
      {"rsqrt_fwd_1<<22_f32", unary_fwd<L, U::rsqrt>, kMs},
      {"pow_scalar_1.5_fwd_1<<22_f32", unary_fwd<L, U::pow_1_5>, kMs},
      {"pow_fwd_1<<22_f32", pow_fwd<L>, kMs},
      {"gelu_fwd_bwd_4096x1024_f32", unary_fwd_bwd<L, U::gelu_erf>, kMs},
      {"sigmoid_fwd_bwd_4096x1024_f32", unary_fwd_bwd<L, U::sigmoid>, kMs},
      {"tanh_fwd_bwd_4096x1024_f32", unary_fwd_bwd<L, U::tanh>, kMs},
      {"add_bcast_4096x1024_1024_f32", broadcast<L, false, false>, kMs},
      {"mul_bcast_4096x1024_1024_f32", broadcast<L, true, false>, kMs},
      {"add_bcast_inplace_4096x1024_1024_f32", broadcast<L, false, true>, kMs},
      {"mul_bcast_inplace_4096x1024_1024_f32", broadcast<L, true, true>, kMs},
  };
}

}  // namespace tg_bench::elementwise
