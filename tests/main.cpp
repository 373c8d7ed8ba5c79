// doctest's main for the whole suite.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // The entries that rerun cases with the AVX-512 kernels capped (TG_SIMD=avx2) set
  // TG_TEST_SKIP_WITHOUT_AVX512: on a CPU without AVX-512 the default entries ran those very
  // kernels already, so the entry skips (ctest's SKIP_RETURN_CODE) instead of repeating them.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (std::getenv("TG_TEST_SKIP_WITHOUT_AVX512") && !__builtin_cpu_supports("avx512f")) {
    std::puts("skipped: no AVX-512 on this CPU, so TG_SIMD=avx2 changes nothing");
    return 77;
  }
#endif
  doctest::Context context(argc, argv);
  return context.run();
}
