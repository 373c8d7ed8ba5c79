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
}  // namespace

const Isa& avx2_kernels() {
  static const Isa isa{"avx2", impl::kernels<F8>(), impl::kernels<D4>()};
  return isa;
}

}  // namespace tg::cpu::vec
