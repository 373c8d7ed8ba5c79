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
// float32 adds rounding and 2^n scaling for gelu's inline e^a (exp_nonpositive in
// vec_math_impl.h). AVX2 has no vscalefps: ldexp builds 2^n from its exponent bits, which reach
// only 2^-126, so it scales in two steps. p is in [0.70, 1.42] and n in [-159, 0]: with
// n1 = max(n, -125), p 2^n1 is a normal float (exact), and the second factor 2^(n - n1), at
// least 2^-34, rounds a subnormal result once, as vscalefps does.
struct F8R : F8 {
  static Vec round_to_int(Vec x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static Vec pow2(Vec n) {  // 2^n for integral n in [-126, 127]
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtps_epi32(n + 127.0f), 23));
  }
  static Vec ldexp(Vec p, Vec n) {
    const Vec n1 = _mm256_max_ps(n, _mm256_set1_ps(-125.0f));
    return (p * pow2(n1)) * pow2(n - n1);
  }
};
}  // namespace

const Isa& avx2_kernels() {
  static const Isa isa{"avx2", impl::kernels<F8R>(), impl::kernels<D4>()};
  return isa;
}

}  // namespace tg::cpu::vec
