// The row kernels of vec_binary.h for SSE2 (4 floats): the x86-64 baseline, built with the
// project's default flags.
#if defined(__x86_64__)
#include <immintrin.h>

#include <tapegrad/backends/cpu/simd/vec_binary_impl.h>

namespace tg::cpu::vec {
namespace {
struct Sse2 {
  using Vec = __m128;
  static constexpr int64_t kWidth = 4;
  static Vec load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm_storeu_ps(p, v); }
  static void stream(float* p, Vec v) { _mm_stream_ps(p, v); }
  static Vec set1(float x) { return _mm_set1_ps(x); }
  static Vec add(Vec a, Vec b) { return _mm_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm_div_ps(a, b); }
};
}  // namespace

const BinaryIsa& binary_sse2() {
  static const BinaryIsa isa = binary_impl::kernels<Sse2>("sse2");
  return isa;
}

}  // namespace tg::cpu::vec
#endif
