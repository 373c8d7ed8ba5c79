#pragma once
// Whether the kernels with AVX-512 builds may use them: this CPU runs the four subsets they need
// (F, BW, DQ, VL) and TG_SIMD does not cap the choice lower (avx2, sse2 or scalar), so that the
// tests reach the AVX2 builds on an AVX-512 CPU too. Read once per process.
namespace tg {

bool cpu_runs_avx512();

}  // namespace tg
