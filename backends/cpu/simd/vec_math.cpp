// The run-time choice of instruction set for the SLEEF kernels; see vec_math.h.
#include <tapegrad/backends/cpu/simd/vec_math.h>

#include <tapegrad/backends/cpu/simd/isa_choice.h>

namespace tg::cpu::vec {

#ifdef TG_WITH_SLEEF
namespace {

bool runs_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool runs_avx512() { return __builtin_cpu_supports("avx512f") && runs_avx2(); }

}  // namespace
#endif

std::vector<const Isa*> available() {
#ifdef TG_WITH_SLEEF
  std::vector<const Isa*> out{&sse2_kernels()};
  if (runs_avx2()) out.push_back(&avx2_kernels());
  if (runs_avx512()) out.push_back(&avx512_kernels());
  return out;
#else
  return {};
#endif
}

const Isa* best() {
  static const Isa* const chosen = choose_isa(available());
  return chosen;
}

}  // namespace tg::cpu::vec
