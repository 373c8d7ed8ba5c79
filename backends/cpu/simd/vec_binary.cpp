// The run-time choice of instruction set for the row kernels; see vec_binary.h.
#include <tapegrad/backends/cpu/simd/vec_binary.h>

#include <tapegrad/backends/cpu/simd/isa_choice.h>

namespace tg::cpu::vec {

std::vector<const BinaryIsa*> binary_available() {
#if defined(__x86_64__)
  std::vector<const BinaryIsa*> out{&binary_sse2()};
  if (__builtin_cpu_supports("avx2")) out.push_back(&binary_avx2());
  return out;
#else
  return {};
#endif
}

// The same TG_SIMD switch as vec_math.h's SLEEF kernels: scalar turns both off, sse2 caps both.
const BinaryIsa* binary_best() {
  static const BinaryIsa* const chosen = choose_isa(binary_available());
  return chosen;
}

}  // namespace tg::cpu::vec
