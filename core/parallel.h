#pragma once
// One thread pool for CPU kernels, sharing its thread count with OpenBLAS. Idle workers sleep.
#include <cstdint>
#include <functional>

namespace tg {

// Threads used by CPU kernels and by OpenBLAS (default: the number of cores).
void set_num_threads(int n);
int get_num_threads();

// Runs fn(begin, end) over [begin, end) split into chunks of at least `grain` items, in parallel
// when there is more than one chunk and we are not already inside a parallel region.
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

// Items below which a simple elementwise loop is not worth splitting.
inline constexpr int64_t kElementwiseGrain = 32768;

// Bytes below which a plain copy (memcpy) is not worth splitting: a chunk must outlast waking a
// sleeping worker (a few microseconds) many times over.
inline constexpr int64_t kCopyGrainBytes = int64_t{1} << 18;

}  // namespace tg
