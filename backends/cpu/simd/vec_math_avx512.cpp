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
// float32 adds two things for gelu's Phi: the reciprocal estimate it refines with one Newton
// step, and e^a for a <= 0 in 13 instructions where SLEEF's expf, which handles every input,
// takes about 20: a = n ln2 + r (n = round(a / ln2), ln2 in two parts so r is exact), e^r =
// 1 + r + r^2 Q(r) with Q a degree-4 fit (relative error 3e-9; fit_gelu_erf.py), and 2^n
// applied by vscalefps, which rounds a subnormal result once. a is clamped at -110, below which
// e^a is 0 in float32 (and a NaN a becomes -110: gelu's NaN comes through x).
struct F16R : F16 {
  static constexpr __mmask16 kAll = 0xFFFF;
  static Vec exp_nonpositive(Vec a) {
    constexpr float kQ[] = {0.49999994f, 0.166665211f, 0.0416682586f, 0.00836866908f,
                            0.00138213614f};
    a = _mm512_maskz_max_ps(kAll, a, _mm512_set1_ps(-110.0f));
    const Vec n = _mm512_maskz_roundscale_ps(kAll, a * float(M_LOG2E), _MM_FROUND_TO_NEAREST_INT);
    Vec r = a - n * 0.693145751953125f;  // ln 2's leading bits: n * them is exact
    r = r - n * 1.42860676533018704e-06f;
    Vec q = _mm512_set1_ps(kQ[4]);
    for (int k = 3; k >= 0; --k) q = q * r + kQ[k];
    return _mm512_maskz_scalef_ps(kAll, (r * r) * q + r + 1.0f, n);
  }
  static Vec rcp_estimate(Vec d) { return _mm512_maskz_rcp14_ps(kAll, d); }
};
}  // namespace

const Isa& avx512_kernels() {
  static const Isa isa{"avx512f", impl::kernels<F16R>(), impl::kernels<D8>()};
  return isa;
}

}  // namespace tg::cpu::vec
