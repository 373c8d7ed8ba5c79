#pragma once
#include <cstdint>

// Whether the kernels with AVX-512 builds may use them: this CPU runs the four subsets they need
// (F, BW, DQ, VL) and TG_SIMD does not cap the choice lower (avx2, sse2 or scalar), so that the
// tests reach the AVX2 builds on an AVX-512 CPU too. Read once per process.
namespace tg {

bool cpu_runs_avx512();

// The smallest fresh result, in bytes, that elementwise kernels write with streaming
// (non-temporal) stores: half the largest cache (the L3 on x86) as Linux reports it, or 8 MiB
// when it reports none. A result that large and an input of its size fill that cache,
// so the result would not stay there for its reader anyway; skipping the read of each
// destination line then saves a third of the traffic (docs/PERFORMANCE.md has the crossover
// measured with the result's reader included). Read once per process.
int64_t streaming_store_min_bytes();

}  // namespace tg
