#pragma once
// The row loops of vec_binary.h, written once over a vector type's traits V (Vec, kWidth, load,
// store, stream (a non-temporal store to an aligned address), set1 and the four
// operations) and instantiated by each vec_binary_<isa>.cpp.
#include <atomic>
#include <cstdint>

#include <tapegrad/backends/cpu/simd/vec_binary.h>

namespace tg::cpu::vec::binary_impl {

template <Binary kOp> float apply(float a, float b) {
  if constexpr (kOp == Binary::add) return a + b;
  if constexpr (kOp == Binary::sub) return a - b;
  if constexpr (kOp == Binary::mul) return a * b;
  if constexpr (kOp == Binary::div) return a / b;
}

template <typename V, Binary kOp> typename V::Vec apply(typename V::Vec a, typename V::Vec b) {
  if constexpr (kOp == Binary::add) return V::add(a, b);
  if constexpr (kOp == Binary::sub) return V::sub(a, b);
  if constexpr (kOp == Binary::mul) return V::mul(a, b);
  if constexpr (kOp == Binary::div) return V::div(a, b);
}

// Keeps the compiler from moving memory accesses across it; emits no instruction.
inline void in_order() { std::atomic_signal_fence(std::memory_order_seq_cst); }

template <typename V, Binary kOp, Operands kForm, Stores kStores>
void row(float* out, const float* a, const float* b, int64_t n) {
  using Vec = typename V::Vec;
  constexpr int64_t W = V::kWidth;
  constexpr bool kScalarA = kForm == Operands::scalar_a, kScalarB = kForm == Operands::scalar_b;
  constexpr bool kStream = kStores == Stores::streaming;
  const Vec sa = kScalarA ? V::set1(*a) : Vec{}, sb = kScalarB ? V::set1(*b) : Vec{};
  const auto x = [&](int64_t i) { return kScalarA ? sa : V::load(a + i); };
  const auto y = [&](int64_t i) { return kScalarB ? sb : V::load(b + i); };
  const auto one = [&](int64_t i) {
    out[i] = apply<kOp>(kScalarA ? *a : a[i], kScalarB ? *b : b[i]);
  };
  const auto put = [&](int64_t i, Vec v) {
    if constexpr (kStream)
      V::stream(out + i, v);
    else
      V::store(out + i, v);
  };
  int64_t i = 0;
  if constexpr (kStream) {  // non-temporal stores need a vector-aligned address
    const auto misaligned = reinterpret_cast<uintptr_t>(out) % sizeof(Vec);
    const int64_t head = misaligned == 0 ? 0 : static_cast<int64_t>(sizeof(Vec) - misaligned) / 4;
    for (; i < head && i < n; ++i) one(i);
  }
  // Every vector of an iteration is loaded before any is stored, so out may be a or b. Written
  // over an input (a *= b), four vectors per iteration: the lines are already cached, and the
  // one-vector loop the compiler writes keeps fewer loads in flight.
  if (out == a || out == b) {
    for (; i + 4 * W <= n; i += 4 * W) {
      const Vec r0 = apply<V, kOp>(x(i), y(i));
      const Vec r1 = apply<V, kOp>(x(i + W), y(i + W));
      const Vec r2 = apply<V, kOp>(x(i + 2 * W), y(i + 2 * W));
      const Vec r3 = apply<V, kOp>(x(i + 3 * W), y(i + 3 * W));
      put(i, r0);
      put(i + W, r1);
      put(i + 2 * W, r2);
      put(i + 3 * W, r3);
    }
  }
  // Into a separate result, two vectors (one 64-byte line with AVX2) per iteration, each access
  // in address order. The order is pinned (in_order) because the compiler's own choice, the
  // upper half of a line before its lower half, ran the broadcast add about 10 % slower on this
  // project's AMD EPYC whenever its memory was contended (docs/PERFORMANCE.md); the four-vector
  // loop above ran about 20 % slower there, and so did this loop with its bound written
  // `i + 2 * W <= n` (GCC then recomputes the sum on every iteration).
  for (const int64_t pairs_end = i + (n - i) / (2 * W) * (2 * W); i < pairs_end; i += 2 * W) {
    const Vec a0 = x(i);
    in_order();
    const Vec b0 = y(i);
    in_order();
    const Vec a1 = x(i + W);
    in_order();
    const Vec b1 = y(i + W);
    in_order();
    put(i, apply<V, kOp>(a0, b0));
    in_order();
    put(i + W, apply<V, kOp>(a1, b1));
  }
  for (; i + W <= n; i += W) put(i, apply<V, kOp>(x(i), y(i)));
  for (; i < n; ++i) one(i);
}

template <typename V, Binary kOp, Operands kForm> constexpr void fill_form(BinaryIsa& isa) {
  auto& stores = isa.f32[static_cast<int>(kOp)][static_cast<int>(kForm)];
  stores[static_cast<int>(Stores::cached)] = row<V, kOp, kForm, Stores::cached>;
  stores[static_cast<int>(Stores::streaming)] = row<V, kOp, kForm, Stores::streaming>;
}

template <typename V, Binary kOp> constexpr void fill(BinaryIsa& isa) {
  fill_form<V, kOp, Operands::arrays>(isa);
  fill_form<V, kOp, Operands::scalar_b>(isa);
  fill_form<V, kOp, Operands::scalar_a>(isa);
}

template <typename V> BinaryIsa kernels(const char* name) {
  BinaryIsa isa{name, {}};
  fill<V, Binary::add>(isa);
  fill<V, Binary::sub>(isa);
  fill<V, Binary::mul>(isa);
  fill<V, Binary::div>(isa);
  return isa;
}

}  // namespace tg::cpu::vec::binary_impl
