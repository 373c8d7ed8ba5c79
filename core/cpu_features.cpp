#include <tapegrad/core/cpu_features.h>

#include <cstdlib>
#include <cstring>

namespace tg {

bool cpu_runs_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool yes = [] {
    const char* cap = std::getenv("TG_SIMD");
    if (cap && (std::strcmp(cap, "avx2") == 0 || std::strcmp(cap, "sse2") == 0 ||
                std::strcmp(cap, "scalar") == 0))
      return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }();
  return yes;
#else
  return false;
#endif
}

}  // namespace tg
