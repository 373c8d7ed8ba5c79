// The SLEEF kernels for AVX-512F (16 floats, 8 doubles); this file alone is built with
// -mavx512f -mavx2 -mfma, and vec_math.cpp calls it only on CPUs that have them.
#include <immintrin.h>
#include <sleef.h>

#include <tapegrad/backends/cpu/simd/vec_math_impl.h>

namespace tg::cpu::vec {
namespace {
TG_SLEEF_TRAITS(F16, float, __m512, 16, f16, avx512f, _mm512_loadu_ps, _mm512_storeu_ps);
TG_SLEEF_TRAITS(D8, double, __m512d, 8, d8, avx512f, _mm512_loadu_pd, _mm512_storeu_pd);
// float32 adds the reciprocal estimate that gelu's Phi refines with one Newton step.
struct F16R : F16 {
  // The masked form: GCC 12 flags the plain one's undefined source as maybe-uninitialized.
  static Vec rcp_estimate(Vec d) { return _mm512_maskz_rcp14_ps(__mmask16(0xFFFF), d); }
};
}  // namespace

const Isa& avx512_kernels() {
  static const Isa isa{"avx512f", impl::kernels<F16R>(), impl::kernels<D8>()};
  return isa;
}

}  // namespace tg::cpu::vec
