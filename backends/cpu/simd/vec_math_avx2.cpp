// The SLEEF kernels for AVX2 + FMA (8 floats, 4 doubles); this file alone is built with
// -mavx2 -mfma, and vec_math.cpp calls it only on CPUs that have both.
#include <immintrin.h>
#include <sleef.h>

#include <tapegrad/backends/cpu/simd/vec_math_impl.h>

namespace tg::cpu::vec {
namespace {
TG_SLEEF_TRAITS(F8, float, __m256, 8, f8, avx2, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_sqrt_ps);
TG_SLEEF_TRAITS(D4, double, __m256d, 4, d4, avx2, _mm256_loadu_pd, _mm256_storeu_pd,
                _mm256_sqrt_pd);
// float32 adds rounding, 2^n scaling and min/max for the inline e^a and gelu's Phi
// (exp_from_minus_110, PhiFloat in vec_math_impl.h). AVX2 has no vscalefps, and exponent bits
// reach only 2^-126: with p in [0.70, 1.42] and n in [-159, 0], p 2^(n + 64) is a normal float
// (exact) and the constant 2^-64 rounds a subnormal result once, as vscalefps does. 2^(n + 64)'s
// exponent field, n + 191, lands in the low mantissa bits of n + 1.5 * 2^23 + 191 (exact: n is
// integral), which the shift moves into place, with no conversion to integers. minps and maxps
// return their second operand on NaN or equal inputs, as the traits' compare-and-select does, in
// one instruction instead of two.
struct F8R : F8 {
  static Vec round_to_int(Vec x) {  // for |x| < 2^22: adding 1.5 * 2^23 rounds away the fraction
    return (x + 0x1.8p23f) - 0x1.8p23f;
  }
  static Vec ldexp(Vec p, Vec n) {
    const Vec biased = n + (0x1.8p23f + 191.0f);
    const Vec pow2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(biased), 23));
    return (p * pow2) * 0x1p-64f;
  }
  static Vec fmin(Vec a, Vec b) { return _mm256_min_ps(a, b); }
  static Vec fmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
};
}  // namespace

const Isa& avx2_kernels() {
  static const Isa isa{"avx2", impl::kernels<F8R>(), impl::kernels<D4>()};
  return isa;
}

}  // namespace tg::cpu::vec
