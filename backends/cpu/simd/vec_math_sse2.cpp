// The SLEEF kernels for SSE2 (4 floats, 2 doubles): the x86-64 baseline, which every CPU
// tapegrad runs on has; built with the project's default flags.
#include <immintrin.h>
#include <sleef.h>

#include <tapegrad/backends/cpu/simd/vec_math_impl.h>

namespace tg::cpu::vec {
namespace {
TG_SLEEF_TRAITS(F4, float, __m128, 4, f4, sse2, _mm_loadu_ps, _mm_storeu_ps, _mm_sqrt_ps);
TG_SLEEF_TRAITS(D2, double, __m128d, 2, d2, sse2, _mm_loadu_pd, _mm_storeu_pd, _mm_sqrt_pd);
}  // namespace

const Isa& sse2_kernels() {
  static const Isa isa{"sse2", impl::kernels<F4>(), impl::kernels<D2>()};
  return isa;
}

}  // namespace tg::cpu::vec
