// The row kernels of vec_binary.h for AVX2 (8 floats); on x86-64 this file alone is built with
// -mavx2, and vec_binary.cpp calls it only on CPUs that have it.
#if defined(__x86_64__)
#include <immintrin.h>

#include <tapegrad/backends/cpu/simd/vec_binary_impl.h>

namespace tg::cpu::vec {
namespace {
struct Avx2 {
  using Vec = __m256;
  static constexpr int64_t kWidth = 8;
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, Vec v) { _mm256_stream_ps(p, v); }
  static Vec set1(float x) { return _mm256_set1_ps(x); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
};
}  // namespace

const BinaryIsa& binary_avx2() {
  static const BinaryIsa isa = binary_impl::kernels<Avx2>("avx2");
  return isa;
}

}  // namespace tg::cpu::vec
#endif
