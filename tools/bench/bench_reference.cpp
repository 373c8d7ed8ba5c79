// The memory-bandwidth reference: a hand-written STREAM triad a[i] = b[i] + s * c[i] over
// std::vector<float>, split into equal contiguous chunks over num_threads() std::threads.
#include <thread>
#include <vector>

#include "bench_common.h"

namespace tg_bench {
namespace {

void triad_chunk(float* a, const float* b, const float* c, float s, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

void stream_triad(benchmark::State& state) {
  const int64_t n = kLargeN;
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);  // reused every iteration
  const float s = 3.0f;
  const int threads = num_threads();
  for (auto _ : state) {
    if (threads == 1) {
      triad_chunk(a.data(), b.data(), c.data(), s, 0, n);
    } else {
      std::vector<std::thread> pool;
      const int64_t chunk = (n + threads - 1) / threads;
      for (int t = 1; t < threads; ++t)
        pool.emplace_back(triad_chunk, a.data(), b.data(), c.data(), s, t * chunk,
                          std::min(n, (t + 1) * chunk));
      triad_chunk(a.data(), b.data(), c.data(), s, 0, std::min(n, chunk));
      for (auto& th : pool) th.join();
    }
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * int64_t{sizeof(float)} * n);
}

}  // namespace

std::vector<Case> reference_cases() { return {{"stream_triad_1<<24", stream_triad, true}}; }

}  // namespace tg_bench
