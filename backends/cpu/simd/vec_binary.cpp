// The run-time choice of instruction set for the row kernels; see vec_binary.h.
#include <tapegrad/backends/cpu/simd/vec_binary.h>

#include <cstdlib>
#include <cstring>

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

const BinaryIsa* binary_best() {
  static const BinaryIsa* const chosen = []() -> const BinaryIsa* {
    const std::vector<const BinaryIsa*> all = binary_available();
    if (all.empty()) return nullptr;
    // The same switch as vec_math.h's SLEEF kernels: scalar turns both off, sse2 caps both.
    const char* cap = std::getenv("TG_SIMD");
    if (cap && std::strcmp(cap, "scalar") == 0) return nullptr;
    if (cap && std::strcmp(cap, "sse2") == 0) return all.front();
    return all.back();
  }();
  return chosen;
}

}  // namespace tg::cpu::vec
