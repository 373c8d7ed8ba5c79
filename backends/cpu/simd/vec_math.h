#pragma once
// Vectorised transcendental math on contiguous arrays, from SLEEF (libsleef-dev: the library
// PyTorch's CPU kernels use), compiled once per instruction set and picked at run time:
// AVX-512F, AVX2+FMA, SSE2 (the x86-64 baseline every build runs on). Each ISA's kernels live in
// their own translation unit built with that ISA's flags (vec_math_<isa>.cpp); this header is
// plain C++ and safe to include anywhere.
//
// Which functions and how accurate they are (max ULP over dense sweeps, tested in
// tests/vec_math_tests.cpp) is stated in docs/SEMANTICS.md. Every element is computed by the
// same vector code (the tail of an array goes through a padded vector), so a result does not
// depend on an element's position, the array's length or how threads split it.
#include <cstdint>
#include <vector>

namespace tg::cpu::vec {

// y = f(x), elementwise.
enum class Unary : int {
  exp,
  log,
  tanh,
  sigmoid,    // 1 / (1 + exp(-x))
  gelu_erf,   // x * Phi(x) = x/2 * erfc(-x / sqrt(2))
  gelu_tanh,  // x/2 * (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) * (x + 0.044715 x^3)
  softplus,   // max(x, 0) + log1p(exp(-|x|))
  sqrt,
  log1p,  // log(1 + x)
  expm1,  // exp(x) - 1
  erf,
  rsqrt,  // 1 / sqrt(x)
  cos,    // randn's Box-Muller angle (backends/cpu/random_draws.cpp); no cos op yet
  count
};

// out = g * f'(x), elementwise (the fused backward of an activation).
enum class Grad : int { gelu_erf, gelu_tanh, count };

// out = f(a, b), elementwise; the _scalar form takes one b for every element.
enum class BinaryMath : int { pow, count };

template <typename T> struct Kernels {
  void (*unary[static_cast<int>(Unary::count)])(const T* x, T* y, int64_t n);
  void (*grad[static_cast<int>(Grad::count)])(const T* g, const T* x, T* out, int64_t n);
  void (*binary[static_cast<int>(BinaryMath::count)])(const T* a, const T* b, T* out, int64_t n);
  void (*binary_scalar[static_cast<int>(BinaryMath::count)])(const T* a, T b, T* out, int64_t n);
};

struct Isa {
  const char* name;  // "avx512f", "avx2", "sse2"
  Kernels<float> f32;
  Kernels<double> f64;
};

// The kernels of the widest instruction set this CPU runs, chosen on first use; nullptr when
// tapegrad was built without SLEEF, or when TG_SIMD=scalar is set (the kernels then run their
// scalar loops: an A/B switch for benchmarks). TG_SIMD=sse2 / avx2 / avx512f caps the choice.
const Isa* best();

// Every instruction set compiled in that this CPU runs (the accuracy tests check each).
std::vector<const Isa*> available();

// Per-ISA tables, defined in vec_math_<isa>.cpp (only those the build compiled).
const Isa& sse2_kernels();
const Isa& avx2_kernels();
const Isa& avx512_kernels();

}  // namespace tg::cpu::vec
