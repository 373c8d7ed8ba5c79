#pragma once
// A loop run in a build for the widest vectors the CPU has. The library targets baseline x86-64
// (SSE2) so that it runs everywhere; a hot loop written once as an always-inlined lambda is
// compiled again inside run_avx2 / run_avx512 (target attributes), and run_widest /
// run_widest_avx512 pick one per call. Everything the lambda calls must be always inlined too,
// or it stays baseline code. Not target_clones: its load-time resolver runs before
// ThreadSanitizer's runtime starts. The builds give the same bits where the loop has no
// reduction whose order the compiler may change (ISO C++ mode contracts no FMA).
#include <tapegrad/core/cpu_features.h>

namespace tg {

#if defined(__x86_64__) && defined(__GNUC__)
template <class F> __attribute__((target("avx2"))) auto run_avx2(const F& f) { return f(); }
template <class F>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) auto run_avx512(const F& f) {
  return f();
}
#endif

// f in the AVX2 build where the CPU runs AVX2, else in the baseline build.
template <class F> auto run_widest(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) return run_avx2(f);
#endif
  return f();
}

// f in the AVX-512 build where cpu_runs_avx512() (TG_SIMD may cap it), else as run_widest: for
// loops with an instruction only AVX-512 has (float to int64 conversion).
template <class F> auto run_widest_avx512(const F& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_runs_avx512()) return run_avx512(f);
#endif
  return run_widest(f);
}

}  // namespace tg
