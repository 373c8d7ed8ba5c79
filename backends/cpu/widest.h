#pragma once
// A loop run in an AVX2 build where the CPU has AVX2. The library targets baseline x86-64 (SSE2)
// so that it runs everywhere; a hot loop written once as an always-inlined lambda is compiled a
// second time inside run_avx2 (target attribute), and run_widest picks one per call. Everything
// the lambda calls must be always inlined too, or it stays baseline code. Not target_clones: its
// load-time resolver runs before ThreadSanitizer's runtime starts.
#include <tapegrad/core/cpu_features.h>

namespace tg::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
template <class F> __attribute__((target("avx2"))) auto run_avx2(const F& f) { return f(); }
#endif

template <class F> auto run_widest(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return run_avx2(f);
#endif
  return f();
}

}  // namespace tg::cpu
