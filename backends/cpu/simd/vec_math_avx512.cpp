// The SLEEF kernels for AVX-512F (16 floats, 8 doubles); this file alone is built with
// -mavx512f -mavx2 -mfma, and vec_math.cpp calls it only on CPUs that have them.
#include <cmath>
#include <immintrin.h>
#include <sleef.h>

#include <tapegrad/backends/cpu/simd/vec_math_impl.h>

namespace tg::cpu::vec {
namespace {
// Every lane through the masked forms: GCC 12 flags the plain intrinsics' undefined source
// operand as maybe-uninitialized.
inline __m512 sqrt_ps(__m512 x) { return _mm512_maskz_sqrt_ps(0xFFFF, x); }
inline __m512d sqrt_pd(__m512d x) { return _mm512_maskz_sqrt_pd(0xFF, x); }
TG_SLEEF_TRAITS(F16, float, __m512, 16, f16, avx512f, _mm512_loadu_ps, _mm512_storeu_ps, sqrt_ps);
TG_SLEEF_TRAITS(D8, double, __m512d, 8, d8, avx512f, _mm512_loadu_pd, _mm512_storeu_pd, sqrt_pd);
// float32 adds what gelu's Phi uses: the reciprocal estimate it refines with one Newton step,
// and rounding and vscalefps (p 2^n, one rounding) for its inline e^a (exp_nonpositive in
// vec_math_impl.h).
struct F16R : F16 {
  static constexpr __mmask16 kAll = 0xFFFF;
  static Vec round_to_int(Vec x) {
    return _mm512_maskz_roundscale_ps(kAll, x, _MM_FROUND_TO_NEAREST_INT);
  }
  static Vec ldexp(Vec p, Vec n) { return _mm512_maskz_scalef_ps(kAll, p, n); }
  static Vec rcp_estimate(Vec d) { return _mm512_maskz_rcp14_ps(kAll, d); }
};
}  // namespace

const Isa& avx512_kernels() {
  static const Isa isa{"avx512f", impl::kernels<F16R>(), impl::kernels<D8>()};
  return isa;
}

}  // namespace tg::cpu::vec
